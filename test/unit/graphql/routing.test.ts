/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
/**
 * Routing between instances: two gateways over disjoint partitions of one store, each on a
 * 127.0.0.1 HTTP server, each told that the other hosts the rest. Keys are forwarded to their
 * owner (one POST per owner per request), never twice, and an owner that is down or silent
 * fails only its own keys, with FORWARD_FAILED. Ranges and prefixes: routing-scans.test.ts.
 */
import type { Server } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gql, type Fetch } from './gateway-fixture.js';
import { close, dispose, downUrl, instance, instancePair, KEYS, listen, partitionOf, STORE, type Instance } from './routing-fixture.js';

const GET_MANY = `query ($keys: [Key!]!, $readCommitted: Boolean) {
  getMany(store: "words", keys: $keys, readCommitted: $readCommitted) {
    entries { key value found partition failure { reason message owner } }
    partitions { partition position failure { reason owner } }
  }
}`;

let a: Instance;
let b: Instance;
const extra: Server[] = [];

beforeEach(async () => {
  ({ a, b } = await instancePair());
});

afterEach(async () => {
  for (const server of extra.splice(0)) await close(server);
  await dispose(a);
  await dispose(b);
});

describe('routing key lookups to the instance that hosts the partition', () => {
  it('the test keys cover every partition', () => {
    expect(new Set(KEYS.map(partitionOf))).toEqual(new Set([0, 1, 2, 3]));
  });

  it('answers a getMany over keys of all partitions from either instance, with one POST per owner', async () => {
    for (const [self, other] of [[a, b], [b, a]] as const) {
      const before = other.requests.length;
      const result: any = await gql(fetch as Fetch, self.url, GET_MANY, { keys: KEYS });
      expect(result.errors).toBeUndefined();
      const entries = result.data.getMany.entries;
      expect(entries.map((e: any) => e.key)).toEqual(KEYS);
      entries.forEach((e: any, i: number) => {
        expect(e.failure).toBeNull();
        expect(e).toMatchObject({ found: true, value: { n: i }, partition: partitionOf(KEYS[i]!) });
      });
      // Every partition answered with its position, the forwarded ones included.
      expect(result.data.getMany.partitions.map((p: any) => [p.partition, p.failure, p.position !== null])).toEqual([
        [0, null, true],
        [1, null, true],
        [2, null, true],
        [3, null, true],
      ]);
      expect(other.requests.slice(before)).toEqual(['1']);
    }
  });

  it('batches aliased gets of one request into one forward per owner and keeps their read options', async () => {
    const remoteKeys = KEYS.filter((k) => partitionOf(k) >= 2).slice(0, 5);
    const fields = remoteKeys.map((k, i) => `k${i}: get(store: "words", key: "${k}", readCommitted: false, executionInfo: true) { value found partitions { executionInfo } }`).join(' ');
    const result: any = await gql(fetch as Fetch, a.url, `{ ${fields} }`);
    expect(result.errors).toBeUndefined();
    remoteKeys.forEach((k, i) => {
      expect(result.data[`k${i}`]).toMatchObject({ value: { n: KEYS.indexOf(k) }, found: true });
      expect(result.data[`k${i}`].partitions[0].executionInfo[0]).toMatch(`forwarded to ${b.url}`);
      // The owner served its uncommitted view, as asked.
      expect(result.data[`k${i}`].partitions[0].executionInfo.join(' ')).toMatch('uncommitted view');
    });
    expect(b.requests).toEqual(['1']);
  });

  it('never forwards a forwarded request: a partition the target does not host answers NOT_PRESENT after one hop', async () => {
    // Both instances believe the other hosts partition 2 (a stale map during a rebalance).
    b.provider.removeTask('0_2');
    b.provider.setRemoteOwner(STORE.name, 2, a.url);
    const key = KEYS.find((k) => partitionOf(k) === 2)!;
    const result: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: [key] });
    expect(result.errors).toBeUndefined();
    expect(result.data.getMany.entries[0]).toMatchObject({ found: false, value: null, failure: { reason: 'NOT_PRESENT', owner: a.url } });
    expect(a.requests).toEqual([null]);
    expect(b.requests).toEqual(['1']);
  });

  it('fails only the keys of an owner that is down, with FORWARD_FAILED and the owner, keeping local answers', async () => {
    const down = await downUrl();
    for (const p of [2, 3]) a.provider.setRemoteOwner(STORE.name, p, down);
    const result: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: KEYS });
    expect(result.errors).toBeUndefined();
    result.data.getMany.entries.forEach((e: any, i: number) => {
      if (partitionOf(KEYS[i]!) < 2) expect(e).toMatchObject({ found: true, value: { n: i }, failure: null });
      else {
        expect(e).toMatchObject({ found: false, value: null, failure: { reason: 'FORWARD_FAILED', owner: down } });
        expect(e.failure.message).toMatch('ECONNREFUSED');
      }
    });
    expect(result.data.getMany.partitions.filter((p: any) => p.failure !== null).map((p: any) => [p.partition, p.failure.reason])).toEqual([
      [2, 'FORWARD_FAILED'],
      [3, 'FORWARD_FAILED'],
    ]);
  });

  it('gives up on an owner that does not answer after forwardTimeoutMs', async () => {
    const slow = await instance([0, 1], { forwardTimeoutMs: 150 });
    const silent = await listen(() => undefined); // accepts, never responds
    extra.push(silent.server);
    try {
      for (const p of [2, 3]) slow.provider.setRemoteOwner(STORE.name, p, silent.url);
      const key = KEYS.find((k) => partitionOf(k) === 3)!;
      const started = Date.now();
      const result: any = await gql(fetch as Fetch, slow.url, `{ get(store: "words", key: "${key}") { found failure { reason message owner } } }`);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(result.data.get).toMatchObject({ found: false, failure: { reason: 'FORWARD_FAILED', owner: silent.url } });
      expect(result.data.get.failure.message).toMatch('timed out after 150 ms');
    } finally {
      await dispose(slow);
    }
  });
});
