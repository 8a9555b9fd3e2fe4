/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
/**
 * The bank demo (`startBankDemo`) against the real broker, with a third of its transfers marked
 * to abort half-way, watched through an uncommitted `changes` subscription over SSE: the
 * subscription must follow the uncommitted view — see a branch go short when a doomed debit is
 * written (long before any commit point), then see it back at its opening total when the abort
 * rolls the transaction back — and, once the feed stops, the state it built from its events
 * must equal an uncommitted read of every branch.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { branchTotal, startBankDemo, type BankShape, type BranchState } from '../../../examples/bank/index.js';
import { serve, type Serving } from '../../../src/serve.js';
import { postGraphQL } from '../../support/graphql.js';
import { kafkaBrokers, uniqueName, waitFor } from '../../support/kafka.js';
import { subscribe, type Fetch, type SseSubscription } from '../../unit/graphql/gateway-fixture.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

const CHANGES = `subscription {
  changes(store: "balances", readCommitted: false, initial: true) { key value deleted initial position }
}`;

const UNCOMMITTED = `{ range(store: "balances", first: 100, readCommitted: false) { edges { node { key value } } } }`;

async function uncommittedRead(url: string): Promise<Map<string, BranchState>> {
  const data = await postGraphQL<{ range: { edges: Array<{ node: { key: string; value: BranchState } }> } }>(url, UNCOMMITTED);
  return new Map(data.range.edges.map(({ node }) => [node.key, node.value]));
}

/** The next event, or undefined when none arrives within `ms` (the pending read is kept for the next call). */
function reader(sub: SseSubscription<any>) {
  let pending: Promise<any> | undefined;
  return async (ms: number): Promise<any> => {
    pending ??= sub.next();
    let timer: NodeJS.Timeout | undefined;
    const quiet = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), ms);
    });
    try {
      const result = await Promise.race([pending, quiet]);
      if (result !== undefined) pending = undefined;
      return result?.changes;
    } finally {
      clearTimeout(timer);
    }
  };
}

describe('an uncommitted subscription on the bank demo against the real broker', () => {
  it('sees a doomed debit make its branch short, sees the shortfall vanish at the rollback, and ends equal to an uncommitted read', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'iqgate-bank-sub-'));
    cleanups.push(async () => rmSync(stateDir, { recursive: true, force: true }));
    const shape: BankShape = { branches: 4, accountsPerBranch: 4, openingBalance: 500, abortFraction: 0.3 };
    const demo = await startBankDemo({
      brokers: kafkaBrokers(), applicationId: uniqueName('bank-sub'), transfersTopic: uniqueName('bank-sub-transfers'), stateDir,
      kafkaClient: 'librdkafka', logLevel: 'error', feed: { shape, transfersPerSecond: 30, seed: 23 },
    });
    cleanups.push(() => demo.stop());
    const server: Serving = await serve(demo.runtime, { port: 0, logging: false });
    cleanups.push(() => server.close());
    const opening = shape.accountsPerBranch * shape.openingBalance;
    // The subscription needs the partitions hosted here.
    await waitFor(() => demo.runtime.localStores().filter((s) => s.storeName === 'balances').length === 4, 60_000, 100, 'the four balances partitions');

    const sub = await subscribe<any>(fetch as Fetch, server.url, CHANGES);
    cleanups.push(async () => sub.close());
    const next = reader(sub);
    const shown = new Map<string, BranchState>();
    const shortSeen = new Set<string>();
    const vanished = new Set<string>();
    /** Short states the stream showed while an uncommitted read still returned exactly them. */
    let shownWhileOpen = 0;
    const apply = (change: any): boolean => {
      if (change.deleted === true) shown.delete(change.key);
      else shown.set(change.key, change.value as BranchState);
      if (change.initial === true || change.deleted === true) return false;
      const total = branchTotal(change.value as BranchState);
      // Never more money than the branch opened with, in any state the stream shows.
      expect(total, `${change.key}: ${JSON.stringify(change.value)}`).toBeLessThanOrEqual(opening);
      if (total < opening) {
        shortSeen.add(change.key);
        return true;
      }
      if (shortSeen.has(change.key)) vanished.add(change.key);
      return false;
    };

    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline && !(vanished.size >= 2 && shownWhileOpen >= 1 && demo.feed!.produced() >= 150)) {
      const change = await next(1_000);
      if (change === undefined || !apply(change)) continue;
      // The doomed transaction is still open (its commit point, where the abort happens, is up to
      // a second away): an uncommitted read returns the very state the stream just showed. A feed
      // that only heard writes at the commit point would show them after the rollback, never during.
      if (shownWhileOpen === 0 && isDeepStrictEqual((await uncommittedRead(server.url)).get(change.key), change.value)) shownWhileOpen += 1;
    }
    expect(shownWhileOpen, 'the subscription never showed a doomed debit while its transaction was open').toBeGreaterThan(0);
    expect(shortSeen.size, 'the uncommitted subscription never showed a doomed debit').toBeGreaterThan(0);
    expect(vanished.size, `shortfalls seen in ${[...shortSeen].join(', ')} never vanished`).toBeGreaterThanOrEqual(2);

    await demo.feed!.stop();
    // Quiet now: drain what is left, until every branch is whole in an uncommitted read and the state
    // built from the events equals it.
    let read = new Map<string, BranchState>();
    await waitFor(async () => {
      for (let change = await next(300); change !== undefined; change = await next(300)) apply(change);
      read = await uncommittedRead(server.url);
      // Settled: the last doomed debit rolled back too (the commit point follows the feed's last record).
      const settled = read.size === shape.branches && [...read.values()].every((branch) => branchTotal(branch) === opening);
      return settled && isDeepStrictEqual(shown, read);
    }, 60_000, 0, 'the subscription state to equal an uncommitted read').catch((error: unknown) => {
      throw new Error(`${String(error)}\nread  ${JSON.stringify([...read])}\nshown ${JSON.stringify([...shown])}`);
    });
  }, 180_000);
});
