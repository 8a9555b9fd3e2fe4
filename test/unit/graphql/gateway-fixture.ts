/**
 * A gateway over real store partitions (any StoreEngine) with a little write API, shared by
 * the unit tests (yoga.fetch, in-memory engine) and the integration tests (node:http, LevelDB).
 */
import { createGateway, type Gateway } from '../../../src/graphql/create-gateway.js';
import type { GatewayOptions } from '../../../src/graphql/gateway-options.js';
import { partitionForKey } from '../../../src/murmur2.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Serde, StoreEngine, TaskStores } from '../../../src/store/types.js';

export const INPUT_TOPIC = 'input';

export interface StoreSpec {
  readonly name: string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
}

/** Every serde as a key or a value: the sortable ones where numeric ranges are read, Kafka's elsewhere. */
export const DEFAULT_STORES: readonly StoreSpec[] = [
  { name: 'words', keySerde: serdes.string as Serde<unknown>, valueSerde: serdes.json },
  { name: 'ints', keySerde: serdes.sortableInt32 as Serde<unknown>, valueSerde: serdes.string as Serde<unknown> },
  { name: 'longs', keySerde: serdes.int64 as Serde<unknown>, valueSerde: serdes.float64 as Serde<unknown> },
  { name: 'floats', keySerde: serdes.sortableFloat64 as Serde<unknown>, valueSerde: serdes.bytes as Serde<unknown> },
  { name: 'blobs', keySerde: serdes.bytes as Serde<unknown>, valueSerde: serdes.int64 as Serde<unknown> },
];

export interface Fixture {
  readonly gateway: Gateway;
  readonly provider: StaticStateProvider;
  readonly tasks: readonly TaskStores[];
  readonly partitions: number;
  /** Writes (uncommitted) to the key's own partition, as input offset = next offset of that partition. */
  put(store: string, key: unknown, value: unknown): number;
  remove(store: string, key: unknown): number;
  /** Commits every task (flush + commit). */
  commit(): Promise<void>;
  abort(): void;
  partitionOf(store: string, key: unknown): number;
  /** The next input offset each partition will be written at. */
  nextOffsets(): number[];
  close(): Promise<void>;
}

export async function createFixture(
  engine: StoreEngine,
  options: { partitions?: number; stores?: readonly StoreSpec[]; gateway?: Omit<GatewayOptions, 'provider'> } = {},
): Promise<Fixture> {
  const partitions = options.partitions ?? 3;
  const stores = options.stores ?? DEFAULT_STORES;
  const provider = new StaticStateProvider({ stores: stores.map((s) => ({ ...s, partitions })) });
  const tasks: TaskStores[] = [];
  for (let p = 0; p < partitions; p++) {
    const task = await engine.openTask(`0_${p}`, stores.map((s) => ({ name: s.name, partition: p })));
    provider.addTask(task);
    tasks.push(task);
  }
  const offsets = new Array<number>(partitions).fill(0);
  const spec = (name: string): StoreSpec => {
    const found = stores.find((s) => s.name === name);
    if (found === undefined) throw new TypeError(`no store ${name}`);
    return found;
  };
  const partitionOf = (store: string, key: unknown): number => partitionForKey(spec(store).keySerde.serialize(key), partitions);
  const write = (store: string, key: unknown, value: unknown | undefined): number => {
    const s = spec(store);
    const keyBytes = s.keySerde.serialize(key);
    const p = partitionForKey(keyBytes, partitions);
    const offset = offsets[p]!;
    offsets[p] = offset + 1;
    const target = tasks[p]!.store(store);
    const source = { topic: INPUT_TOPIC, partition: p, offset };
    if (value === undefined) target.delete(keyBytes, source);
    else target.put(keyBytes, s.valueSerde.serialize(value), source);
    return offset;
  };
  const gateway = createGateway({ logging: false, ...options.gateway, provider });
  return {
    gateway,
    provider,
    tasks,
    partitions,
    put: (store, key, value) => write(store, key, value),
    remove: (store, key) => write(store, key, undefined),
    async commit() {
      for (const task of tasks) {
        task.flush();
        await task.commit({});
      }
    },
    abort() {
      for (const task of tasks) task.abort();
    },
    partitionOf,
    nextOffsets: () => [...offsets],
    async close() {
      await gateway.dispose();
      for (const task of tasks) await task.close();
      await engine.close();
    },
  };
}

export interface GraphQLResponse<T = Record<string, unknown>> {
  data?: T | null;
  errors?: Array<{ message: string; path?: unknown; extensions?: { code?: string; [k: string]: unknown } }>;
}

export type Fetch = (url: string, init: RequestInit) => Promise<Response>;

/** Posts one operation; `fetchFn` is `gateway.fetch` or the global fetch against a live URL. */
export async function gql<T = Record<string, unknown>>(
  fetchFn: Fetch,
  url: string,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<GraphQLResponse<T>> {
  const response = await fetchFn(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return (await response.json()) as GraphQLResponse<T>;
}

export interface SseSubscription<T> {
  /** Resolves with the next `data` payload (throws when the stream ends or carries errors). */
  next(): Promise<T>;
  close(): void;
}

/** Opens a subscription over SSE (yoga's built-in transport) and reads its events one by one. */
export async function subscribe<T>(fetchFn: Fetch, url: string, query: string, variables: Record<string, unknown> = {}): Promise<SseSubscription<T>> {
  const controller = new AbortController();
  const response = await fetchFn(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ query, variables }),
    signal: controller.signal,
  });
  if (response.body === null) throw new Error(`no SSE body, status ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  const pending: string[] = [];
  return {
    async next(): Promise<T> {
      for (;;) {
        const frame = pending.shift();
        if (frame !== undefined) {
          const dataLines = frame.split('\n').filter((line) => line.startsWith('data:'));
          if (frame.startsWith('event: complete')) throw new Error('subscription completed');
          if (dataLines.length === 0) continue; // keep-alive comments
          const payload = JSON.parse(dataLines.map((line) => line.slice(5).trim()).join('\n')) as GraphQLResponse<T>;
          if (payload.errors !== undefined) throw Object.assign(new Error(payload.errors[0]!.message), { errors: payload.errors });
          return payload.data as T;
        }
        const chunk = await reader.read();
        if (chunk.done) throw new Error('SSE stream ended');
        buffered += chunk.value;
        let split: number;
        while ((split = buffered.indexOf('\n\n')) >= 0) {
          pending.push(buffered.slice(0, split));
          buffered = buffered.slice(split + 2);
        }
      }
    },
    close() {
      controller.abort();
      void reader.cancel().catch(() => undefined);
    },
  };
}
