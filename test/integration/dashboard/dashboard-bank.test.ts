/**
 * The /dashboard page in Chromium against the bank demo on the real broker, while the generator
 * marks a third of the transfers to abort half-way: the explorer shows, at least once, a branch
 * short of money in the uncommitted column (an aborted transfer's debit) that the committed column
 * never shows, and every branch total the committed column ever displays equals the opening
 * total. The recorder in the page (dashboard-browser.ts) keeps every value each column displayed,
 * so the check covers the whole run, not a few samples.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBank, startBankFeed, type BankFeed, type BankShape, type BranchState } from '../../../examples/bank/index.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import { serve, type Serving } from '../../../src/serve.js';
import { kafkaBrokers, testKafka, uniqueName } from '../../support/kafka.js';
import { createTopics } from '../processing/wordcount-harness.js';
import { explorerState, launchChromium, openDashboard, seen } from './dashboard-browser.js';

const SHAPE: BankShape = { branches: 6, accountsPerBranch: 4, openingBalance: 500, abortFraction: 0.3 };
const OPENING = SHAPE.accountsPerBranch * SHAPE.openingBalance;

const stateDir = mkdtempSync(join(tmpdir(), 'iqgate-dashboard-bank-'));
const cleanups: Array<() => Promise<unknown>> = [];
let runtime: Runtime;
let serving: Serving;
let feed: BankFeed;
let browser: Browser;
let page: Page;
let pageErrors: string[];
let applicationId: string;
let topic: string;

beforeAll(async () => {
  topic = uniqueName('dash-transfers');
  applicationId = uniqueName('dash-bank');
  const admin = testKafka().admin();
  await admin.connect();
  await createTopics(admin, [topic], 4);
  await admin.disconnect();
  runtime = await runBank({ brokers: kafkaBrokers(), applicationId, transfersTopic: topic, stateDir, logLevel: 'silent' });
  cleanups.push(() => runtime.stop());
  serving = await serve(runtime, { port: 0, logging: false });
  cleanups.push(() => serving.close());
  feed = await startBankFeed({ brokers: kafkaBrokers(), topic, shape: SHAPE, transfersPerSecond: 20, seed: 5 });
  cleanups.push(() => feed.stop());
  browser = await launchChromium();
  cleanups.push(() => browser.close());
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  rmSync(stateDir, { recursive: true, force: true });
});

const total = (branch: BranchState): number => Object.values(branch.accounts).reduce((a, b) => a + b, 0);

/** Every value the committed column displayed so far: each must sum to the opening total. */
async function expectOnlyOpeningTotalsCommitted(): Promise<Set<string>> {
  const s = await seen(page);
  const committed = Object.entries(s.committed).flatMap(([key, values]) => values.map((json) => ({ key, json, branch: JSON.parse(json) as BranchState })));
  expect(committed.length).toBeGreaterThan(SHAPE.branches);
  for (const { key, branch } of committed) {
    expect(branch.opening, key).toBe(OPENING);
    expect(total(branch), `committed ${key} displayed ${JSON.stringify(branch)}`).toBe(OPENING);
  }
  return new Set(committed.map(({ key, json }) => `${key} ${json}`));
}

describe('the dashboard page on the bank demo with aborts injected', () => {
  it('shows aborted debits in the uncommitted column only, and only opening totals in the committed one', async () => {
    ({ page, errors: pageErrors } = await openDashboard(browser, serving.url.replace(/\/graphql$/, '/dashboard#store=balances&mode=range')));
    await explorerState(page, 'live', 60_000);

    // Watch until the uncommitted column has shown a branch short of money and the committed column has moved.
    await page.waitForFunction((opening) => {
      const s = (window as unknown as { __seen: { committed: Record<string, string[]>; uncommitted: Record<string, string[]> } }).__seen;
      const short = Object.values(s.uncommitted).flat().some((json) => {
        const branch = JSON.parse(json) as { accounts: Record<string, number> };
        return Object.values(branch.accounts).reduce((a, b) => a + b, 0) !== opening;
      });
      return short && Object.values(s.committed).some((values) => values.length >= 3);
    }, OPENING, { timeout: 90_000, polling: 250 });

    const committedShown = await expectOnlyOpeningTotalsCommitted();
    const s = await seen(page);
    const shortfalls = Object.entries(s.uncommitted).flatMap(([key, values]) => values
      .filter((json) => total(JSON.parse(json) as BranchState) !== OPENING)
      .map((json) => `${key} ${json}`));
    expect(shortfalls.length).toBeGreaterThan(0);
    for (const shortfall of shortfalls) expect(committedShown.has(shortfall)).toBe(false);
    expect(feed.markedToAbort()).toBeGreaterThan(0);
    expect(pageErrors).toEqual([]);
  });

  it('follows a rebalance: its subscriptions end with PARTITION_REVOKED, it says so and goes live on the partitions it keeps', async () => {
    const secondDir = mkdtempSync(join(tmpdir(), 'iqgate-dashboard-bank-2-'));
    cleanups.push(async () => rmSync(secondDir, { recursive: true, force: true }));
    const second = await runBank({ brokers: kafkaBrokers(), applicationId, transfersTopic: topic, stateDir: secondDir, logLevel: 'silent' });
    cleanups.push(() => second.stop());

    await page.waitForFunction(() => (window as unknown as { __seen: { statuses: string[] } }).__seen.statuses.some((s) => s.includes('PARTITION_REVOKED')), undefined, { timeout: 90_000, polling: 100 });
    await page.waitForFunction(() => document.querySelectorAll('#partitions tr[data-store="balances"]').length < 4, undefined, { timeout: 60_000 });
    await explorerState(page, 'live', 60_000);
    // The partitions it keeps: every row shown is of a partition hosted here, its committed total the opening one.
    const hosted = new Set(runtime.localStores().filter((l) => l.storeName === 'balances').map((l) => l.partition));
    expect(hosted.size).toBeLessThan(4);
    const rows = await page.locator('#explorer tbody tr td[data-column="committed"] .position').allTextContents();
    for (const text of rows) {
      const partition = Number(/\[(\d+)\]@/.exec(text)?.[1]);
      expect(hosted.has(partition), text).toBe(true);
    }
    await expectOnlyOpeningTotalsCommitted();
    expect(pageErrors).toEqual([]);
  });
});
