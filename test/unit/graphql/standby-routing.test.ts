/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
/**
 * Reads from standby replicas (KIP-535) through the gateway: instance `a` runs partitions 0 and 1
 * and keeps standbys of 2 and 3 whose values differ from the active owner's (`{ n, standby: true }`),
 * so every answer shows which copy it came from. The owner answers while it can; when it cannot,
 * the standby kept here (or one elsewhere) answers, saying so, with its lag; `maxLag` lets a
 * standby within it answer first; an owner that failed just now is not asked again for a while;
 * an owner, or a standby host, silent past forwardHedgeMs has the next copy asked as well.
 */
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TaskStores } from '../../../src/store/types.js';
import { gql, type Fetch } from './gateway-fixture.js';
import { close, dispose, downUrl, instance, KEYS, listen, partitionOf, STORE, type Instance } from './routing-fixture.js';
import { addStandbys, failing, LAG, slow, standbyHost } from './standby-fixture.js';

const GET_MANY = `query ($keys: [Key!]!, $maxLag: Int, $requireActive: Boolean) {
  getMany(store: "words", keys: $keys, maxLag: $maxLag, requireActive: $requireActive) {
    entries { key value found partition failure { reason owner standbys } }
    partitions { partition failure { reason } standby lag { offsets timeMs } servedBy }
  }
}`;

const remoteKeys = KEYS.filter((key) => partitionOf(key) >= 2);

/**
 * Instance `h` (partitions 0 and 1, forwardHedgeMs `hedgeMs`) whose owner of 2 and 3 is down, and
 * two standby hosts: c1 (standbys of 2 and 3) behind `first`, which relays after `slowMs`, and c2
 * (standbys of `c2Partitions`). The test names each partition's standby hosts.
 */
async function slowFirstStandbyHost(hedgeMs: number, slowMs: number, c2Partitions: readonly number[]) {
  const h = await instance([0, 1], { forwardHedgeMs: hedgeMs });
  const c1 = await standbyHost([2, 3]);
  const c2 = await standbyHost(c2Partitions);
  const first = await slow(c1.url, slowMs);
  const down = await downUrl();
  for (const p of [2, 3]) h.provider.setRemoteOwner(STORE.name, p, down);
  const disposeAll = async (): Promise<void> => {
    await first.close();
    await c1.dispose();
    await c2.dispose();
    await dispose(h);
  };
  return { h, c1, c2, first, disposeAll };
}

let a: Instance;
let b: Instance;
let standbyTasks: TaskStores[];

beforeEach(async () => {
  a = await instance([0, 1]);
  b = await instance([2, 3]);
  standbyTasks = await addStandbys(a, [2, 3]);
  a.provider.setSelfUrl(a.url);
  for (const p of [2, 3]) a.provider.setRemoteOwner(STORE.name, p, b.url);
});

afterEach(async () => {
  for (const task of standbyTasks) await task.close();
  await dispose(a);
  await dispose(b);
});

/** Every remote key answered (no errors) by a standby, partitions 2 and 3 both from `servedBy`, with the standbys' lag. */
function expectStandbyAnswers(result: any, servedBy: string): void {
  expect(result.errors).toBeUndefined();
  remoteKeys.forEach((key) => expect(valuesOf(result).get(key)).toEqual({ n: KEYS.indexOf(key), standby: true }));
  expect(result.data.getMany.partitions).toEqual([2, 3].map((partition) => ({ partition, failure: null, standby: true, lag: LAG, servedBy })));
}

function valuesOf(result: any): Map<string, any> {
  return new Map(result.data.getMany.entries.map((e: any) => [e.key, e.value]));
}

describe('standby replicas answer when the active owner cannot', () => {
  it('asks the active owner while it answers, though a standby is kept here', async () => {
    const result: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: remoteKeys });
    expect(result.errors).toBeUndefined();
    remoteKeys.forEach((key) => expect(valuesOf(result).get(key)).toEqual({ n: KEYS.indexOf(key) }));
    for (const p of result.data.getMany.partitions) expect(p).toMatchObject({ standby: false, lag: null, servedBy: b.url, failure: null });
    expect(b.requests).toEqual(['1']);
  });

  it('answers from the standby kept here, with its lag, when the owner is down; then does not ask the owner again for a while', async () => {
    const owner = await failing();
    try {
      for (const p of [2, 3]) a.provider.setRemoteOwner(STORE.name, p, owner.url);
      for (let round = 0; round < 2; round++) {
        const result: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: remoteKeys });
        expectStandbyAnswers(result, a.url);
      }
      // The first request found the owner failing; the second went straight to the standby.
      expect(owner.hits()).toBe(1);
    } finally {
      await owner.close();
    }
  });

  it('answers from the standby kept here when the owner it knows of no longer hosts the partition (a map a rebalance behind)', async () => {
    // c hosts nothing: asked as the owner, it answers NOT_PRESENT.
    const c = await instance([]);
    try {
      for (const p of [2, 3]) a.provider.setRemoteOwner(STORE.name, p, c.url);
      const result: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: remoteKeys });
      expectStandbyAnswers(result, a.url);
      expect(c.requests).toEqual(['1']);
    } finally {
      await dispose(c);
    }
  });

  it('asks the standby as well when the owner stays silent past forwardHedgeMs, and answers from it without waiting out the forward timeout', async () => {
    // The owner takes requests and never answers (packets dropped, a paused process). With a
    // forward timeout of a minute, only the hedge lets this read answer within the test's time.
    let hits = 0;
    const silent = await listen(() => void (hits += 1));
    const h = await instance([0, 1], { forwardTimeoutMs: 60_000, forwardHedgeMs: 50 });
    const hTasks = await addStandbys(h, [2, 3]);
    try {
      h.provider.setSelfUrl(h.url);
      for (const p of [2, 3]) h.provider.setRemoteOwner(STORE.name, p, silent.url);
      const keys = [...remoteKeys, KEYS.find((key) => partitionOf(key) === 0)!];
      const result: any = await gql(fetch as Fetch, h.url, GET_MANY, { keys });
      expect(result.errors).toBeUndefined();
      remoteKeys.forEach((key) => expect(valuesOf(result).get(key)).toEqual({ n: KEYS.indexOf(key), standby: true }));
      expect(valuesOf(result).get(keys.at(-1)!)).toEqual({ n: KEYS.indexOf(keys.at(-1)!) });
      expect(result.data.getMany.partitions).toEqual([
        { partition: 0, failure: null, standby: false, lag: null, servedBy: h.url },
        ...[2, 3].map((partition) => ({ partition, failure: null, standby: true, lag: LAG, servedBy: h.url })),
      ]);
      expect(hits).toBe(1);
    } finally {
      await close(silent.server);
      for (const task of hTasks) await task.close();
      await dispose(h);
    }
  });

  it('keeps the owner\'s answers when it answers after the hedge began but before the standbys, taking theirs only for keys it could not answer', async () => {
    // The owner (200 ms away) hosts partition 2 but no longer 3; the standby host (600 ms away) keeps both.
    const h = await instance([0, 1], { forwardHedgeMs: 50 });
    const o = await instance([2]);
    const c = await standbyHost([2, 3]);
    const owner = await slow(o.url, 200);
    const host = await slow(c.url, 600);
    try {
      for (const p of [2, 3]) {
        h.provider.setRemoteOwner(STORE.name, p, owner.url);
        h.provider.setRemoteStandbys(STORE.name, p, [host.url]);
      }
      const result: any = await gql(fetch as Fetch, h.url, GET_MANY, { keys: remoteKeys });
      expect(result.errors).toBeUndefined();
      for (const key of remoteKeys) {
        expect(valuesOf(result).get(key)).toEqual(partitionOf(key) === 2 ? { n: KEYS.indexOf(key) } : { n: KEYS.indexOf(key), standby: true });
      }
    } finally {
      await owner.close();
      await host.close();
      await c.dispose();
      await dispose(o);
      await dispose(h);
    }
  });

  it('asks the next standby host as well when a standby host stays silent past forwardHedgeMs, and answers from it without waiting out the forward timeout', async () => {
    // The owner refuses, so the standby hosts are asked: the first takes the request and never
    // answers. Its forward would fail only after 10 s; the hedge lets the second answer long before.
    const hedgeMs = 100;
    let hits = 0;
    const silent = await listen(() => void (hits += 1));
    const h = await instance([0, 1], { forwardTimeoutMs: 10_000, forwardHedgeMs: hedgeMs });
    const c = await standbyHost([2, 3]);
    const down = await downUrl();
    try {
      for (const p of [2, 3]) {
        h.provider.setRemoteOwner(STORE.name, p, down);
        h.provider.setRemoteStandbys(STORE.name, p, [silent.url, c.url]);
      }
      const started = Date.now();
      const result: any = await gql(fetch as Fetch, h.url, GET_MANY, { keys: remoteKeys });
      const took = Date.now() - started;
      expectStandbyAnswers(result, c.url);
      // The silent host was asked first, the second only once the hedge began (a timer may fire a few ms early by the wall clock).
      expect(hits).toBe(1);
      expect(took).toBeGreaterThanOrEqual(hedgeMs - 10);
      expect(took).toBeLessThan(5_000);
    } finally {
      await close(silent.server);
      await c.dispose();
      await dispose(h);
    }
  });

  it('keeps the next standby host\'s answers when the slow host answers the same keys later, and takes the slow host\'s for keys no other host keeps', async () => {
    // Partition 2 has a second standby host, partition 3 only the slow one: the read waits for the
    // slow host (400 ms away) for 3, and its answer carries 2 as well, after the second host's.
    const { h, c1, c2, first, disposeAll } = await slowFirstStandbyHost(50, 400, [2]);
    try {
      h.provider.setRemoteStandbys(STORE.name, 2, [first.url, c2.url]);
      h.provider.setRemoteStandbys(STORE.name, 3, [first.url]);
      const result: any = await gql(fetch as Fetch, h.url, GET_MANY, { keys: remoteKeys });
      expect(result.errors).toBeUndefined();
      remoteKeys.forEach((key) => expect(valuesOf(result).get(key)).toEqual({ n: KEYS.indexOf(key), standby: true }));
      expect(result.data.getMany.partitions).toEqual([
        { partition: 2, failure: null, standby: true, lag: LAG, servedBy: c2.url },
        { partition: 3, failure: null, standby: true, lag: LAG, servedBy: first.url },
      ]);
      expect(c1.hits()).toBe(1);
    } finally {
      await disposeAll();
    }
  });

  it('with forwardHedgeMs 0, asks the standby hosts one after another: a slow host\'s answer stands and the next host is not asked', async () => {
    const { h, c2, first, disposeAll } = await slowFirstStandbyHost(0, 300, [2, 3]);
    try {
      for (const p of [2, 3]) h.provider.setRemoteStandbys(STORE.name, p, [first.url, c2.url]);
      const result: any = await gql(fetch as Fetch, h.url, GET_MANY, { keys: remoteKeys });
      expectStandbyAnswers(result, first.url);
      expect(c2.hits()).toBe(0);
    } finally {
      await disposeAll();
    }
  });

  it('a forwarded read or page meets NOT_ACTIVE at an owner whose task restores: the caller, or the owner for its own client, reads the caught-up standby elsewhere', async () => {
    const c = await standbyHost([2]);
    try {
      a.provider.setRemoteStandbys(STORE.name, 2, [c.url]);
      b.provider.setRemoteStandbys(STORE.name, 2, [c.url]);
      b.provider.setTaskState('0_2', 'RESTORING');
      const keys = KEYS.filter((key) => partitionOf(key) === 2);
      // a holds a standby of 2 too (beforeEach): drop it, so the answer must come from c.
      const mine = standbyTasks.find((task) => task.taskId === '0_2')!;
      a.provider.removeTask(mine.taskId);
      const result: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys });
      keys.forEach((key) => expect(valuesOf(result).get(key)).toEqual({ n: KEYS.indexOf(key), standby: true }));
      expect(result.data.getMany.partitions).toEqual([{ partition: 2, failure: null, standby: true, lag: LAG, servedBy: c.url }]);
      // Pages likewise: asked of a, which forwards to b, and asked of b itself.
      const PAGE = '{ range(store: "words", first: 100, partitions: [2]) { edges { node { key value } } partitions { partition failure { reason } standby servedBy } } }';
      for (const via of [a.url, b.url]) {
        const page: any = await gql(fetch as Fetch, via, PAGE);
        expect(page.data.range.partitions, via).toEqual([{ partition: 2, failure: null, standby: true, servedBy: c.url }]);
        expect(page.data.range.edges.map((e: any) => e.node.key).sort()).toEqual([...keys].sort());
        for (const e of page.data.range.edges) expect(e.node.value).toEqual({ n: KEYS.indexOf(e.node.key), standby: true });
      }
      // (Via a, b's answer to the forwarded page was NOT_ACTIVE — one hop, no fallback there — and a asked c.)
      // With no standby elsewhere, b's restoring task answers its own client with its committed data.
      b.provider.setSelfUrl(b.url);
      b.provider.setRemoteStandbys(STORE.name, 2, []);
      const own: any = await gql(fetch as Fetch, b.url, PAGE);
      expect(own.data.range.partitions).toEqual([{ partition: 2, failure: null, standby: true, servedBy: b.url }]);
    } finally {
      await c.dispose();
    }
  });

  it('lets a standby within maxLag answer before the owner is asked, and one beyond it not', async () => {
    const within: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: remoteKeys, maxLag: LAG.offsets });
    expect(within.data.getMany.partitions.map((p: any) => p.standby)).toEqual([true, true]);
    expect(b.requests).toEqual([]);
    const beyond: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: remoteKeys, maxLag: LAG.offsets - 1 });
    remoteKeys.forEach((key) => expect(valuesOf(beyond).get(key)).toEqual({ n: KEYS.indexOf(key) }));
    expect(beyond.data.getMany.partitions.map((p: any) => [p.standby, p.servedBy])).toEqual([[false, b.url], [false, b.url]]);
  });

  it('does not let a standby whose lag is not known yet answer under any maxLag, and shows that lag as null', async () => {
    // A standby just opened, before a poll has read its changelogs' ends: Infinity offsets behind (standby-tasks.ts).
    for (const task of standbyTasks) a.provider.setLag(task.taskId, { offsets: Number.POSITIVE_INFINITY, timeMs: 0 });
    const bounded: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: remoteKeys, maxLag: 1_000_000 });
    remoteKeys.forEach((key) => expect(valuesOf(bounded).get(key)).toEqual({ n: KEYS.indexOf(key) }));
    expect(bounded.data.getMany.partitions.map((p: any) => [p.standby, p.servedBy])).toEqual([[false, b.url], [false, b.url]]);
    // The owner down: the fallback still reads it (as any standby when the owner cannot answer), its lag null.
    const down = await downUrl();
    for (const p of [2, 3]) a.provider.setRemoteOwner(STORE.name, p, down);
    const fallback: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: remoteKeys });
    expect(fallback.errors).toBeUndefined();
    expect(fallback.data.getMany.partitions.map((p: any) => [p.standby, p.lag])).toEqual([[true, null], [true, null]]);
    const metadata: any = await gql(fetch as Fetch, a.url, `{ keyMetadata(store: "words", key: "${remoteKeys[0]}") { standbys { url lag { offsets } } } }`);
    expect(metadata.data.keyMetadata.standbys).toEqual([{ url: a.url, lag: null }]);
  });

  it('with requireActive, keeps the owner\'s failure rather than asking a standby', async () => {
    const down = await downUrl();
    for (const p of [2, 3]) a.provider.setRemoteOwner(STORE.name, p, down);
    const result: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: remoteKeys, requireActive: true });
    for (const e of result.data.getMany.entries) expect(e).toMatchObject({ found: false, failure: { reason: 'FORWARD_FAILED', owner: down } });
  });

  it('forwards to a standby on another instance when the owner is down and none is kept here', async () => {
    // c keeps standbys of 2 and 3; a keeps none now.
    const c = await standbyHost([2, 3]);
    for (const task of standbyTasks.splice(0)) {
      a.provider.removeTask(task.taskId);
      await task.close();
    }
    const down = await downUrl();
    for (const p of [2, 3]) {
      a.provider.setRemoteOwner(STORE.name, p, down);
      a.provider.setRemoteStandbys(STORE.name, p, [c.url]);
    }
    try {
      const result: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: remoteKeys });
      expectStandbyAnswers(result, c.url);
      // keyMetadata asks the standby elsewhere for its lag.
      const key = remoteKeys.find((k) => partitionOf(k) === 2)!;
      const meta: any = await gql(fetch as Fetch, a.url, `{ keyMetadata(store: "words", key: "${key}") { partition active activeHere standbys { url here lag { offsets timeMs } } } }`);
      expect(meta.data.keyMetadata).toEqual({ partition: 2, active: down, activeHere: false, standbys: [{ url: c.url, here: false, lag: LAG }] });
    } finally {
      await c.dispose();
    }
  });

  it('answers from a standby elsewhere while the active task here is still restoring (just moved here), else from the restoring task as a standby', async () => {
    const c = await standbyHost([0]);
    const keys = KEYS.filter((key) => partitionOf(key) === 0);
    try {
      a.provider.setTaskState('0_0', 'RESTORING');
      // No standby elsewhere: the restoring task's committed data answers, as a standby's.
      const alone: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys });
      keys.forEach((key) => expect(valuesOf(alone).get(key)).toEqual({ n: KEYS.indexOf(key) }));
      expect(alone.data.getMany.partitions).toEqual([{ partition: 0, failure: null, standby: true, lag: null, servedBy: a.url }]);
      const active: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys, requireActive: true });
      for (const e of active.data.getMany.entries) expect(e.failure.reason).toBe('NOT_ACTIVE');
      a.provider.setRemoteStandbys(STORE.name, 0, [c.url]);
      const result: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys });
      keys.forEach((key) => expect(valuesOf(result).get(key)).toEqual({ n: KEYS.indexOf(key), standby: true }));
      expect(result.data.getMany.partitions).toEqual([{ partition: 0, failure: null, standby: true, lag: LAG, servedBy: c.url }]);
      // Running again: the active answers.
      a.provider.setTaskState('0_0', 'RUNNING');
      const back: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys });
      keys.forEach((key) => expect(valuesOf(back).get(key)).toEqual({ n: KEYS.indexOf(key) }));
    } finally {
      await c.dispose();
    }
  });

  it('pages a range with the standby kept here when the owner fails, from that page on, every key once and in order', async () => {
    const owner = await failing();
    try {
      for (const p of [2, 3]) a.provider.setRemoteOwner(STORE.name, p, owner.url);
      const RANGE = '{ range(store: "words", first: 100) { edges { node { key value } } partitions { partition failure { reason } standby servedBy } } }';
      // The first page finds the owner failing and reads its partitions from the standby here; the
      // next goes to the standby at once (the owner failed just now).
      for (const round of [1, 2]) {
        const page: any = await gql(fetch as Fetch, a.url, RANGE);
        expect(page.data.range.partitions.map((p: any) => [p.partition, p.failure, p.standby]), `page ${round}`).toEqual([[0, null, false], [1, null, false], [2, null, true], [3, null, true]]);
        const keys = page.data.range.edges.map((e: any) => e.node.key);
        expect(keys).toEqual([...KEYS].sort());
        for (const e of page.data.range.edges) expect(e.node.value).toEqual(partitionOf(e.node.key) >= 2 ? { n: KEYS.indexOf(e.node.key), standby: true } : { n: KEYS.indexOf(e.node.key) });
      }
      expect(owner.hits()).toBe(1);
    } finally {
      await owner.close();
    }
  });

  it('pages through the standby host elsewhere when the owner the map names no longer hosts the partitions; under requireActive the owner\'s NOT_PRESENT stands', async () => {
    const owner = await instance([]); // hosts nothing: asked as the owner, it answers NOT_PRESENT
    const c = await standbyHost([2, 3]);
    let disposed = false;
    try {
      for (const task of standbyTasks.splice(0)) {
        a.provider.removeTask(task.taskId);
        await task.close();
      }
      for (const p of [2, 3]) {
        a.provider.setRemoteOwner(STORE.name, p, owner.url);
        a.provider.setRemoteStandbys(STORE.name, p, [owner.url, c.url]);
      }
      const PAGE = (extra: string): string => `{ range(store: "words", first: 3${extra}) { edges { cursor node { key value } } pageInfo { hasNextPage } partitions { partition failure { reason } standby servedBy } } }`;
      // Pages of three: every key once, in order, those of 2 and 3 from c (the owner is not asked as a standby).
      const seen: string[] = [];
      let after = '';
      for (let round = 0; round < KEYS.length; round += 1) {
        const page: any = await gql(fetch as Fetch, a.url, PAGE(after));
        expect(page.errors).toBeUndefined();
        // (0 and 1 are read from the listing's snapshot here after the first page: no servedBy then.)
        expect(page.data.range.partitions.map((p: any) => [p.partition, p.failure, p.standby, p.partition >= 2 ? p.servedBy : 'here'])).toEqual([
          [0, null, false, 'here'], [1, null, false, 'here'], [2, null, true, c.url], [3, null, true, c.url],
        ]);
        for (const e of page.data.range.edges) {
          seen.push(e.node.key);
          expect(e.node.value).toEqual(partitionOf(e.node.key) >= 2 ? { n: KEYS.indexOf(e.node.key), standby: true } : { n: KEYS.indexOf(e.node.key) });
        }
        if (!page.data.range.pageInfo.hasNextPage) break;
        after = `, after: "${page.data.range.edges.at(-1).cursor}"`;
      }
      expect(seen).toEqual([...KEYS].sort());
      const active: any = await gql(fetch as Fetch, a.url, '{ range(store: "words", first: 100, requireActive: true) { partitions { partition failure { reason } } } }');
      expect(active.data.range.partitions.map((p: any) => p.failure?.reason ?? null)).toEqual([null, null, 'NOT_PRESENT', 'NOT_PRESENT']);
      // A standby host that fails too leaves the owner's failure standing.
      await c.dispose();
      disposed = true;
      const failed: any = await gql(fetch as Fetch, a.url, '{ range(store: "words", first: 100) { edges { node { key } } partitions { partition failure { reason } } } }');
      expect(failed.data.range.partitions.map((p: any) => p.failure?.reason ?? null)).toEqual([null, null, 'NOT_PRESENT', 'NOT_PRESENT']);
      expect(failed.data.range.edges.map((e: any) => e.node.key)).toEqual(KEYS.filter((k) => partitionOf(k) < 2).sort());
    } finally {
      if (!disposed) await c.dispose();
      await dispose(owner);
    }
  });

  it('pages a partition with no owner known yet (assigned here, its task not open) through its standby host, as key reads do', async () => {
    const c = await standbyHost([2]);
    try {
      for (const task of standbyTasks.splice(0)) {
        a.provider.removeTask(task.taskId);
        await task.close();
      }
      a.provider.setRemoteOwner(STORE.name, 2, undefined);
      a.provider.setRemoteStandbys(STORE.name, 2, [c.url]);
      const keys = KEYS.filter((key) => partitionOf(key) === 2);
      const page: any = await gql(fetch as Fetch, a.url, '{ range(store: "words", first: 100, partitions: [2]) { edges { node { key } } partitions { partition failure { reason } standby servedBy } } }');
      expect(page.data.range.partitions).toEqual([{ partition: 2, failure: null, standby: true, servedBy: c.url }]);
      expect(page.data.range.edges.map((e: any) => e.node.key).sort()).toEqual([...keys].sort());
    } finally {
      await c.dispose();
    }
  });

  it('serves the page and lets its snapshot go when the standby fallback throws (the instance stops under it): the owner\'s failure stands', async () => {
    const metrics = new Registry();
    const h = await instance([0, 1], { metrics });
    const tasks = await addStandbys(h, [2]);
    // The owner of 2 fails, and the instance leaves RUNNING while it is asked: reading the standby here then throws.
    const { server, url } = await listen((_req, res) => {
      h.provider.setInstanceState('ERROR');
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"errors":[{"message":"down"}]}');
    });
    try {
      h.provider.setRemoteOwner(STORE.name, 2, url);
      const pinned = async (): Promise<number> => Number(/^iqgate_pinned_snapshots (\d+)$/m.exec(await metrics.metrics())![1]);
      const page: any = await gql(fetch as Fetch, h.url, '{ range(store: "words", first: 100, partitions: [0, 1, 2]) { edges { node { key } } partitions { partition failure { reason } } } }');
      expect(page.errors).toBeUndefined();
      expect(page.data.range.partitions.map((p: any) => p.failure?.reason ?? null)).toEqual([null, null, 'FORWARD_FAILED']);
      expect(page.data.range.edges.map((e: any) => e.node.key).sort()).toEqual(KEYS.filter((k) => partitionOf(k) < 2).sort());
      expect(await pinned(), 'a listing that ended on its first page holds no snapshot').toBe(0);
    } finally {
      h.provider.setInstanceState('RUNNING');
      await close(server);
      for (const task of tasks) await task.close();
      await dispose(h);
    }
  });

  it('keyMetadata names the partition, the active owner and the standbys with their lags (null for one that cannot be asked)', async () => {
    const down = await downUrl();
    a.provider.setRemoteStandbys(STORE.name, 2, [down]);
    const key = remoteKeys.find((k) => partitionOf(k) === 2)!;
    const meta: any = await gql(fetch as Fetch, a.url, `{ keyMetadata(store: "words", key: "${key}") { partition active activeHere standbys { url here lag { offsets timeMs } } } }`);
    expect(meta.data.keyMetadata).toEqual({
      partition: 2, active: b.url, activeHere: false,
      standbys: [{ url: a.url, here: true, lag: LAG }, { url: down, here: false, lag: null }],
    });
    const local = KEYS.find((k) => partitionOf(k) === 0)!;
    const own: any = await gql(fetch as Fetch, a.url, `{ keyMetadata(store: "words", key: "${local}") { partition active activeHere standbys { url } } }`);
    expect(own.data.keyMetadata).toEqual({ partition: 0, active: a.url, activeHere: true, standbys: [] });
  });

  it('rejects a negative maxLag with INVALID_ARGUMENT', async () => {
    const result: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: remoteKeys, maxLag: -1 });
    expect(result.errors[0].extensions.code).toBe('INVALID_ARGUMENT');
    expect(result.errors[0].message).toMatch('maxLag');
  });
});
