/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
/**
 * Routing between instances: two gateways over disjoint partitions of one store, each on a
 * 127.0.0.1 HTTP server, each told that the other hosts the rest. Keys are forwarded to their
 * owner (one POST per owner per request), never twice, and an owner that is down or silent
 * fails only its own keys, with FORWARD_FAILED.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../../src/graphql/create-gateway.js';
import { FORWARDED_HEADER } from '../../../src/graphql/forward-keys.js';
import { partitionForKey } from '../../../src/query/murmur2.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';
import { createInMemoryStoreEngine } from '../../../src/store/in-memory-engine.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Serde, StoreEngine, TaskStores } from '../../../src/store/types.js';
import { gql, type Fetch } from './gateway-fixture.js';

const PARTITIONS = 4;
const STORE = { name: 'words', keySerde: serdes.string as Serde<unknown>, valueSerde: serdes.json, partitions: PARTITIONS };
const KEYS = Array.from({ length: 24 }, (_, i) => `key-${i}`);
const partitionOf = (key: string): number => partitionForKey(serdes.string.serialize(key), PARTITIONS);

interface Instance {
  readonly provider: StaticStateProvider;
  readonly gateway: Gateway;
  readonly server: Server;
  readonly url: string;
  readonly engine: StoreEngine;
  readonly tasks: TaskStores[];
  /** The forwarded-header value of every request this instance received (null: from a client). */
  readonly requests: Array<string | null>;
}

async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql` };
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** An instance hosting `partitions`, each key's value being { n: its index }, committed. */
async function instance(partitions: readonly number[], gatewayOptions: { forwardTimeoutMs?: number } = {}): Promise<Instance> {
  const engine = createInMemoryStoreEngine();
  const provider = new StaticStateProvider({ stores: [STORE] });
  const tasks: TaskStores[] = [];
  for (const p of partitions) {
    const task = await engine.openTask(`0_${p}`, [{ name: STORE.name, partition: p }]);
    provider.addTask(task);
    tasks.push(task);
  }
  const offsets = new Map<number, number>();
  KEYS.forEach((key, i) => {
    const p = partitionOf(key);
    const task = tasks.find((t) => t.store(STORE.name).partition === p);
    if (task === undefined) return;
    const offset = offsets.get(p) ?? 0;
    offsets.set(p, offset + 1);
    task.store(STORE.name).put(serdes.string.serialize(key), serdes.json.serialize({ n: i }), { topic: 'input', partition: p, offset });
  });
  for (const task of tasks) {
    task.flush();
    await task.commit({});
  }
  const gateway = createGateway({ provider, logging: false, ...gatewayOptions });
  const requests: Array<string | null> = [];
  const { server, url } = await listen((req, res) => {
    const header = req.headers[FORWARDED_HEADER];
    requests.push(typeof header === 'string' ? header : null);
    void gateway(req, res);
  });
  return { provider, gateway, server, url, engine, tasks, requests };
}

async function dispose(i: Instance): Promise<void> {
  await close(i.server);
  await i.gateway.dispose();
  for (const task of i.tasks) await task.close();
  await i.engine.close();
}

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
  a = await instance([0, 1]);
  b = await instance([2, 3]);
  for (const p of [2, 3]) a.provider.setRemoteOwner(STORE.name, p, b.url);
  for (const p of [0, 1]) b.provider.setRemoteOwner(STORE.name, p, a.url);
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
    const down = await listen(() => undefined);
    await close(down.server);
    for (const p of [2, 3]) a.provider.setRemoteOwner(STORE.name, p, down.url);
    const result: any = await gql(fetch as Fetch, a.url, GET_MANY, { keys: KEYS });
    expect(result.errors).toBeUndefined();
    result.data.getMany.entries.forEach((e: any, i: number) => {
      if (partitionOf(KEYS[i]!) < 2) expect(e).toMatchObject({ found: true, value: { n: i }, failure: null });
      else {
        expect(e).toMatchObject({ found: false, value: null, failure: { reason: 'FORWARD_FAILED', owner: down.url } });
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

  it('reports the owner on the NOT_PRESENT partitions of a range, which is not forwarded', async () => {
    const result: any = await gql(fetch as Fetch, a.url, '{ range(store: "words", first: 100) { edges { node { partition } } partitions { partition failure { reason owner } } } }');
    expect(result.errors).toBeUndefined();
    expect(new Set(result.data.range.edges.map((e: any) => e.node.partition))).toEqual(new Set([0, 1]));
    expect(result.data.range.partitions.map((p: any) => p.failure)).toEqual([null, null, { reason: 'NOT_PRESENT', owner: b.url }, { reason: 'NOT_PRESENT', owner: b.url }]);
    expect(b.requests).toEqual([]);
  });
});
