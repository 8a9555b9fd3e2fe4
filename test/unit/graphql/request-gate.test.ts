/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
/**
 * The request gate (src/graphql/gate/) on a gateway served by node:http, whose known queries
 * take the fast path, and through yoga.fetch: who gets in (API keys, JWTs, anonymous by
 * choice or on loopback only), what each may read (a grant for store A never reads B), and
 * what is refused before any resolver runs (CSRF, oversized bodies, rate and subscription
 * limits, entries asked through variables). Every path is behind it: /graphql on both paths,
 * GraphiQL, SSE subscriptions, /dashboard and /metrics; /health and /ready stay open.
 */
import { request as httpRequest } from 'node:http';
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway } from '../../../src/graphql/create-gateway.js';
import { isIqgateError } from '../../../src/errors.js';
import { listenGateway } from '../../../src/graphql/listen-gateway.js';
import { fastPathStats } from '../../../src/graphql/node-fast-path.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Serde } from '../../../src/store/types.js';
import { FORWARDED_HEADER } from '../../../src/graphql/forward-request.js';
import { signForward, SKEW_MS } from '../../../src/graphql/gate/peer-signature.js';
import { close, dispose, instance, instancePair, KEYS, listen, partitionOf, STORE, type Instance } from './routing-fixture.js';

const KEY_A = 'key-for-store-words-only-0001';
const KEY_ALL = 'key-for-every-store-000000001';
const API_KEYS = [
  { name: 'words-reader', key: KEY_A, stores: ['words'] },
  { name: 'operator', key: KEY_ALL, stores: ['*'] },
];
/** A second store, so that a grant for one can be shown not to read the other. */
const OTHER = { name: 'secrets', keySerde: serdes.string as Serde<unknown>, valueSerde: serdes.json, partitions: 4 };

const opened: Instance[] = [];
afterEach(async () => {
  for (const i of opened.splice(0)) await dispose(i);
});

async function served(options: Parameters<typeof instance>[1]): Promise<Instance> {
  const i = await instance([0, 1, 2, 3], options, [OTHER]);
  opened.push(i);
  return i;
}

const GET = 'query ($k: Key!) { get(store: "words", key: $k) { value found } }';
const GET_OTHER = 'query ($k: Key!) { get(store: "secrets", key: $k) { value found } }';

function post(query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}): RequestInit {
  return { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...headers }, body: JSON.stringify({ query, variables }) };
}

async function json(response: Response): Promise<any> {
  return response.json();
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

describe('the request gate with API keys', () => {
  it('refuses a caller without credentials on every path, on the fast path and through yoga alike, and leaves /health and /ready open', async () => {
    const i = await served({ auth: { apiKeys: API_KEYS }, metrics: new Registry() });
    const base = i.url.replace(/\/graphql$/, '');
    // Taught to the fast path first (an admitted request), so the refusal below is the fast path's own.
    expect((await json(await fetch(i.url, post(GET, { k: KEYS[0] }, bearer(KEY_ALL))))).data.get.found).toBe(true);
    const answeredBefore = fastPathStats(i.gateway)!.answered;
    const refusals: Array<[string, RequestInit]> = [
      [i.url, post(GET, { k: KEYS[0] })],
      [`${i.url}?query=${encodeURIComponent('{ instance { state } }')}`, { headers: { 'x-graphql-yoga-csrf': '1' } }],
      [i.url, { headers: { accept: 'text/html' } }], // GraphiQL
      [i.url, post('subscription { changes(store: "words", keys: ["key-1"]) { key } }', {}, { accept: 'text/event-stream' })],
      [`${base}/dashboard`, {}],
      [`${base}/metrics`, {}],
    ];
    for (const [url, init] of refusals) {
      for (const [how, answer] of [['node', await fetch(url, init)], ['yoga', await i.gateway.fetch(url, init)]] as const) {
        expect(answer.status, `${how} ${url}`).toBe(401);
        expect(answer.headers.get('www-authenticate'), url).toBe('Basic realm="iqgate", charset="UTF-8", Bearer realm="iqgate"');
        expect((await json(answer)).errors[0].extensions.code).toBe('UNAUTHENTICATED');
      }
    }
    expect(fastPathStats(i.gateway)!.answered).toBe(answeredBefore + 1); // the first refusal, on the fast path
    for (const path of ['/health', '/ready']) expect((await fetch(`${base}${path}`)).status).toBe(200);
    // The refusals are counted on /metrics, seen by a caller who may.
    const metrics = await (await fetch(`${base}/metrics`, { headers: bearer(KEY_ALL) })).text();
    expect(metrics).toMatch(/code="UNAUTHENTICATED"\} (\d+)/);
    expect(Number(/code="UNAUTHENTICATED"\} (\d+)/.exec(metrics)![1])).toBeGreaterThanOrEqual(refusals.length);
  });

  it('serves no operation at an open probe\'s path: a URL that ends in the endpoint (yoga would run it) is 404, a probe with a query string needs credentials', async () => {
    const i = await served({ auth: { apiKeys: API_KEYS } });
    const base = i.url.replace(/\/graphql$/, '');
    const read = '{ stores { name } a: get(store: "words", key: "key-0") { value } }';
    // Yoga takes any URL ending in /graphql for a GraphQL request; /health was open to anyone.
    const stray: Array<[string, RequestInit]> = [
      [`${base}/health?/graphql`, post(read)],
      [`${base}/health?query=${encodeURIComponent(read)}&x=/graphql`, { headers: { 'x-graphql-yoga-csrf': '1' } }],
      [`${base}/ready?/graphql`, post(read)],
      [`${base}/dashboard?x=/graphql`, post(read, {}, bearer(KEY_ALL))],
      [`${base}/health?/graphql`, { ...post('subscription { changes(store: "words", keys: ["key-1"]) { key } }'), headers: { 'content-type': 'application/json', accept: 'text/event-stream' } }],
    ];
    for (const [url, init] of stray) {
      for (const [how, answer] of [['node', await fetch(url, init)], ['yoga', await i.gateway.fetch(url, init)]] as const) {
        expect(answer.status, `${how} ${url}`).toBe(404);
        expect(await answer.text(), `${how} ${url}`).not.toContain('words');
      }
    }
    // A probe is a plain GET or HEAD; with a query string it is any request.
    expect((await fetch(`${base}/health?x=1`)).status).toBe(401);
    expect((await fetch(`${base}/ready?x=1`)).status).toBe(401);
    expect((await fetch(`${base}/health`, { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(`${base}/ready`)).status).toBe(200);
  });

  it('tells a key nothing of the stores it may not read: unknown and forbidden names answer alike, and tasks list only its stores', async () => {
    const i = await served({ auth: { apiKeys: API_KEYS } });
    for (const name of ['secrets', 'no-such-store']) {
      const read = await json(await fetch(i.url, post(`{ get(store: "${name}", key: "a") { found } }`, {}, bearer(KEY_A))));
      expect(read.errors[0].extensions.code, name).toBe('FORBIDDEN');
      const store = await json(await fetch(i.url, post(`{ store(name: "${name}") { name } }`, {}, bearer(KEY_A))));
      expect(store.errors[0].extensions.code, name).toBe('FORBIDDEN');
    }
    // A key for every store still hears which do not exist.
    expect((await json(await fetch(i.url, post('{ get(store: "no-such-store", key: "a") { found } }', {}, bearer(KEY_ALL))))).errors[0].extensions.code).toBe('STORE_NOT_FOUND');
    expect((await json(await fetch(i.url, post('{ store(name: "no-such-store") { name } }', {}, bearer(KEY_ALL))))).data.store).toBeNull();
    const TASKS = '{ tasks { id stores { store } } }';
    const mine = await json(await fetch(i.url, post(TASKS, {}, bearer(KEY_A))));
    expect(mine.errors).toBeUndefined();
    expect(new Set(mine.data.tasks.flatMap((t: any) => t.stores.map((s: any) => s.store)))).toEqual(new Set(['words']));
    const every = await json(await fetch(i.url, post(TASKS, {}, bearer(KEY_ALL))));
    expect(new Set(every.data.tasks.flatMap((t: any) => t.stores.map((s: any) => s.store)))).toEqual(new Set(['words', 'secrets']));
  });

  it('lets a key read the stores it names and no other, however it is sent (Bearer, x-api-key, Basic password)', async () => {
    const i = await served({ auth: { apiKeys: API_KEYS } });
    for (const headers of [bearer(KEY_A), { 'x-api-key': KEY_A }, basic('any-user', KEY_A)]) {
      const mine = await json(await fetch(i.url, post(GET, { k: KEYS[1] }, headers)));
      expect(mine.errors).toBeUndefined();
      expect(mine.data.get).toEqual({ value: { n: 1 }, found: true });
      const theirs = await json(await fetch(i.url, post(GET_OTHER, { k: 'x' }, headers)));
      expect(theirs.errors[0].extensions.code).toBe('FORBIDDEN');
      expect(theirs.errors[0].message).not.toContain('words'); // says nothing of what the key may read
      // The listing shows only what it may read.
      const listed = await json(await fetch(i.url, post('{ stores { name } }', {}, headers)));
      expect(listed.data.stores.map((s: any) => s.name)).toEqual(['words']);
    }
    const all = await json(await fetch(i.url, post('{ stores { name } }', {}, bearer(KEY_ALL))));
    expect(all.data.stores.map((s: any) => s.name).sort()).toEqual(['secrets', 'words']);
    // Every kind of read is checked: ranges, prefixes, batches and subscriptions too.
    for (const query of [
      '{ range(store: "secrets") { edges { cursor } } }',
      '{ prefix(store: "secrets", prefix: "a") { edges { cursor } } }',
      '{ getMany(store: "secrets", keys: ["a"]) { entries { found } } }',
    ]) {
      expect((await json(await fetch(i.url, post(query, {}, bearer(KEY_A))))).errors[0].extensions.code).toBe('FORBIDDEN');
    }
    const sse = await fetch(i.url, post('subscription { changes(store: "secrets", keys: ["a"]) { key } }', {}, { ...bearer(KEY_A), accept: 'text/event-stream' }));
    expect(await sse.text()).toContain('FORBIDDEN');
  });

  it('refuses a wrong key, a malformed header and an unknown scheme with 401, and keeps serving the right ones', async () => {
    const i = await served({ auth: { apiKeys: API_KEYS } });
    for (const headers of [bearer('not-a-key-at-all-000000'), { 'x-api-key': 'nope' }, basic('u', 'wrong'), { authorization: 'Digest abc' }, { authorization: 'Bearer' }]) {
      const answer = await fetch(i.url, post(GET, { k: KEYS[0] }, headers));
      expect(answer.status, JSON.stringify(headers)).toBe(401);
      expect((await json(answer)).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
    expect((await json(await fetch(i.url, post(GET, { k: KEYS[0] }, bearer(KEY_A))))).data.get.found).toBe(true);
  });

  it('refuses a key file entry without a key, and a short key, naming no value', () => {
    const attempt = (entries: unknown) => {
      try {
        createGateway({ provider: new StaticStateProvider({ stores: [STORE] }), auth: { apiKeys: entries as never } });
        return undefined;
      } catch (error) {
        return error;
      }
    };
    const short = attempt([{ name: 'x', key: 'short-secret', stores: ['*'] }]);
    expect(isIqgateError(short, 'INVALID_CONFIG')).toBe(true);
    expect(String((short as Error).message)).not.toContain('short-secret');
    expect(isIqgateError(attempt([{ name: 'x', stores: ['*'] }]), 'INVALID_CONFIG')).toBe(true);
  });
});

describe('the request gate with JWTs', () => {
  it('admits a signed token for its stores only, and refuses expired, foreign-audience, forged and unsigned ones', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const other = await generateKeyPair('ES256');
    const i = await served({ auth: { jwt: { publicKey: await exportSPKI(publicKey), issuer: 'https://idp.example', audience: 'iqgate' } } });
    const sign = (claims: Record<string, unknown>, options: { key?: CryptoKey; audience?: string; expires?: string } = {}) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'ES256' }).setSubject('svc-1').setIssuer('https://idp.example').setAudience(options.audience ?? 'iqgate')
        .setIssuedAt().setExpirationTime(options.expires ?? '5m').sign(options.key ?? privateKey);

    const token = await sign({ iqgate_stores: ['words'] });
    expect((await json(await fetch(i.url, post(GET, { k: KEYS[2] }, bearer(token))))).data.get).toEqual({ value: { n: 2 }, found: true });
    expect((await json(await fetch(i.url, post(GET_OTHER, { k: 'x' }, bearer(token))))).errors[0].extensions.code).toBe('FORBIDDEN');
    // A space-separated grant, as OAuth scopes are written, and `*` for every store.
    const both = await sign({ iqgate_stores: 'words secrets' });
    expect((await json(await fetch(i.url, post(GET_OTHER, { k: 'x' }, bearer(both))))).data.get.found).toBe(false);
    const none = await sign({});
    expect((await json(await fetch(i.url, post(GET, { k: KEYS[2] }, bearer(none))))).errors[0].extensions.code).toBe('FORBIDDEN');

    const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'x', iqgate_stores: ['*'], aud: 'iqgate', iss: 'https://idp.example' })).toString('base64url')}.`;
    const refused: Array<[string, string]> = [
      [await sign({ iqgate_stores: ['*'] }, { expires: '-1m' }), 'expired'],
      [await sign({ iqgate_stores: ['*'] }, { audience: 'someone-else' }), 'claim aud'],
      [await sign({ iqgate_stores: ['*'] }, { key: other.privateKey }), 'bad signature'],
      [`${unsigned}AAAA`, ''],
    ];
    for (const [bad, why] of refused) {
      const answer = await fetch(i.url, post(GET, { k: KEYS[2] }, bearer(bad)));
      expect(answer.status).toBe(401);
      const body = await json(answer);
      expect(body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(body.errors[0].message).toContain(why);
      expect(body.errors[0].message).not.toContain(bad); // the token is never echoed
    }
  });
});

describe('what the gate refuses before any resolver runs', () => {
  it('refuses a cross-site GET operation or a non-JSON POST without a preflight header (CSRF), and serves them with one', async () => {
    const i = await served({ auth: { anonymous: true } });
    const getUrl = `${i.url}?query=${encodeURIComponent('{ instance { state } }')}`;
    const plain = await fetch(getUrl);
    expect(plain.status).toBe(403);
    expect((await json(plain)).errors[0].extensions.code).toBe('CSRF_CHECK_FAILED');
    expect((await fetch(getUrl, { headers: { 'x-graphql-yoga-csrf': '1' } })).status).toBe(200);
    const form = await fetch(i.url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ query: '{ instance { state } }' }) });
    expect(form.status).toBe(403);
    // Not at the endpoint with a trailing slash either (yoga serves it; the check went by the exact path).
    expect((await fetch(`${i.url}/?query=${encodeURIComponent('{ instance { state } }')}`)).status).toBe(404);
    expect((await fetch(`${i.url}/`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `query=${encodeURIComponent('{ instance { state } }')}` })).status).toBe(404);
  });

  it('answers 413 to a body over maxBodyBytes, declared or chunked, and goes on serving', async () => {
    const i = await served({ auth: { anonymous: true }, maxBodyBytes: 10_000 });
    const big = JSON.stringify({ query: GET, variables: { k: 'x'.repeat(20_000) } });
    const declared = await fetch(i.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
    expect(declared.status).toBe(413);
    expect((await json(declared)).errors[0].extensions.code).toBe('BODY_TOO_LARGE');
    const port = Number(new URL(i.url).port);
    const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/graphql', method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      });
      req.on('error', reject);
      for (let k = 0; k < 20; k++) req.write(big.slice(k * 1000, (k + 1) * 1000));
      req.end(big.slice(20_000));
    });
    expect(chunked.status).toBe(413);
    expect(JSON.parse(chunked.body).errors[0].extensions.code).toBe('BODY_TOO_LARGE');
    // A small chunked body still reaches yoga, and the gateway answers as before.
    expect((await json(await fetch(i.url, post(GET, { k: KEYS[0] })))).data.get.found).toBe(true);
  });

  it('counts the entries asked through variables, which armor cannot price: QUERY_TOO_COSTLY past maxEntriesPerRequest', async () => {
    const i = await served({ auth: { anonymous: true }, maxEntriesPerRequest: 10 });
    const many = 'query ($ks: [Key!]!) { getMany(store: "words", keys: $ks) { entries { found } } }';
    expect((await json(await fetch(i.url, post(many, { ks: KEYS.slice(0, 10) })))).data.getMany.entries).toHaveLength(10);
    expect((await json(await fetch(i.url, post(many, { ks: KEYS.slice(0, 11) })))).errors[0].extensions.code).toBe('QUERY_TOO_COSTLY');
    const page = 'query ($n: Int) { range(store: "words", first: $n) { edges { cursor } } }';
    expect((await json(await fetch(i.url, post(page, { n: 11 })))).errors[0].extensions.code).toBe('QUERY_TOO_COSTLY');
    // Two fields of one request share the budget.
    const two = 'query ($ks: [Key!]!) { a: getMany(store: "words", keys: $ks) { entries { found } } b: getMany(store: "words", keys: $ks) { entries { found } } }';
    expect((await json(await fetch(i.url, post(two, { ks: KEYS.slice(0, 6) })))).errors[0].extensions.code).toBe('QUERY_TOO_COSTLY');
  });

  it('limits each client to its rate (429 with Retry-After), one client not using up another', async () => {
    const i = await served({ auth: { apiKeys: API_KEYS }, rateLimit: { requestsPerSecond: 0.5, burst: 2 } });
    const statuses: number[] = [];
    for (let k = 0; k < 3; k++) statuses.push((await fetch(i.url, post(GET, { k: KEYS[0] }, bearer(KEY_A)))).status);
    expect(statuses).toEqual([200, 200, 429]);
    const limited = await fetch(i.url, post(GET, { k: KEYS[0] }, bearer(KEY_A)));
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await json(limited)).errors[0].extensions.code).toBe('RATE_LIMITED');
    expect((await fetch(i.url, post(GET, { k: KEYS[0] }, bearer(KEY_ALL)))).status).toBe(200);
  });

  it('does not exempt a client that sets the forwarded marker itself (anonymous gateway, no cluster secret)', async () => {
    const i = await served({ auth: { anonymous: true }, rateLimit: { requestsPerSecond: 0.5, burst: 1 } });
    const marked = () => fetch(i.url, post(GET, { k: KEYS[0] }, { [FORWARDED_HEADER]: '1' }));
    expect((await marked()).status).toBe(200);
    expect((await marked()).status).toBe(429);
  });

  it('holds each client to maxSubscriptionsPerClient open subscriptions, and frees a slot when one ends', async () => {
    const i = await served({ auth: { apiKeys: API_KEYS }, maxSubscriptionsPerClient: 1 });
    const subscribe = () => fetch(i.url, post('subscription { changes(store: "words", keys: ["key-1"]) { key } }', {}, { ...bearer(KEY_A), accept: 'text/event-stream' }));
    const first = await subscribe();
    const reader = first.body!.getReader();
    await reader.read(); // the stream is open
    const second = await (await subscribe()).text();
    expect(second).toContain('TOO_MANY_SUBSCRIPTIONS');
    // Another client has its own slots.
    const other = await fetch(i.url, post('subscription { changes(store: "words", keys: ["key-1"]) { key } }', {}, { ...bearer(KEY_ALL), accept: 'text/event-stream' }));
    const otherReader = other.body!.getReader();
    expect(new TextDecoder().decode((await otherReader.read()).value)).not.toContain('TOO_MANY_SUBSCRIPTIONS');
    await otherReader.cancel();
    await reader.cancel();
    // The slot comes back once the server sees the client go.
    let third = '';
    for (let attempt = 0; attempt < 50; attempt++) {
      const answer = await subscribe();
      const r = answer.body!.getReader();
      third = new TextDecoder().decode((await r.read()).value);
      await r.cancel();
      if (!third.includes('TOO_MANY_SUBSCRIPTIONS')) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(third).not.toContain('TOO_MANY_SUBSCRIPTIONS');
  });

  it('refuses a subscription sent without Accept: text/event-stream before it takes a slot (yoga would answer 406 and never end the feed)', async () => {
    const i = await served({ auth: { apiKeys: API_KEYS }, maxSubscriptionsPerClient: 1 });
    const SUBSCRIBE = 'subscription { changes(store: "words", keys: ["key-1"]) { key } }';
    for (const accept of ['application/json', 'application/graphql-response+json']) {
      const answer = await json(await fetch(i.url, post(SUBSCRIBE, {}, { ...bearer(KEY_A), accept })));
      expect(answer.errors?.[0]?.extensions?.code, accept).toBe('INVALID_ARGUMENT');
      expect(answer.errors[0].message).toContain('Accept: text/event-stream');
    }
    // The client's one slot is still free: a proper subscription opens.
    const sse = await fetch(i.url, post(SUBSCRIBE, {}, { ...bearer(KEY_A), accept: 'text/event-stream' }));
    const reader = sse.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).not.toContain('TOO_MANY_SUBSCRIPTIONS');
    await reader.cancel();
  });

  it('production turns GraphiQL and introspection off', async () => {
    const i = await served({ auth: { anonymous: true }, production: true });
    const schema = await json(await fetch(i.url, post('{ __schema { types { name } } }')));
    expect(schema.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const page = await fetch(i.url, { headers: { accept: 'text/html' } });
    expect(page.headers.get('content-type') ?? '').not.toContain('text/html');
    // Queries are served as before.
    expect((await json(await fetch(i.url, post(GET, { k: KEYS[0] })))).data.get.found).toBe(true);
  });
});

describe('anonymous access', () => {
  it('is the default on loopback only: listenGateway refuses another address unless anonymous is chosen by name', async () => {
    const provider = new StaticStateProvider({ stores: [STORE] });
    const open = createGateway({ provider, logging: false });
    await expect(listenGateway(open, { port: 0, host: '0.0.0.0' })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    const local = await listenGateway(open, { port: 0, host: '127.0.0.1' });
    await local.close();
    const chosen = await listenGateway(createGateway({ provider, logging: false, auth: { anonymous: true } }), { port: 0, host: '0.0.0.0' });
    await chosen.close();
    const keyed = await listenGateway(createGateway({ provider, logging: false, auth: { apiKeys: API_KEYS } }), { port: 0, host: '0.0.0.0' });
    await keyed.close();
  });

  it('still refuses credentials that are presented and wrong', async () => {
    const i = await served({ auth: { anonymous: true, apiKeys: API_KEYS } });
    expect((await json(await fetch(i.url, post(GET, { k: KEYS[0] })))).data.get.found).toBe(true);
    expect((await fetch(i.url, post(GET, { k: KEYS[0] }, bearer('wrong-key-0000000000000')))).status).toBe(401);
  });
});

describe('instances that authenticate each other (the cluster secret)', () => {
  const SECRET = 'a-cluster-secret-of-at-least-32-chars';
  const GET_MANY = 'query ($keys: [Key!]!) { getMany(store: "words", keys: $keys) { entries { key found failure { reason message } } } }';

  it('signs each forward, so a client with a key reads keys of every partition from either instance', async () => {
    const { a, b } = await instancePair({ auth: { apiKeys: API_KEYS, clusterSecret: SECRET } }, [OTHER]);
    opened.push(a, b);
    for (const [self, other] of [[a, b], [b, a]] as const) {
      const before = other.requests.length;
      const result = await json(await fetch(self.url, post(GET_MANY, { keys: KEYS }, bearer(KEY_A))));
      expect(result.errors).toBeUndefined();
      expect(result.data.getMany.entries.every((e: any) => e.found && e.failure === null)).toBe(true);
      expect(other.requests.slice(before)).toEqual([expect.stringMatching(/^v1 \d+ [\w-]+$/)]);
    }
    // The owner checks the client's grant before forwarding: a key for words only never reaches secrets anywhere.
    expect((await json(await fetch(a.url, post(GET_MANY.replace('"words"', '"secrets"'), { keys: KEYS }, bearer(KEY_A))))).errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('refuses a forward that is marked but not signed, signed with another secret, replayed with another body, or stale', async () => {
    const { a, b } = await instancePair({ auth: { apiKeys: API_KEYS, clusterSecret: SECRET } });
    opened.push(a, b);
    const body = JSON.stringify({ query: GET_MANY, variables: { keys: KEYS } });
    const path = new URL(b.url).pathname;
    const forged = [
      '1',
      signForward('another-secret-of-at-least-32-characters', 'POST', path, Buffer.from(body)),
      signForward(SECRET, 'POST', path, Buffer.from(JSON.stringify({ query: GET_MANY, variables: { keys: ['other'] } }))),
      signForward(SECRET, 'POST', path, Buffer.from(body), Date.now() - SKEW_MS - 1000),
    ];
    for (const marker of forged) {
      const answer = await fetch(b.url, { method: 'POST', headers: { 'content-type': 'application/json', [FORWARDED_HEADER]: marker }, body });
      expect(answer.status, marker).toBe(401);
      expect((await json(answer)).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
    // The real thing is answered from b's own partitions only (a forward is never forwarded again).
    const signed = await fetch(b.url, { method: 'POST', headers: { 'content-type': 'application/json', [FORWARDED_HEADER]: signForward(SECRET, 'POST', path, Buffer.from(body)) }, body });
    const entries = (await json(signed)).data.getMany.entries;
    KEYS.forEach((key, i) => expect(entries[i].found, key).toBe(partitionOf(key) >= 2));
  });

  it('fails a forward with FORWARD_FAILED when the owner redirects, answers too much, or is no http(s) URL, and never follows it elsewhere', async () => {
    const self = await instance([0, 1]);
    opened.push(self);
    let elsewhereCalls = 0;
    const elsewhere = await listen((_req, res) => {
      elsewhereCalls++;
      res.end('{}');
    });
    const redirecting = await listen((_req, res) => {
      res.writeHead(307, { location: elsewhere.url });
      res.end();
    });
    const flooding = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      let sent = 0;
      const more = (): void => {
        while (sent < 40 && res.write(chunk)) sent++;
        if (sent < 40) res.once('drain', more);
        else res.end();
      };
      res.on('error', () => undefined);
      more();
    });
    try {
      const remoteKey = KEYS.find((k) => partitionOf(k) === 2)!;
      for (const [owner, why] of [[redirecting.url, 'redirect'], [flooding.url, 'more than'], ['file:///etc/passwd', 'not http(s)']] as const) {
        self.provider.setRemoteOwner(STORE.name, 2, owner);
        const result = await json(await fetch(self.url, post(GET_MANY, { keys: [remoteKey, KEYS.find((k) => partitionOf(k) === 0)!] })));
        expect(result.data.getMany.entries[0].failure.reason, owner).toBe('FORWARD_FAILED');
        expect(result.data.getMany.entries[0].failure.message, owner).toContain(why);
        expect(result.data.getMany.entries[1].found).toBe(true); // the local key is served all the same
      }
      expect(elsewhereCalls).toBe(0);
    } finally {
      for (const server of [elsewhere, redirecting, flooding]) await close(server.server);
    }
  });

  it('passes on no text of an owner\'s error, only its code', async () => {
    const self = await instance([0, 1]);
    opened.push(self);
    const lying = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ errors: [{ message: '<script>phish()</script> log in at evil.example', extensions: { code: 'STORE_NOT_FOUND' } }] }));
    });
    try {
      self.provider.setRemoteOwner(STORE.name, 2, lying.url);
      const result = await json(await fetch(self.url, post(GET_MANY, { keys: [KEYS.find((k) => partitionOf(k) === 2)!] })));
      const failure = result.data.getMany.entries[0].failure;
      expect(failure.reason).toBe('FORWARD_FAILED');
      expect(failure.message).toContain('STORE_NOT_FOUND');
      expect(failure.message).not.toContain('evil.example');
    } finally {
      await close(lying.server);
    }
  });
});
