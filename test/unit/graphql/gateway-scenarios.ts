/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
/**
 * Gateway behaviour shared by the unit tests (yoga.fetch over the in-memory engine) and the
 * integration tests (a real node:http server over LevelDB): each scenario takes a fixture and
 * a way to send requests.
 */
import { expect } from 'vitest';
import { Position } from '../../../src/store/position.js';
import { gql, subscribe, type Fetch, type Fixture } from './gateway-fixture.js';

export interface Client {
  readonly fetch: Fetch;
  readonly url: string;
}

const KEY_FIELDS = 'key value found partition position failure { reason }';

/** Seeds committed data, an uncommitted overwrite + insert + delete, and an aborted write. */
export async function seedIsolation(f: Fixture): Promise<void> {
  f.put('words', 'apple', { n: 1 });
  f.put('words', 'banana', { n: 2 });
  f.put('words', 'cherry', { n: 3 });
  f.put('words', 'gone', { n: 4 });
  await f.commit();
  f.put('words', 'doomed', { n: 666 });
  for (const task of f.tasks) task.flush();
  f.abort();
  f.put('words', 'apple', { n: 10 });
  f.put('words', 'avocado', { n: 5 });
  f.remove('words', 'gone');
}

export async function checkIsolation(client: Client): Promise<void> {
  const run = (readCommitted: boolean) =>
    gql<Record<string, any>>(
      client.fetch,
      client.url,
      `query($rc: Boolean) {
        apple: get(store: "words", key: "apple", readCommitted: $rc) { ${KEY_FIELDS} }
        gone: get(store: "words", key: "gone", readCommitted: $rc) { ${KEY_FIELDS} }
        doomed: get(store: "words", key: "doomed", readCommitted: $rc) { ${KEY_FIELDS} }
        many: getMany(store: "words", keys: ["avocado", "banana", "doomed"], readCommitted: $rc) { entries { key value found } position }
        range: range(store: "words", from: "a", to: "c", readCommitted: $rc) { edges { node { key value } } }
        desc: range(store: "words", order: DESC, readCommitted: $rc) { edges { node { key } } }
        prefix: prefix(store: "words", prefix: "a", readCommitted: $rc) { edges { node { key value } } }
      }`,
      { rc: readCommitted },
    );
  const committed = await run(true);
  expect(committed.errors).toBeUndefined();
  const c = committed.data!;
  expect(c.apple).toMatchObject({ key: 'apple', value: { n: 1 }, found: true, failure: null });
  expect(c.apple.position).toBeTypeOf('object');
  expect(c.gone).toMatchObject({ value: { n: 4 }, found: true });
  expect(c.doomed).toMatchObject({ value: null, found: false, failure: null });
  expect(c.many.entries).toEqual([
    { key: 'avocado', value: null, found: false },
    { key: 'banana', value: { n: 2 }, found: true },
    { key: 'doomed', value: null, found: false },
  ]);
  expect(c.range.edges.map((e: any) => e.node.key)).toEqual(['apple', 'banana']);
  expect(c.desc.edges.map((e: any) => e.node.key)).toEqual(['gone', 'cherry', 'banana', 'apple']);
  expect(c.prefix.edges).toEqual([{ node: { key: 'apple', value: { n: 1 } } }]);

  const uncommitted = await run(false);
  expect(uncommitted.errors).toBeUndefined();
  const u = uncommitted.data!;
  expect(u.apple).toMatchObject({ value: { n: 10 }, found: true });
  expect(u.gone).toMatchObject({ value: null, found: false });
  expect(u.doomed).toMatchObject({ value: null, found: false });
  expect(u.many.entries.map((e: any) => e.found)).toEqual([true, true, false]);
  expect(u.range.edges.map((e: any) => e.node.key)).toEqual(['apple', 'avocado', 'banana']);
  expect(u.desc.edges.map((e: any) => e.node.key)).toEqual(['cherry', 'banana', 'avocado', 'apple']);
  expect(u.prefix.edges).toEqual([
    { node: { key: 'apple', value: { n: 10 } } },
    { node: { key: 'avocado', value: { n: 5 } } },
  ]);
}

/** Every serde's natural GraphQL key form works for lookups and ranges. */
export async function checkKeyTyping(f: Fixture, client: Client): Promise<void> {
  for (const n of [-5, -1, 0, 3, 1000]) f.put('ints', n, `int ${n}`);
  for (const n of [-(2n ** 62n), -1n, 2n ** 40n]) f.put('longs', n, Number(n) / 2);
  for (const x of [-2.5, 0.25, 1e10]) f.put('floats', x, Buffer.from([1, 2, 3]));
  f.put('blobs', Buffer.from([0, 255]), 9007199254740993n);
  await f.commit();
  const result = await gql<Record<string, any>>(
    client.fetch,
    client.url,
    `{
      int: get(store: "ints", key: -1) { key value }
      ints: range(store: "ints", from: -5, to: 3) { edges { node { key } } }
      long: get(store: "longs", key: "-4611686018427387904") { key value }
      longs: range(store: "longs") { edges { node { key } } }
      float: get(store: "floats", key: 0.25) { key value }
      floats: range(store: "floats", order: DESC) { edges { node { key } } }
      blob: get(store: "blobs", key: "AP8=") { key value }
    }`,
  );
  expect(result.errors).toBeUndefined();
  const d = result.data!;
  expect(d.int).toEqual({ key: -1, value: 'int -1' });
  expect(d.ints.edges.map((e: any) => e.node.key)).toEqual([-5, -1, 0, 3]);
  expect(d.long).toEqual({ key: '-4611686018427387904', value: -(2 ** 61) });
  // Kafka's int64 (LongSerializer) orders keys by their two's complement bytes, negatives last:
  // stores that need numeric order use sortableInt64, as ints and floats do here.
  expect(d.longs.edges.map((e: any) => e.node.key)).toEqual(['1099511627776', '-4611686018427387904', '-1']);
  expect(d.float).toEqual({ key: 0.25, value: 'AQID' });
  expect(d.floats.edges.map((e: any) => e.node.key)).toEqual([1e10, 0.25, -2.5]);
  expect(d.blob).toEqual({ key: 'AP8=', value: '9007199254740993' });
}

/** Pages through the whole store with a small page size; every key once, in order. */
export async function checkPagination(f: Fixture, client: Client, count: number): Promise<void> {
  const keys = Array.from({ length: count }, (_, i) => `page-${String(i).padStart(4, '0')}`);
  for (const key of keys) f.put('words', key, { key });
  await f.commit();
  const touched = new Set(keys.map((key) => f.partitionOf('words', key)));
  expect(touched.size).toBeGreaterThanOrEqual(3);

  for (const order of ['ASC', 'DESC'] as const) {
    for (const direction of ['forward', 'backward'] as const) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pin: unknown = null;
      for (let pages = 0; pages < count; pages++) {
        const args = direction === 'forward' ? 'first: 7, after: $cursor' : 'last: 7, before: $cursor';
        const response: any = await gql(
          client.fetch,
          client.url,
          `query($cursor: String, $pin: Position) {
            prefix(store: "words", prefix: "page-", order: ${order}, ${args}, positionBound: $pin) {
              edges { cursor node { key partition } }
              pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
              position
              partitions { partition failure { reason } }
            }
          }`,
          { cursor, pin },
        );
        expect(response.errors).toBeUndefined();
        const page = response.data.prefix;
        expect(page.partitions.every((p: any) => p.failure === null)).toBe(true);
        pin ??= page.position;
        const pageKeys = page.edges.map((e: any) => e.node.key);
        if (direction === 'forward') seen.push(...pageKeys);
        else seen.unshift(...pageKeys);
        const more = direction === 'forward' ? page.pageInfo.hasNextPage : page.pageInfo.hasPreviousPage;
        if (!more) break;
        cursor = direction === 'forward' ? page.pageInfo.endCursor : page.pageInfo.startCursor;
      }
      const expected = order === 'ASC' ? keys : [...keys].reverse();
      expect(seen, `${order} ${direction}`).toEqual(expected);
    }
  }
}

/** Bounds: reached → served; ahead with no wait → NOT_UP_TO_BOUND; ahead with a wait → served after the commit. */
export async function checkBounds(f: Fixture, client: Client): Promise<void> {
  f.put('words', 'bounded', { v: 1 });
  await f.commit();
  const partition = f.partitionOf('words', 'bounded');
  const next = f.nextOffsets()[partition]!;
  const reached = { input: { [partition]: next - 1 } };
  const ahead = { input: { [partition]: next } };
  const query = `query($b: Position, $wait: Int) {
    get(store: "words", key: "bounded", positionBound: $b, boundTimeoutMs: $wait) { value position failure { reason } }
  }`;
  const ok: any = await gql(client.fetch, client.url, query, { b: reached, wait: 0 });
  expect(ok.data.get).toMatchObject({ value: { v: 1 }, failure: null });

  const failed: any = await gql(client.fetch, client.url, query, { b: ahead, wait: 0 });
  expect(failed.data.get).toMatchObject({ value: null, position: null, failure: { reason: 'NOT_UP_TO_BOUND' } });

  const waiting = gql<any>(client.fetch, client.url, query, { b: ahead, wait: 20_000 });
  // The request must be parked on the bound before the write lands: wait until the store has a
  // subscriber beyond those of this test (the waiting reader), observed through the instance.
  await waitUntil(() => listenerCount(f, partition) > 0);
  f.put('words', 'bounded', { v: 2 });
  await f.commit();
  const waited = await waiting;
  expect(waited.data.get).toMatchObject({ value: { v: 2 }, failure: null });
  expect(waited.data.get.position.input[String(partition)]).toBe(next);
}

/** How many change listeners the partition's store has: a reader waiting on a bound is one. */
function listenerCount(f: Fixture, partition: number): number {
  return f.tasks[partition]!.store('words').listenerCount();
}

export async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Committed changes arrive in order over SSE; a resumed subscription skips what it has seen. */
export async function checkSubscriptions(f: Fixture, client: Client): Promise<void> {
  const query = `subscription($after: Position) {
    changes(store: "words", keys: ["sub-a", "sub-b"], after: $after) { key value deleted committed partition position resumeAfter }
  }`;
  const sub = await subscribe<any>(client.fetch, client.url, query);
  await waitForListener(f, 'sub-a');
  f.put('words', 'sub-a', 1);
  f.put('words', 'other', 1);
  await f.commit();
  f.put('words', 'sub-b', 2);
  f.put('words', 'sub-a', 3);
  f.put('words', 'sub-a', 4);
  f.remove('words', 'sub-b');
  // Uncommitted changes are not on a committed feed until the commit.
  await f.commit();
  // The record cache may fold repeated writes of a key within one commit; what must hold is
  // commit order and the final state of each key.
  const events: any[] = [];
  while (!(events.some((e) => e.key === 'sub-b' && e.deleted) && events.some((e) => e.key === 'sub-a' && e.value === 4))) {
    events.push((await sub.next()).changes);
    expect(events.length).toBeLessThanOrEqual(5);
  }
  const aValues = events.filter((e) => e.key === 'sub-a').map((e) => e.value);
  expect(aValues[0]).toBe(1);
  expect(aValues.at(-1)).toBe(4);
  expect([...aValues].sort()).toEqual(aValues);
  expect(events.every((e) => e.committed && e.key !== 'other')).toBe(true);
  expect(events.filter((e) => e.key === 'sub-b').at(-1)).toMatchObject({ deleted: true, value: null });
  const last = events.at(-1);
  const resumeAfter = last.resumeAfter;
  sub.close();
  // Closing the stream ends the server-side subscription and releases its store listeners.
  const partitionA = f.partitionOf('words', 'sub-a');
  await waitUntil(() => listenerCount(f, partitionA) === 0);

  // Resume: a restore that replays already-seen offsets is skipped; a new commit comes through.
  const resumed = await subscribe<any>(client.fetch, client.url, query, { after: resumeAfter });
  await waitForListener(f, 'sub-a');
  // A replay of an already-seen commit (a restore at the same position) is at or below the
  // resume position and must be skipped; the next new commit must come through first.
  const lastA = events.filter((e) => e.key === 'sub-a').at(-1);
  await f.tasks[partitionA]!.restore('words', [{ key: Buffer.from('sub-a'), value: Buffer.from('99') }], 1, Position.fromJSON(lastA.position));
  f.put('words', 'sub-a', 5);
  await f.commit();
  const next = (await resumed.next()).changes;
  expect(next).toMatchObject({ key: 'sub-a', value: 5 });
  resumed.close();
}

/**
 * `initial: true`: the current state first (a prefix: partition after partition, key-byte
 * order within each; keys: absent ones as deletes), then the live changes, the first of them
 * committed right after subscribing; a resume in the middle of a partition lists it again.
 */
export async function checkInitialSubscriptions(f: Fixture, client: Client): Promise<void> {
  const keys = Array.from({ length: 16 }, (_, i) => `init-${i}`);
  for (const key of keys) f.put('words', key, { key });
  await f.commit();
  const partitionOf = (key: string) => f.partitionOf('words', key);
  const listing = [...keys].sort((a, b) => partitionOf(a) - partitionOf(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const partitions = [...new Set(listing.map(partitionOf))];
  // The cut: the second entry of the second partition listed.
  const cutPartition = partitions[1]!;
  const cut = listing.findIndex((key) => partitionOf(key) === cutPartition) + 1;
  expect(partitionOf(listing[cut]!)).toBe(cutPartition);
  const query = `subscription($after: Position) {
    changes(store: "words", prefix: "init-", initial: true, after: $after) { key value deleted initial partition position resumeAfter }
  }`;
  const listened = () => f.tasks.every((task) => task.store('words').listenerCount() > 0);
  const released = () => f.tasks.every((task) => task.store('words').listenerCount() === 0);

  const first = await subscribe<any>(client.fetch, client.url, query);
  const seen: any[] = [];
  for (let i = 0; i <= cut; i++) seen.push((await first.next()).changes);
  expect(seen.map((e) => [e.key, e.partition, e.initial, e.deleted])).toEqual(listing.slice(0, cut + 1).map((key) => [key, partitionOf(key), true, false]));
  expect(seen[0].value).toEqual({ key: seen[0].key });
  first.close();
  await waitUntil(released);

  // Resumed from the middle of the second partition: the first is skipped (it did not move and
  // its last entry was delivered), the second is listed again from its start.
  const resumed = await subscribe<any>(client.fetch, client.url, query, { after: seen[cut].resumeAfter });
  await waitUntil(listened);
  f.put('words', 'init-new', { key: 'init-new' });
  await f.commit();
  const relisted = listing.filter((key) => partitionOf(key) !== partitions[0]);
  const events: any[] = [];
  for (let i = 0; i <= relisted.length; i++) events.push((await resumed.next()).changes);
  expect(events.map((e) => [e.key, e.initial])).toEqual([...relisted.map((key) => [key, true]), ['init-new', false]]);
  expect(events.at(-1)).toMatchObject({ value: { key: 'init-new' }, deleted: false, partition: partitionOf('init-new') });
  resumed.close();
  await waitUntil(released);

  const byKeys = await subscribe<any>(client.fetch, client.url, 'subscription { changes(store: "words", keys: ["init-3", "init-absent"], initial: true) { key value deleted initial } }');
  const initial = [(await byKeys.next()).changes, (await byKeys.next()).changes];
  expect(initial).toHaveLength(2);
  expect(initial).toContainEqual({ key: 'init-3', value: { key: 'init-3' }, deleted: false, initial: true });
  expect(initial).toContainEqual({ key: 'init-absent', value: null, deleted: true, initial: true });
  byKeys.close();
}

function waitForListener(f: Fixture, key: string): Promise<void> {
  const partition = f.partitionOf('words', key);
  return waitUntil(() => listenerCount(f, partition) > 0);
}

/** Bad input gets coded errors, nothing crashes, and the store still serves afterwards. */
export async function checkBadInput(f: Fixture, client: Client): Promise<void> {
  f.put('words', 'still-here', { ok: true });
  await f.commit();
  const codeOf = async (query: string, variables: Record<string, unknown> = {}): Promise<string | undefined> => {
    const response = await gql(client.fetch, client.url, query, variables);
    return response.errors?.[0]?.extensions?.code;
  };
  expect(await codeOf('{ get(store: "nope", key: "a") { value } }')).toBe('STORE_NOT_FOUND');
  expect(await codeOf('{ get(store: "ints", key: "not-an-int") { value } }')).toBe('INVALID_KEY');
  expect(await codeOf('{ get(store: "longs", key: "12.5") { value } }')).toBe('INVALID_KEY');
  expect(await codeOf('{ get(store: "blobs", key: "***") { value } }')).toBe('INVALID_KEY');
  expect(await codeOf('{ range(store: "words", from: "z", to: "a") { position } }')).toBe('INVALID_RANGE');
  expect(await codeOf('query($n: Int) { range(store: "words", first: $n) { position } }', { n: 1001 })).toBe('PAGE_SIZE_EXCEEDED');
  const fullPages = Array.from({ length: 8 }, (_, i) => `p${i}: range(store: "words", first: 1000) { edges { cursor node { key value } } }`).join(' ');
  expect(await codeOf(`{ ${fullPages} }`)).toBe('QUERY_TOO_COSTLY');
  expect(await codeOf('{ range(store: "words", after: "bogus") { position } }')).toBe('INVALID_CURSOR');
  expect(await codeOf('{ range(store: "words", first: 1, last: 1) { position } }')).toBe('INVALID_ARGUMENT');
  expect(await codeOf('{ get(store: "words", key: "a", boundTimeoutMs: -1) { value } }')).toBe('INVALID_ARGUMENT');
  expect(await codeOf('query($p: Position) { get(store: "words", key: "a", positionBound: $p) { value } }', { p: [1] })).toBe('INVALID_ARGUMENT');
  expect(await codeOf('{ range(store: "words", first: 1000) { edges { cursor node { key value } } } }')).toBeUndefined();
  // The schema has no cycles, so only a nonsense selection nests past the limit; armor rejects
  // it on depth before field validation runs.
  expect(await codeOf('{ stores { localPartitions { a { b { c { d { e { f { g { h } } } } } } } } } }')).toBe('QUERY_TOO_DEEP');
  const aliases = Array.from({ length: 40 }, (_, i) => `a${i}: instance { state }`).join(' ');
  expect(await codeOf(`{ ${aliases} }`)).toBe('TOO_MANY_ALIASES');
  const ok: any = await gql(client.fetch, client.url, '{ get(store: "words", key: "still-here") { value } }');
  expect(ok).toEqual({ data: { get: { value: { ok: true } } } });
}
