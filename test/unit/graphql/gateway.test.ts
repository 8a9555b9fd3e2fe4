/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GraphQLError } from 'graphql';
import { IqgateError } from '../../../src/errors.js';
import { Counter, Registry } from 'prom-client';
import { createGateway } from '../../../src/graphql/create-gateway.js';
import { maskError } from '../../../src/graphql/mask-error.js';
import { createInMemoryStoreEngine } from '../../../src/store/in-memory-engine.js';
import { createFixture, gql, type Fetch, type Fixture } from './gateway-fixture.js';
import {
  checkBadInput,
  checkBounds,
  checkInitialSubscriptions,
  checkIsolation,
  checkKeyTyping,
  checkPagination,
  checkSubscriptions,
  seedIsolation,
  waitUntil,
  type Client,
} from './gateway-scenarios.js';

let f: Fixture;
let client: Client;

beforeEach(async () => {
  f = await createFixture(createInMemoryStoreEngine(), { partitions: 4 });
  client = { fetch: f.gateway.fetch as Fetch, url: 'http://gateway.test/graphql' };
});

afterEach(async () => {
  await f.close();
});

describe('the GraphQL gateway through yoga.fetch', () => {
  it('answers every query type from the committed view by default and from the uncommitted one on request, never showing aborted data', async () => {
    await seedIsolation(f);
    await checkIsolation(client);
  });

  it('takes and returns keys in the natural GraphQL form of each serde', async () => {
    await checkKeyTyping(f, client);
  });

  it('pages over 4 partitions returning every key exactly once in order, forward and backward, pinned to the first page', async () => {
    await checkPagination(f, client, 45);
  });

  it('serves reached bounds, fails unreached ones at once, and waits for a commit when asked to', async () => {
    await checkBounds(f, client);
  });

  it('streams committed changes over SSE in order and resumes after a position', async () => {
    await checkSubscriptions(f, client);
  });

  it('starts a subscription with the current state over SSE, then live changes, and lists a partition again when resumed in its middle', async () => {
    await checkInitialSubscriptions(f, client);
  });

  it('rejects bad input with coded errors and keeps serving', async () => {
    await checkBadInput(f, client);
  });

  it('serves the rest of a page around a stored key that does not decode, failing that key alone with DECODE_FAILED', async () => {
    for (const n of [1, 2, 3, 4, 5, 6]) f.put('ints', n, `v${n}`);
    // 3 bytes: no sortableInt32 (a key written by another serde, or damaged on disk).
    const bad = Buffer.from([0x80, 0x00, 0x03]);
    f.tasks[0]!.store('ints').put(bad, Buffer.from('odd'), { topic: 'input', partition: 0, offset: 100 });
    await f.commit();
    const query = 'query($after: String) { range(store: "ints", first: 4, after: $after) { edges { cursor node { key value } } pageInfo { hasNextPage endCursor } } }';
    const keys: unknown[] = [];
    const errors: Array<[unknown, unknown]> = [];
    let after: string | null = null;
    for (let page = 0; page < 3; page++) {
      const result: any = await gql(client.fetch, client.url, query, { after });
      keys.push(...result.data.range.edges.map((e: any) => e.node.key));
      for (const error of result.errors ?? []) errors.push([error.extensions.code, error.path.slice(2)]);
      if (!result.data.range.pageInfo.hasNextPage) break;
      after = result.data.range.pageInfo.endCursor;
    }
    // 0x80 0x00 0x03 sorts after every sortableInt32 of 1..6 (0x80 00 00 0x).
    expect(keys).toEqual([1, 2, 3, 4, 5, 6, null]);
    expect(errors).toEqual([['DECODE_FAILED', [2, 'node', 'key']]]);
  });

  it('batches the keys of one request into one getMany per partition', async () => {
    for (let i = 0; i < 12; i++) f.put('words', `b${i}`, i);
    await f.commit();
    const calls: number[] = [];
    for (const task of f.tasks) {
      const store = task.store('words');
      const view = store.view.bind(store);
      store.view = (options) => {
        const v = view(options);
        const getMany = v.getMany.bind(v);
        return Object.assign(Object.create(v) as typeof v, {
          getMany: (keys: readonly Buffer[]) => {
            calls.push(keys.length);
            return getMany(keys);
          },
        });
      };
    }
    const fields = Array.from({ length: 12 }, (_, i) => `k${i}: get(store: "words", key: "b${i}") { value }`).join(' ');
    const result: any = await gql(client.fetch, client.url, `{ ${fields} many: getMany(store: "words", keys: ["b0", "b5"]) { entries { value } } }`);
    expect(result.errors).toBeUndefined();
    expect(result.data.k7.value).toBe(7);
    const touched = new Set(Array.from({ length: 12 }, (_, i) => f.partitionOf('words', `b${i}`)));
    expect(calls).toHaveLength(touched.size);
    expect(calls.reduce((a, b) => a + b, 0)).toBe(12);
  });

  it('stops waiting for a position bound, and releases the store listener, when the client goes away', async () => {
    f.put('words', 'bounded', 1);
    await f.commit();
    const partition = f.partitionOf('words', 'bounded');
    const store = f.tasks[partition]!.store('words');
    const ahead = { input: { [partition]: f.nextOffsets()[partition]! + 5 } };
    const controller = new AbortController();
    const request = f.gateway.fetch(client.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: 'query($b: Position) { get(store: "words", key: "bounded", positionBound: $b, boundTimeoutMs: 30000) { value } }',
        variables: { b: ahead },
      }),
      signal: controller.signal,
    });
    void Promise.resolve(request).catch(() => undefined);
    await waitUntil(() => store.listenerCount() > 0);
    controller.abort();
    // Well before the 30 s bound timeout.
    await waitUntil(() => store.listenerCount() === 0, 3_000);
  });

  it('bounds the partitions argument at the edge, so one request cannot ask for a million per-partition results', async () => {
    const many = Array.from({ length: 5_000 }, (_, i) => i);
    for (const query of [
      'query($p: [Int!]) { range(store: "words", partitions: $p) { partitions { partition } } }',
      'query($p: [Int!]) { prefix(store: "words", prefix: "a", partitions: $p) { partitions { partition } } }',
      'subscription($p: [Int!]) { changes(store: "words", partitions: $p) { key } }',
    ]) {
      const response: any = await gql(client.fetch, client.url, query, { p: many });
      expect(response.errors?.[0]?.extensions?.code, query).toBe('INVALID_ARGUMENT');
      expect(JSON.stringify(response).length).toBeLessThan(2_000);
    }
    // Duplicates are not "more partitions": the same partition listed many times is fine.
    const repeated: any = await gql(client.fetch, client.url, 'query($p: [Int!]) { range(store: "words", partitions: $p) { partitions { partition } } }', {
      p: Array.from({ length: 5_000 }, () => 1),
    });
    expect(repeated.data.range.partitions).toEqual([{ partition: 1 }]);
  });

  it('reports per-partition failures and positions in results', async () => {
    for (let i = 0; i < 20; i++) f.put('words', `f${i}`, i);
    await f.commit();
    f.provider.removeTask('0_1');
    const result: any = await gql(client.fetch, client.url, `{
      range(store: "words", partitions: [0, 1, 7]) { edges { node { partition } } partitions { partition position failure { reason } } }
    }`);
    expect(result.data.range.partitions.map((p: any) => [p.partition, p.failure?.reason ?? null])).toEqual([
      [0, null],
      [1, 'NOT_PRESENT'],
      [7, 'DOES_NOT_EXIST'],
    ]);
    expect(result.data.range.partitions[0].position).toEqual({ input: { '0': expect.any(Number) } });
    expect(result.data.range.edges.every((e: any) => e.node.partition === 0)).toBe(true);
  });

  it('says why the instance is out of its consumer group, and nothing while it is in', async () => {
    const ask = async () => ((await gql(client.fetch, client.url, '{ instance { state serving kafkaError { code message } } }')) as any).data.instance;
    expect(await ask()).toEqual({ state: 'RUNNING', serving: true, kafkaError: null });
    f.provider.setKafkaError({ code: 'BROKER_UNAVAILABLE', message: 'consumer of group app: Kafka broker unreachable' });
    expect(await ask()).toEqual({ state: 'RUNNING', serving: true, kafkaError: { code: 'BROKER_UNAVAILABLE', message: 'consumer of group app: Kafka broker unreachable' } });
    f.provider.setKafkaError(undefined);
    expect((await ask()).kafkaError).toBeNull();
  });

  it('answers GET /health while alive, and GET /ready with 200 only while the instance serves', async () => {
    const get = (path: string) => f.gateway.fetch(`http://gateway.test${path}`, { method: 'GET' });
    expect((await get('/health')).status).toBe(200);
    expect((await get('/ready')).status).toBe(200);
    f.provider.setInstanceState('REBALANCING');
    expect((await get('/ready')).status).toBe(200);
    f.provider.setInstanceState('STARTING');
    expect((await get('/ready')).status).toBe(503);
    expect((await get('/health')).status).toBe(200);
    f.provider.setInstanceState('ERROR');
    expect((await get('/ready')).status).toBe(503);
    expect((await get('/metrics')).status).toBe(404); // no registry given
  });

  it('serves a given prom-client registry at GET /metrics in the Prometheus text format', async () => {
    const registry = new Registry();
    const counter = new Counter({ name: 'test_things_total', help: 'Things.', registers: [registry] });
    counter.inc(3);
    const withMetrics = createGateway({ provider: f.provider, logging: false, metrics: registry });
    const response = await withMetrics.fetch('http://gateway.test/metrics', { method: 'GET' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(registry.contentType);
    expect(await response.text()).toMatch(/^test_things_total 3$/m);
    expect((await withMetrics.fetch('http://gateway.test/metrics', { method: 'POST' })).status).toBe(405);
  });

  it('counts requests by status and GraphQL errors by code on the /metrics registry', async () => {
    const registry = new Registry();
    const withMetrics = createGateway({ provider: f.provider, logging: false, metrics: registry });
    const seen = new Map<string, number>();
    const queries = [
      '{ get(store: "words", key: "a") { value } }',
      '{ get(store: "ints", key: "not-an-int") { value } }',
      '{ a: get(store: "ints", key: "x") { value } b: get(store: "nope", key: "y") { value } }',
      '{ nope }',
    ];
    for (const query of queries) {
      const result = await gql(withMetrics.fetch as Fetch, 'http://gateway.test/graphql', query);
      for (const error of result.errors ?? []) seen.set(String(error.extensions?.code), (seen.get(String(error.extensions?.code)) ?? 0) + 1);
    }
    expect(seen.get('INVALID_KEY')).toBeGreaterThan(0);
    expect(seen.get('GRAPHQL_VALIDATION_FAILED')).toBe(1);
    const text = await registry.metrics();
    const counted = new Map([...text.matchAll(/^iqgate_graphql_errors_total\{code="(\w+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]));
    expect(counted).toEqual(seen);
    const requests = [...text.matchAll(/^iqgate_graphql_request_duration_seconds_count\{status="(\d+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]);
    expect(requests).toEqual([['200', 3], ['400', 1]]);
  });

  it('masks unexpected errors and answers NOT_STARTED before the instance runs', async () => {
    f.provider.setInstanceState('STARTING');
    const notStarted = await gql(client.fetch, client.url, '{ get(store: "words", key: "a") { value } }');
    expect(notStarted.errors?.[0]?.extensions?.code).toBe('NOT_STARTED');
    f.provider.setInstanceState('RUNNING');
    f.tasks[0]!.store('words').view = () => {
      throw new Error('secret internal detail');
    };
    const broken: any = await gql(client.fetch, client.url, '{ range(store: "words") { partitions { partition failure { reason message } } } }');
    expect(broken.data.range.partitions[0].failure.reason).toBe('STORE_EXCEPTION');
    expect(JSON.stringify(broken)).not.toContain('secret internal detail');
    // A storage failure wrapped as STORE_EXCEPTION carries the driver's message (paths, files): masked too.
    f.tasks[0]!.store('words').view = () => {
      throw new IqgateError('STORE_EXCEPTION', 'store words failed: IO error: /var/lib/iqgate/000005.ldb: No such file');
    };
    const storage: any = await gql(client.fetch, client.url, '{ k: get(store: "words", key: "x") { failure { reason message } } range(store: "words") { partitions { failure { message } } } }');
    expect(JSON.stringify(storage)).not.toContain('/var/lib/iqgate');
    expect(storage.data.range.partitions[0].failure.message).toBe('Reading the store partition failed.');
    const status: any = await gql(client.fetch, client.url, '{ instance { state serving stores tasks } tasks { id state active stores { store partition } } }');
    expect(status.data.instance).toEqual({ state: 'RUNNING', serving: true, stores: 5, tasks: 4 });
    expect(status.data.tasks[0].stores).toContainEqual({ store: 'words', partition: 0 });
  });

  it('serves GraphiQL to browsers, self-contained (no script or style from another host)', async () => {
    const response = await f.gateway.fetch('http://gateway.test/graphql', { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('GraphiQL');
    expect(html).not.toMatch(/<script[^>]+src=["']?https?:/);
    expect(html).not.toMatch(/<link[^>]+rel=["']?stylesheet[^>]+href=["']?https?:/);
    expect(html).not.toContain('unpkg.com');
  });
});

describe('error codes', () => {
  it('gives parse errors, schema violations and uncoercible variables a code too', async () => {
    const client: Fetch = f.gateway.fetch as Fetch;
    const url = 'http://gateway.test/graphql';
    expect((await gql(client, url, '{')).errors?.[0]?.extensions?.code).toBe('GRAPHQL_PARSE_FAILED');
    expect((await gql(client, url, '{ nope }')).errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const coerced = await gql(client, url, 'query($n: Int) { range(store: "words", first: $n) { position } }', { n: 'abc' });
    expect(coerced.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(coerced.errors?.[0]?.message).toContain('$n');
  });

  it('passes a deliberate error\'s message and code, but not the storage driver\'s text of a STORE_EXCEPTION', () => {
    const invalid = maskError(new IqgateError('INVALID_KEY', 'key: expects a String', { details: { serde: 'string' } }));
    expect(invalid.message).toBe('key: expects a String');
    expect((invalid as GraphQLError).extensions).toMatchObject({ code: 'INVALID_KEY', details: { serde: 'string' } });
    const storage = maskError(
      new IqgateError('STORE_EXCEPTION', 'opening /var/lib/iqgate failed: IO error: LOCK: Resource temporarily unavailable', {
        details: { directory: '/var/lib/iqgate' },
      }),
    );
    expect(JSON.stringify({ message: storage.message, extensions: (storage as GraphQLError).extensions })).not.toContain('/var/lib/iqgate');
    expect((storage as GraphQLError).extensions.code).toBe('STORE_EXCEPTION');
    const bug = maskError(new TypeError('cannot read properties of undefined (reading secret)'));
    expect(bug.message).toBe('Unexpected error.');
  });

  it('uses only codes listed in the one error table', async () => {
    const { ERROR_CODES } = await import('../../../src/errors.js');
    const source = await import('node:fs/promises').then((fs) => fs.readFile(new URL('../../../schema.graphql', import.meta.url), 'utf8'));
    const documented = [...source.matchAll(/\b([A-Z][A-Z_]{5,})\b/g)].map((m) => m[1]!);
    const enums = new Set(['NOT_PRESENT', 'NOT_ACTIVE', 'UNKNOWN_QUERY_TYPE', 'DOES_NOT_EXIST', 'FORWARD_FAILED', 'CREATED', 'RESTORING', 'RUNNING', 'SUSPENDED', 'CLOSED', 'STARTING', 'REBALANCING', 'PENDING_SHUTDOWN', 'NOT_RUNNING', 'ERROR']);
    for (const code of documented.filter((c) => !enums.has(c))) expect(Object.keys(ERROR_CODES), code).toContain(code);
  });
});
