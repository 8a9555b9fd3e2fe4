/**
 * The node:http fast path for known queries (src/graphql/node-fast-path.ts) against yoga
 * itself: every request is sent over a real socket twice (the first teaches the query text,
 * the second is answered by the fast path) and once through `gateway.fetch` (yoga only), on
 * the LevelDB engine; status, content type and body must be the same, and the fast path's
 * counters say which side answered, so a request yoga answers in its place fails the test.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listenGateway } from '../../../src/graphql/listen-gateway.js';
import { fastPathStats, type FastPathStats } from '../../../src/graphql/node-fast-path.js';
import { openLevelStoreEngine } from '../../../src/store/level-engine.js';
import { createFixture, type Fixture } from '../../unit/graphql/gateway-fixture.js';
import { waitUntil } from '../../unit/graphql/gateway-scenarios.js';

const MAX_PAGE = 5;

let directory: string;
let f: Fixture;
let server: Server;
let url: string;
let registry: Registry;
let stats: FastPathStats;

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'iqgate-fast-path-'));
  registry = new Registry();
  // Answers are compared byte for byte: pinned listings' cursors carry a fresh random snapshot id
  // per answer, so pinning is off here (the pinned-pages tests cover it).
  f = await createFixture(await openLevelStoreEngine({ directory }), {
    partitions: 3,
    gateway: { metrics: registry, maxPageSize: MAX_PAGE, defaultPageSize: 3, corsOrigins: ['http://dashboard.example'], cursorSnapshotTtlMs: 0 },
  });
  stats = fastPathStats(f.gateway)!;
  server = createServer(f.gateway);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  for (const word of ['apple', 'banana', 'cherry', 'date', 'elder']) f.put('words', word, { word, n: word.length });
  f.put('ints', 7, 'seven');
  f.put('words', 'café', { word: 'café ☕', n: 4 }); // bytes ≠ characters: content-length counts bytes
  await f.commit();
  f.put('words', 'fig', { word: 'fig', n: 3 }); // uncommitted: only the live view sees it
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await f.close();
  await rm(directory, { recursive: true, force: true });
});

interface Answer {
  readonly status: number;
  readonly contentType: string | null;
  readonly body: string;
}

async function answerOf(response: Response): Promise<Answer> {
  return { status: response.status, contentType: response.headers.get('content-type'), body: await response.text() };
}

function post(body: string, headers: Record<string, string> = {}): RequestInit {
  return { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body };
}

/** Over the socket (twice: yoga learns, then the fast path answers) and through yoga.fetch. */
async function compare(body: string, headers: Record<string, string> = {}): Promise<{ fast: Answer; yoga: Answer }> {
  await fetch(url, post(body, headers)).then(answerOf);
  const answered = stats.answered;
  const fast = await fetch(url, post(body, headers)).then(answerOf);
  expect(stats.answered, `the fast path answers ${body}`).toBe(answered + 1);
  const yoga = await answerOf(await f.gateway.fetch(url, post(body, headers)));
  expect(fast).toEqual(yoga);
  return { fast, yoga };
}

function body(query: string, variables?: Record<string, unknown>, operationName?: string): string {
  return JSON.stringify({ query, ...(variables === undefined ? {} : { variables }), ...(operationName === undefined ? {} : { operationName }) });
}

async function metric(name: string, label: string): Promise<number> {
  const text = await registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${label}}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('the node:http fast path for known queries', () => {
  it('answers key, batch, page and instance queries exactly as yoga does', async () => {
    const get = 'query($k: Key!, $c: Boolean) { get(store: "words", key: $k, readCommitted: $c) { key value found partition position partitions { partition position failure { reason } } } }';
    const { fast } = await compare(body(get, { k: 'banana' }));
    expect(JSON.parse(fast.body)).toMatchObject({ data: { get: { key: 'banana', value: { word: 'banana', n: 6 }, found: true } } });
    await compare(body(get, { k: 'nothing' }));
    const accented = await compare(body(get, { k: 'café' }));
    expect(JSON.parse(accented.fast.body)).toMatchObject({ data: { get: { value: { word: 'café ☕' } } } });
    const live = await compare(body(get, { k: 'fig', c: false }));
    expect(JSON.parse(live.fast.body)).toMatchObject({ data: { get: { value: { word: 'fig', n: 3 } } } });
    await compare(body('query($ks: [Key!]!) { getMany(store: "words", keys: $ks) { entries { key value found } position partitions { partition position } } }', { ks: ['apple', 'zzz', 'date', 'apple'] }));
    const page = await compare(body('{ range(store: "words") { edges { cursor node { key value partition } } pageInfo { hasNextPage endCursor } position } }'));
    const endCursor = (JSON.parse(page.fast.body) as { data: { range: { pageInfo: { endCursor: string } } } }).data.range.pageInfo.endCursor;
    await compare(body('query($after: String) { range(store: "words", after: $after) { edges { node { key } } pageInfo { hasNextPage } } }', { after: endCursor }));
    await compare(body('{ prefix(store: "words", prefix: "b", order: DESC) { edges { node { key value } } } }'));
    await compare(body('{ instance { state serving stores tasks } stores { name keySerde valueSerde partitions } }'));
    await compare(body('query A { a: get(store: "ints", key: 7) { value } } query B { b: get(store: "ints", key: 8) { found } }', undefined, 'B'));
  });

  it('answers coded errors exactly as yoga does, for each accepted media type', async () => {
    const cases = [
      body('{ get(store: "nope", key: "a") { value } }'), // STORE_NOT_FOUND
      body('query($k: Key!) { get(store: "ints", key: $k) { value } }', { k: 'not a number' }), // INVALID_KEY
      body('query($k: Key!) { get(store: "ints", key: $k) { value } }', { k: null }), // variable coercion
      body('query($k: Key!) { get(store: "ints", key: $k) { value } }', {}), // variable missing
      body('query($ks: [Key!]!) { getMany(store: "words", keys: $ks) { entries { value } } }', { ks: ['a', 'b', 'c', 'd', 'e', 'f'] }), // PAGE_SIZE_EXCEEDED
      body('{ range(store: "words", after: "bm9wZQ") { edges { cursor } } }'), // INVALID_CURSOR
      body('{ range(store: "words", first: 2, last: 2) { edges { cursor } } }'), // INVALID_ARGUMENT
      body('{ ok: get(store: "words", key: "apple") { value } bad: get(store: "nope", key: "a") { value } }'), // partial data
    ];
    for (const accept of [undefined, 'application/json', 'application/graphql-response+json', 'application/graphql-response+json, application/json', '*/*']) {
      for (const request of cases) {
        const { fast } = await compare(request, accept === undefined ? {} : { accept });
        expect(fast.body).toContain('"code"');
      }
    }
  });

  it('answers in the media type yoga picks from the Accept header, and leaves it the ones it streams or refuses', async () => {
    const get = body('{ get(store: "words", key: "apple") { value } }');
    for (const accept of ['application/json; charset=utf-8', 'text/html, application/json;q=0.9', 'APPLICATION/GRAPHQL-RESPONSE+JSON', 'application/*', 'application/json, application/graphql-response+json']) {
      const { fast } = await compare(get, { accept });
      expect(fast.status).toBe(200);
    }
    for (const accept of ['application/json; charset=latin1', 'text/html', 'text/event-stream', 'multipart/mixed']) {
      const answered = stats.answered;
      const overSocket = await fetch(url, post(get, { accept }));
      const yoga = await f.gateway.fetch(url, post(get, { accept }));
      expect([overSocket.status, overSocket.headers.get('content-type')]).toEqual([yoga.status, yoga.headers.get('content-type')]);
      await Promise.all([overSocket.text(), yoga.text()]); // a query over SSE is one event, then the stream ends
      expect(stats.answered).toBe(answered);
    }
  });

  it('serves known queries on a server from listenGateway, which tells the runtime of each request', async () => {
    let started = 0;
    let done = 0;
    const listening = await listenGateway(f.gateway, { port: 0, host: '127.0.0.1', onRequest: () => (started++, () => done++) });
    try {
      const get = body('{ get(store: "words", key: "elder") { value } }');
      await fetch(listening.url, post(get));
      const answered = stats.answered;
      const answer = await fetch(listening.url, post(get)).then((r) => r.json());
      expect(answer).toEqual({ data: { get: { value: { word: 'elder', n: 5 } } } });
      expect(stats.answered).toBe(answered + 1);
      await waitUntil(() => done === 2);
      expect(started).toBe(2);
    } finally {
      await listening.close();
    }
  });

  it('masks a value its serde cannot decode as yoga does, and serves the rest of the result', async () => {
    const broken = Buffer.from('broken');
    const partition = f.partitionOf('words', 'broken');
    f.tasks[partition]!.store('words').put(broken, Buffer.from('{not json'), { topic: 'input', partition, offset: f.nextOffsets()[partition]! });
    await f.commit();
    const { fast } = await compare(body('{ getMany(store: "words", keys: ["broken", "apple"]) { entries { key value } } }'));
    expect(JSON.parse(fast.body)).toMatchObject({ errors: [{ extensions: { code: 'DECODE_FAILED' } }], data: { getMany: { entries: [{ key: 'broken', value: null }, { key: 'apple' }] } } });
  });

  it('leaves to yoga what it does not serve: unknown texts, limits, extra parameters, bad JSON, CORS, SSE', async () => {
    const before = { ...stats };
    const deep = '{ a0: instance { state } a1: instance { state } a2: instance { state } a3: instance { state } a4: instance { state } a5: instance { state } a6: instance { state } a7: instance { state } a8: instance { state } a9: instance { state } b0: instance { state } b1: instance { state } b2: instance { state } b3: instance { state } b4: instance { state } b5: instance { state } b6: instance { state } b7: instance { state } b8: instance { state } b9: instance { state } c0: instance { state } c1: instance { state } c2: instance { state } c3: instance { state } c4: instance { state } c5: instance { state } c6: instance { state } c7: instance { state } c8: instance { state } c9: instance { state } d0: instance { state } }';
    const requests: Array<[string, Record<string, string>]> = [
      [body(deep), {}], // over maxAliases: never learned
      [body(deep), {}],
      [JSON.stringify({ query: '{ instance { state } }', extra: 1 }), {}],
      [JSON.stringify({ query: '{ instance { state } }', extensions: { x: 1 } }), {}],
      ['{"query": ', {}],
      ['[1, 2]', {}],
      [body('{ instance { state } }'), { origin: 'http://dashboard.example' }],
    ];
    for (const [request, headers] of requests) {
      const overSocket = await fetch(url, post(request, headers)).then(answerOf);
      const yoga = await answerOf(await f.gateway.fetch(url, post(request, headers)));
      expect(overSocket).toEqual(yoga);
    }
    const aliases = await fetch(url, post(body(deep))).then((r) => r.json() as Promise<{ errors: Array<{ extensions: { code: string } }> }>);
    expect(aliases.errors[0]!.extensions.code).toBe('TOO_MANY_ALIASES');
    const cors = await fetch(url, post(body('{ instance { state } }'), { origin: 'http://dashboard.example' }));
    expect(cors.headers.get('access-control-allow-origin')).toBe('http://dashboard.example');
    // An origin not listed is granted nothing: its page cannot read the answer.
    const foreign = await fetch(url, post(body('{ instance { state } }'), { origin: 'http://elsewhere.example' }));
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    expect(stats.answered).toBe(before.answered);
    // A subscription over SSE is not even read by the fast path; one over */* is read and handed on.
    const sse = await fetch(url, post(body('subscription { changes(store: "words", key: "apple") { key } }'), { accept: 'text/event-stream' }));
    expect(sse.headers.get('content-type')).toContain('text/event-stream');
    await sse.body?.cancel();
    expect(stats.answered).toBe(before.answered);
    expect(stats.handedToYoga).toBeGreaterThan(before.handedToYoga);
  });

  it('hands yoga the bodies it read intact, and leaves it larger ones unread', async () => {
    const query = 'query($ks: [Key!]!) { getMany(store: "words", keys: $ks) { entries { found } } }';
    const read = body(query, { ks: ['a', 'b', 'c', 'd'].map((c) => c.repeat(60_000)) }); // 240 kB: read, and handed on when unknown
    const handed = stats.handedToYoga;
    const { fast } = await compare(read);
    expect(stats.handedToYoga).toBe(handed + 1);
    expect(JSON.parse(fast.body)).toEqual({ data: { getMany: { entries: [{ found: false }, { found: false }, { found: false }, { found: false }] } } });
    const unread = body(query, { ks: ['a', 'b', 'c', 'd', 'e'].map((c) => c.repeat(60_000)) }); // 300 kB: yoga's from the start
    const answered = stats.answered;
    const overSocket = await answerOf(await fetch(url, post(unread)));
    expect(overSocket).toEqual(await answerOf(await f.gateway.fetch(url, post(unread))));
    expect(JSON.parse(overSocket.body)).toMatchObject({ data: { getMany: { entries: [{ found: false }, {}, {}, {}, {}] } } });
    expect([stats.answered, stats.handedToYoga]).toEqual([answered, handed + 1]);
  });

  it('reads a body that arrives in several chunks', async () => {
    const text = body('query($k: Key!) { get(store: "words", key: $k) { value } }', { k: 'cherry' });
    await fetch(url, post(text));
    const answered = stats.answered;
    const { port } = server.address() as AddressInfo;
    const answer = await new Promise<string>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/graphql', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      });
      req.on('error', reject);
      req.write(text.slice(0, 10));
      setImmediate(() => req.end(text.slice(10)));
    });
    expect(JSON.parse(answer)).toEqual({ data: { get: { value: { word: 'cherry', n: 6 } } } });
    expect(stats.answered).toBe(answered + 1);
  });

  it('counts its requests and error codes on /metrics as yoga does', async () => {
    const ok = body('{ get(store: "words", key: "apple") { value } }');
    const bad = body('{ get(store: "nope", key: "apple") { value } }');
    await fetch(url, post(ok));
    await fetch(url, post(bad));
    const requests = await metric('iqgate_graphql_request_duration_seconds_count', 'status="200"');
    const errors = await metric('iqgate_graphql_errors_total', 'code="STORE_NOT_FOUND"');
    const answered = stats.answered;
    await fetch(url, post(ok));
    await fetch(url, post(bad));
    expect(stats.answered).toBe(answered + 2);
    expect(await metric('iqgate_graphql_request_duration_seconds_count', 'status="200"')).toBe(requests + 2);
    expect(await metric('iqgate_graphql_errors_total', 'code="STORE_NOT_FOUND"')).toBe(errors + 1);
  });

  it('stops waiting for a position bound when the client disconnects', async () => {
    const partition = f.partitionOf('words', 'apple');
    const store = f.tasks[partition]!.store('words');
    const query = 'query($b: Position, $t: Int) { get(store: "words", key: "apple", positionBound: $b, boundTimeoutMs: $t) { value } }';
    await fetch(url, post(body(query, { t: 0 })));
    const answered = stats.answered;
    const controller = new AbortController();
    const request = fetch(url, { ...post(body(query, { b: { input: { [partition]: f.nextOffsets()[partition]! + 5 } }, t: 30_000 })), signal: controller.signal });
    void request.catch(() => undefined);
    await waitUntil(() => store.listenerCount() > 0);
    controller.abort();
    await waitUntil(() => store.listenerCount() === 0, 5_000);
    expect(stats.answered).toBe(answered); // the fast path took it and had no one to answer
    expect(stats.handedToYoga).toBe(1);
  });
});
