/**
 * The /dashboard page in Chromium showing standby replicas and who answered, on a gateway over
 * an embedder's StaticStateProvider (no broker needed: the placement and the lags are set by the
 * test, so what the page must show is known exactly). This instance runs partitions 0 and 1 of
 * `words`, keeps a standby of partition 2 (5 changelog offsets and 300 ms behind) whose owner is
 * down, and partition 3 lives on an owner that is down too, with no standby anywhere.
 *
 * The page must list partition 2 as a standby with its lag (and follow the lag when it changes),
 * count it among the standby tasks, badge the explorer's rows of that partition, and say per
 * partition who answered the explorer's reads: the active task here for 0 and 1, the standby
 * here with its lag for 2, FORWARD_FAILED naming the owner for 3.
 */
import { createServer, type AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../../src/graphql/create-gateway.js';
import { listenGateway, type ListeningGateway } from '../../../src/graphql/listen-gateway.js';
import { partitionForKey } from '../../../src/murmur2.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';
import { createInMemoryStoreEngine } from '../../../src/store/in-memory-engine.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Serde, StoreEngine, TaskStores } from '../../../src/store/types.js';
import { connectionState, explorerState, launchChromium, openDashboard } from './dashboard-browser.js';

const PARTITIONS = 4;
const STORE = { name: 'words', keySerde: serdes.string as Serde<unknown>, valueSerde: serdes.json, partitions: PARTITIONS };
const KEYS = Array.from({ length: 24 }, (_, i) => `key-${String(i).padStart(2, '0')}`);
const partitionOf = (key: string): number => partitionForKey(serdes.string.serialize(key), PARTITIONS);
const LAG = { offsets: 5, timeMs: 300 };

let engine: StoreEngine;
let provider: StaticStateProvider;
let gateway: Gateway;
let listening: ListeningGateway;
let ownerUrl: string;
let browser: Browser;
const tasks: TaskStores[] = [];

beforeAll(async () => {
  engine = createInMemoryStoreEngine();
  provider = new StaticStateProvider({ stores: [STORE] });
  for (const partition of [0, 1, 2]) {
    const task = await engine.openTask(`0_${partition}`, [{ name: STORE.name, partition }]);
    let offset = 0;
    for (const key of KEYS.filter((k) => partitionOf(k) === partition)) {
      task.store(STORE.name).put(serdes.string.serialize(key), serdes.json.serialize({ key, copy: partition === 2 ? 'standby' : 'active' }), { topic: 'input', partition, offset: offset++ });
    }
    task.flush();
    await task.commit({});
    provider.addTask(task, partition === 2 ? { active: false, lag: LAG } : {});
    tasks.push(task);
  }
  gateway = createGateway({ provider, logging: false });
  listening = await listenGateway(gateway, { port: 0, host: '127.0.0.1' });
  provider.setSelfUrl(listening.url);
  // The owner of partitions 2 and 3: an address nothing listens on any more (refused at once).
  const gone = createServer();
  await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
  ownerUrl = `http://127.0.0.1:${(gone.address() as AddressInfo).port}/graphql`;
  await new Promise<void>((resolve) => gone.close(() => resolve()));
  for (const partition of [2, 3]) provider.setRemoteOwner(STORE.name, partition, ownerUrl);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await listening?.close();
  await gateway?.dispose();
  for (const task of tasks) await task.close();
  await engine?.close();
});

const dashboardUrl = (hash: string): string => listening.url.replace(/\/graphql$/, `/dashboard${hash}`);
const host = (url: string): string => url.replace(/\/graphql$/, '');

/** The text of who answered `partition` in the explorer's last read, once it is of `kind`. */
async function answer(page: Page, partition: number, kind: 'active' | 'standby' | 'failed'): Promise<string> {
  const locator = page.locator(`#answered-by .answer[data-partition="${partition}"][data-kind="${kind}"]`);
  await locator.waitFor({ timeout: 30_000 });
  return (await locator.textContent()) ?? '';
}

describe('the dashboard with a standby replica', () => {
  it('lists the standby partition as such with its lag, and follows the lag', async () => {
    const { page, errors } = await openDashboard(browser, dashboardUrl('#store=words&mode=range&limit=50'));
    await connectionState(page, 'connected');
    const row = (p: number) => page.locator(`#partitions tr[data-store="words"][data-partition="${p}"]`);
    await row(2).waitFor({ timeout: 30_000 });
    expect(await page.locator('#partitions tr[data-store="words"]').count()).toBe(3);
    for (const p of [0, 1]) {
      expect(await row(p).getAttribute('data-replica')).toBe('active');
      expect(await row(p).locator('td[data-column="replica"]').textContent()).toBe('active');
      expect(await row(p).locator('td[data-column="standby-lag"]').textContent()).toBe('');
    }
    expect(await row(2).getAttribute('data-replica')).toBe('standby');
    expect(await row(2).locator('td[data-column="replica"] .badge').textContent()).toBe('standby');
    expect(await row(2).locator('td[data-column="standby-lag"]').textContent()).toBe('5 offsets · 300 ms');
    expect(await page.locator('dd[data-fact="standby tasks"]').textContent()).toBe('1 (most behind: 5 offsets · 300 ms)');

    // The standby catches up: the next poll shows it.
    provider.setLag('0_2', { offsets: 0, timeMs: 1_500 });
    await page.waitForFunction(
      () => document.querySelector('#partitions tr[data-partition="2"] td[data-column="standby-lag"]')?.textContent === '0 offsets · 1.5 s',
      undefined, { timeout: 30_000 },
    );
    // Just opened, no poll has read its changelogs' ends: its lag is not known (null in GraphQL).
    provider.setLag('0_2', { offsets: Number.POSITIVE_INFINITY, timeMs: 0 });
    await page.waitForFunction(
      () => document.querySelector('#partitions tr[data-partition="2"] td[data-column="standby-lag"]')?.textContent === 'not known yet',
      undefined, { timeout: 30_000 },
    );
    expect(await page.locator('dd[data-fact="standby tasks"]').textContent()).toBe('1 (most behind: not known yet)');
    provider.setLag('0_2', LAG);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('badges the rows the standby holds and says who answered each partition of a read', async () => {
    const { page, errors } = await openDashboard(browser, dashboardUrl('#store=words&mode=range&limit=50'));
    await explorerState(page, 'live', 30_000);
    // The subscriptions follow the partitions hosted here, the standby's included: its rows are badged.
    const standbyKeys = KEYS.filter((k) => partitionOf(k) === 2);
    expect(standbyKeys.length).toBeGreaterThan(0);
    await page.locator(`#explorer tr[data-key='${JSON.stringify(standbyKeys[0])}'][data-replica="standby"] .badge`).waitFor({ timeout: 30_000 });
    const badged = await page.locator('#explorer tr[data-replica="standby"]').evaluateAll((rows) => rows.map((r) => JSON.parse((r as HTMLElement).dataset.key!) as string));
    expect(badged.sort()).toEqual(standbyKeys);

    // The range read: the active tasks here, the standby here with its lag (once the failed owner is
    // skipped: the read that finds it down fails the partition), and the owner of 3 failing.
    const here = `${host(listening.url)} (here)`;
    for (const p of [0, 1]) expect(await answer(page, p, 'active')).toBe(`${p}: active ${here}`);
    expect(await answer(page, 2, 'standby')).toBe(`2: standby ${here} · 5 offsets · 300 ms behind`);
    expect(await answer(page, 3, 'failed')).toBe(`3: FORWARD_FAILED · owner ${host(ownerUrl)}`);

    // Keys: only the keys' partitions answer; a key lookup whose owner fails falls back to the standby at once.
    const keys = [KEYS.find((k) => partitionOf(k) === 0)!, standbyKeys[0]!];
    await page.evaluate((list) => { location.hash = `#store=words&mode=keys&keys=${list.join(',')}`; }, keys);
    await explorerState(page, 'live', 30_000);
    expect(await answer(page, 2, 'standby')).toBe(`2: standby ${here} · 5 offsets · 300 ms behind`);
    expect(await answer(page, 0, 'active')).toBe(`0: active ${here}`);
    expect(await page.locator('#answered-by .answer').count()).toBe(2);
    await page.waitForFunction(
      (key) => document.querySelector(`#explorer tr[data-key='${JSON.stringify(key)}'] td[data-column="uncommitted"]`)?.getAttribute('data-json') === JSON.stringify({ key, copy: 'standby' }),
      standbyKeys[0], { timeout: 30_000 },
    );
    expect(errors).toEqual([]);
    await page.close();
  });
});
