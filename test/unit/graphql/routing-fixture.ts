/**
 * Two gateways over disjoint partitions of one store, each on a 127.0.0.1 HTTP server (port 0),
 * each told that the other hosts the rest: the setup of the routing tests (routing.test.ts for
 * key lookups, routing-scans.test.ts for ranges and prefixes).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGateway, type Gateway } from '../../../src/graphql/create-gateway.js';
import { FORWARDED_HEADER } from '../../../src/graphql/forward-request.js';
import type { GatewayOptions } from '../../../src/graphql/gateway-options.js';
import { partitionForKey } from '../../../src/murmur2.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';
import { createInMemoryStoreEngine } from '../../../src/store/in-memory-engine.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Serde, StoreEngine, TaskStores } from '../../../src/store/types.js';

export const PARTITIONS = 4;
export const STORE = { name: 'words', keySerde: serdes.string as Serde<unknown>, valueSerde: serdes.json, partitions: PARTITIONS };
/** 40 keys under the prefix "key-", with others sorting before ("ant-") and after ("zebra-") it. */
export const KEYS = [
  ...Array.from({ length: 40 }, (_, i) => `key-${i}`),
  ...Array.from({ length: 6 }, (_, i) => `ant-${i}`),
  ...Array.from({ length: 6 }, (_, i) => `zebra-${i}`),
];
export const partitionOf = (key: string): number => partitionForKey(serdes.string.serialize(key), PARTITIONS);
/** Keys in the stores' order: by serialized bytes. */
export const byteOrder = (keys: readonly string[]): string[] =>
  [...keys].sort((x, y) => Buffer.compare(serdes.string.serialize(x), serdes.string.serialize(y)));

export interface Instance {
  readonly provider: StaticStateProvider;
  readonly gateway: Gateway;
  readonly server: Server;
  readonly url: string;
  readonly engine: StoreEngine;
  readonly tasks: TaskStores[];
  /** The forwarded-header value of every request this instance received (null: from a client). */
  readonly requests: Array<string | null>;
}

export async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql` };
}

export async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** A URL on which nothing listens (connections are refused). */
export async function downUrl(): Promise<string> {
  const down = await listen(() => undefined);
  await close(down.server);
  return down.url;
}

/** An instance hosting `partitions`, each key's value being { n: its index in KEYS }, committed. */
/** `otherStores` are defined and opened too, empty (STORE holds KEYS). */
export async function instance(partitions: readonly number[], gatewayOptions: Omit<GatewayOptions, 'provider'> = {}, otherStores: ReadonlyArray<typeof STORE> = []): Promise<Instance> {
  const engine = createInMemoryStoreEngine();
  const provider = new StaticStateProvider({ stores: [STORE, ...otherStores] });
  const tasks: TaskStores[] = [];
  for (const p of partitions) {
    const task = await engine.openTask(`0_${p}`, [STORE, ...otherStores].map((store) => ({ name: store.name, partition: p })));
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

export async function dispose(i: Instance): Promise<void> {
  await close(i.server);
  await i.gateway.dispose();
  for (const task of i.tasks) await task.close();
  await i.engine.close();
}

/** `a` hosts partitions 0 and 1, `b` hosts 2 and 3, and each knows the other as their owner. */
export async function instancePair(gatewayOptions: Omit<GatewayOptions, 'provider'> = {}, otherStores: ReadonlyArray<typeof STORE> = []): Promise<{ a: Instance; b: Instance }> {
  const a = await instance([0, 1], gatewayOptions, otherStores);
  const b = await instance([2, 3], gatewayOptions, otherStores);
  for (const p of [2, 3]) a.provider.setRemoteOwner(STORE.name, p, b.url);
  for (const p of [0, 1]) b.provider.setRemoteOwner(STORE.name, p, a.url);
  return { a, b };
}
