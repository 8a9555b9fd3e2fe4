/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
/**
 * Range and prefix pages hedge a silent owner as key reads do (gather-page.ts ownerPages): an
 * owner that has not answered a page of its partitions within forwardHedgeMs has their
 * standbys asked the same page too, and the first whole answer stands — the owner's or the
 * standbys', never a mix — so a page does not wait out the forward budget of an owner that was
 * cut off, and no key comes twice.
 */
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TaskStores } from '../../../src/store/types.js';
import { gql, type Fetch } from './gateway-fixture.js';
import { close, dispose, instance, KEYS, listen, partitionOf, STORE, type Instance } from './routing-fixture.js';
import { addStandbys, slow, standbyHost } from './standby-fixture.js';

const PAGE = (args = '', first = 3): string => `{ range(store: "words", first: ${first}${args}) { edges { cursor node { key value } } pageInfo { hasNextPage } partitions { partition failure { reason } standby servedBy } } }`;

/** Partitions 2 and 3 came from a standby, every key's value shows which copy it came from. */
function expectFromStandbys(page: any, servedBy: string | null): void {
  expect(page.errors).toBeUndefined();
  const partitions = page.data.range.partitions.map((p: any) => [p.partition, p.failure, p.standby, p.partition >= 2 && servedBy !== null ? p.servedBy : 'any']);
  expect(partitions).toEqual([[0, null, false, 'any'], [1, null, false, 'any'], [2, null, true, servedBy ?? 'any'], [3, null, true, servedBy ?? 'any']]);
  for (const e of page.data.range.edges) expect(e.node.value).toEqual(partitionOf(e.node.key) >= 2 ? { n: KEYS.indexOf(e.node.key), standby: true } : { n: KEYS.indexOf(e.node.key) });
}

/** Every page of the listing, three keys at a time: the keys in the order served. */
async function listAll(url: string, check: (page: any) => void): Promise<string[]> {
  const seen: string[] = [];
  let after = '';
  for (let round = 0; round <= KEYS.length; round += 1) {
    const page: any = await gql(fetch as Fetch, url, PAGE(after));
    check(page);
    seen.push(...page.data.range.edges.map((e: any) => e.node.key));
    if (!page.data.range.pageInfo.hasNextPage) break;
    after = `, after: "${page.data.range.edges.at(-1).cursor}"`;
  }
  return seen;
}

let silent: { server: Awaited<ReturnType<typeof listen>>['server']; url: string; hits: () => number };
let h: Instance;
let tasks: TaskStores[] = [];

beforeEach(async () => {
  // An owner that takes requests and never answers (packets dropped, a paused process). With a
  // forward timeout of a minute, only the hedge lets a page answer within the test's time.
  let hits = 0;
  const { server, url } = await listen(() => void (hits += 1));
  silent = { server, url, hits: () => hits };
  h = await instance([0, 1], { forwardTimeoutMs: 60_000, forwardHedgeMs: 50 });
  h.provider.setSelfUrl(h.url);
  for (const p of [2, 3]) h.provider.setRemoteOwner(STORE.name, p, silent.url);
  tasks = [];
});

afterEach(async () => {
  await close(silent.server);
  for (const task of tasks) await task.close();
  await dispose(h);
});

describe('pages hedge an owner that stays silent past forwardHedgeMs', () => {
  it('with the standbys kept here: every page answers, every key once and in order, without waiting out the forward timeout', async () => {
    tasks = await addStandbys(h, [2, 3]);
    const seen = await listAll(h.url, (page) => expectFromStandbys(page, null));
    expect(seen).toEqual([...KEYS].sort());
    // The first page asked the owner; the later pages too (it never failed, so PeerHealth does not know it is down).
    expect(silent.hits()).toBeGreaterThanOrEqual(1);
  });

  it('with a standby host elsewhere: the page is asked of it and answered by it', async () => {
    const c = await standbyHost([2, 3]);
    try {
      for (const p of [2, 3]) h.provider.setRemoteStandbys(STORE.name, p, [silent.url, c.url]);
      const seen = await listAll(h.url, (page) => expectFromStandbys(page, c.url));
      expect(seen).toEqual([...KEYS].sort());
      expect(c.hits()).toBeGreaterThanOrEqual(1);
    } finally {
      await c.dispose();
    }
  });

  it('not under requireActive: the owner\'s failure stands once its forward gives up', async () => {
    const quick = await instance([0, 1], { forwardTimeoutMs: 400, forwardHedgeMs: 50 });
    const here = await addStandbys(quick, [2, 3]);
    try {
      for (const p of [2, 3]) quick.provider.setRemoteOwner(STORE.name, p, silent.url);
      const page: any = await gql(fetch as Fetch, quick.url, '{ range(store: "words", first: 100, requireActive: true) { edges { node { key } } partitions { partition failure { reason } standby } } }');
      expect(page.data.range.partitions.map((p: any) => p.failure?.reason ?? null)).toEqual([null, null, 'FORWARD_FAILED', 'FORWARD_FAILED']);
      expect(page.data.range.edges.map((e: any) => e.node.key).sort()).toEqual(KEYS.filter((k) => partitionOf(k) < 2).sort());
    } finally {
      for (const task of here) await task.close();
      await dispose(quick);
    }
  });
});

describe('a hedged page takes one answer whole', () => {
  it('keeps the owner\'s page when it answers after the hedge began but before the standby host', async () => {
    const o = await instance([2, 3]);
    const c = await standbyHost([2, 3]);
    const owner = await slow(o.url, 200);
    const host = await slow(c.url, 800);
    try {
      for (const p of [2, 3]) {
        h.provider.setRemoteOwner(STORE.name, p, owner.url);
        h.provider.setRemoteStandbys(STORE.name, p, [host.url]);
      }
      const page: any = await gql(fetch as Fetch, h.url, PAGE('', 100));
      expect(page.errors).toBeUndefined();
      expect(page.data.range.partitions.map((p: any) => [p.partition, p.failure, p.standby])).toEqual([[0, null, false], [1, null, false], [2, null, false], [3, null, false]]);
      expect(page.data.range.edges.map((e: any) => e.node.key)).toEqual([...KEYS].sort());
      for (const e of page.data.range.edges) expect(e.node.value).toEqual({ n: KEYS.indexOf(e.node.key) });
    } finally {
      await owner.close();
      await host.close();
      await c.dispose();
      await dispose(o);
    }
  });

  it('waits for the owner when one of its partitions has no standby to ask: the owner\'s page stands for all of them', async () => {
    const o = await instance([2, 3]);
    const owner = await slow(o.url, 300);
    try {
      tasks = await addStandbys(h, [2]); // a standby of 2 only
      for (const p of [2, 3]) h.provider.setRemoteOwner(STORE.name, p, owner.url);
      const page: any = await gql(fetch as Fetch, h.url, PAGE('', 100));
      expect(page.errors).toBeUndefined();
      expect(page.data.range.partitions.map((p: any) => [p.partition, p.failure, p.standby])).toEqual([[0, null, false], [1, null, false], [2, null, false], [3, null, false]]);
      for (const e of page.data.range.edges) expect(e.node.value).toEqual({ n: KEYS.indexOf(e.node.key) });
      expect(page.data.range.edges.map((e: any) => e.node.key)).toEqual([...KEYS].sort());
    } finally {
      await owner.close();
      await dispose(o);
    }
  });
});

describe('a hedge that cannot be planned', () => {
  it('serves the page from the owner and lets its pin go when the provider throws while the standbys are chosen (an instance stopping under the page)', async () => {
    const metrics = new Registry();
    const p = await instance([0, 1], { forwardHedgeMs: 50, metrics });
    const o = await instance([2, 3]);
    // From the owner's receiving the page (routed by then; the hedge due 50 ms later) until
    // 150 ms on (it answers at 200 ms), looking a partition up here throws.
    let throwing = false;
    const owner = await slow(o.url, 200, () => {
      throwing = true;
      setTimeout(() => (throwing = false), 150);
    });
    const here = await addStandbys(p, [2, 3]);
    try {
      for (const q of [2, 3]) p.provider.setRemoteOwner(STORE.name, q, owner.url);
      const lookUp = p.provider.localPartition.bind(p.provider);
      p.provider.localPartition = (name, partition) => {
        if (throwing) throw new Error('stopping');
        return lookUp(name, partition);
      };
      const page: any = await gql(fetch as Fetch, p.url, PAGE('', 100));
      expect(page.errors).toBeUndefined();
      expect(page.data.range.partitions.map((x: any) => [x.partition, x.failure, x.standby])).toEqual([[0, null, false], [1, null, false], [2, null, false], [3, null, false]]);
      expect(page.data.range.edges.map((e: any) => e.node.key)).toEqual([...KEYS].sort());
      const pinned = Number(/^iqgate_pinned_snapshots (\d+)$/m.exec(await metrics.metrics())![1]);
      expect(pinned, 'a listing that ended on its first page holds no snapshot').toBe(0);
    } finally {
      for (const task of here) await task.close();
      await owner.close();
      await dispose(o);
      await dispose(p);
    }
  });
});
