/**
 * `npm start` runs the bank demo by default (src/main.ts in a child process, against the test
 * broker): it prints the GraphiQL and dashboard URLs, GraphiQL opens on the bank's own store,
 * every committed branch sums to its opening total; a wrong IQGATE_DEMO stops start-up with
 * INVALID_CONFIG before anything starts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BranchState } from '../../../examples/bank/index.js';
import { postGraphQL } from '../../support/graphql.js';
import { kafkaBrokers, uniqueName, waitFor } from '../../support/kafka.js';
import { startMain, type MainProcess } from '../main/main-process.js';

const stateDir = mkdtempSync(join(tmpdir(), 'iqgate-main-bank-'));
const mains: MainProcess[] = [];
afterAll(() => {
  for (const main of mains) main.kill();
  rmSync(stateDir, { recursive: true, force: true });
});

type Page = { edges: Array<{ node: { key: string; value: BranchState } }> };

describe('npm start with the bank demo', () => {
  it('refuses an unknown IQGATE_DEMO with INVALID_CONFIG', async () => {
    const main = startMain({ KAFKA_BROKERS: kafkaBrokers().join(','), IQGATE_DEMO: 'bnak' });
    mains.push(main);
    expect(await main.graphqlUrl(30_000)).toBeUndefined();
    await waitFor(() => main.child.exitCode !== null, 30_000);
    expect(main.child.exitCode).toBe(1);
    expect(main.output()).toMatch(/INVALID_CONFIG: .*IQGATE_DEMO/);
  });

  it('is the default: serves the branches, opens GraphiQL on them and prints the dashboard', async () => {
    const app = uniqueName('main-bank');
    const main = startMain({
      KAFKA_BROKERS: kafkaBrokers().join(','),
      IQGATE_APP_ID: app,
      IQGATE_INPUT_TOPIC: `${app}-transfers`,
      IQGATE_STATE_DIR: stateDir,
      IQGATE_BANK_TRANSFERS_PER_SECOND: '20',
      IQGATE_BANK_ABORT_FRACTION: '0.3',
      IQGATE_LOG_LEVEL: 'warn',
    });
    mains.push(main);
    const url = await main.graphqlUrl();
    expect(url, main.output()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/graphql$/);
    const origin = new URL(url!).origin;
    await waitFor(() => main.output().includes('Dashboard:'), 5_000);
    expect(main.output()).toContain(`Dashboard: ${origin}/dashboard`);

    const stores = await postGraphQL<{ stores: Array<{ name: string; partitions: number }> }>(url!, '{ stores { name partitions } }');
    expect(stores.stores).toEqual([expect.objectContaining({ name: 'balances', partitions: 4 })]);

    // The four default branches of 5 accounts of 1000, committed, each at its opening total.
    let committed: Page = { edges: [] };
    await waitFor(async () => {
      committed = (await postGraphQL<{ range: Page }>(url!, '{ range(store: "balances", first: 10) { edges { node { key value } } } }')).range;
      return committed.edges.length === 4 && committed.edges.some(({ node }) => node.value.applied > 0);
    }, 60_000, 200, 'four branches with committed transfers');
    for (const { node } of committed.edges) {
      expect(node.value.opening).toBe(5000);
      expect(Object.values(node.value.accounts).reduce((a, b) => a + b, 0)).toBe(5000);
    }

    const page = await (await fetch(url!, { headers: { accept: 'text/html' } })).text();
    expect(page).toContain('committedRange: range(store: \\"balances\\"');
    expect(page).toContain('uncommitted: get(store: \\"balances\\", key: \\"branch-0');

    expect(await main.stop(), main.output()).toBe(0);
  });
});
