/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
/**
 * Scatter-gather of range and prefix pages between instances: two gateways over disjoint
 * partitions (routing-fixture.ts). Either instance pages through every partition, merging its
 * own page with the owner's in key-byte order, forward and backward, every key exactly once;
 * an owner that is down fails only its partitions (FORWARD_FAILED); nothing is forwarded twice.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FORWARDED_HEADER } from '../../../src/graphql/forward-request.js';
import { serdes } from '../../../src/store/serdes.js';
import { gql, type Fetch } from './gateway-fixture.js';
import { byteOrder, dispose, downUrl, instancePair, KEYS, partitionOf, STORE, type Instance } from './routing-fixture.js';

let a: Instance;
let b: Instance;

beforeEach(async () => {
  ({ a, b } = await instancePair());
});

afterEach(async () => {
  await dispose(a);
  await dispose(b);
});

const PAGE_FIELDS = `edges { cursor node { key value partition } }
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  position
  partitions { partition position failure { reason message owner } executionInfo }`;

interface Paged {
  readonly keys: string[];
  readonly pages: any[];
}

/**
 * Pages through a scan `n` entries at a time, asking `via[i % via.length]` for page i, forward
 * (first/after, appending) or backward (last/before, prepending), until the connection says
 * there is nothing more. Every page but the last must be full.
 */
async function pageThrough(via: readonly Instance[], scan: string, n: number, direction: 'forward' | 'backward'): Promise<Paged> {
  const forward = direction === 'forward';
  const query = `query ($n: Int, $c: String) { page: ${scan.replace(')', forward ? ', first: $n, after: $c)' : ', last: $n, before: $c)')} { ${PAGE_FIELDS} } }`;
  let keys: string[] = [];
  const pages: any[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 200; i++) {
    const result: any = await gql(fetch as Fetch, via[i % via.length]!.url, query, { n, c: cursor });
    expect(result.errors).toBeUndefined();
    const page = result.data.page;
    pages.push(page);
    const pageKeys: string[] = page.edges.map((e: any) => e.node.key);
    keys = forward ? [...keys, ...pageKeys] : [...pageKeys, ...keys];
    // A cursor given means its entry lies beyond this page, in the other direction.
    expect(forward ? page.pageInfo.hasPreviousPage : page.pageInfo.hasNextPage).toBe(cursor !== null);
    if (!(forward ? page.pageInfo.hasNextPage : page.pageInfo.hasPreviousPage)) return { keys, pages };
    expect(page.edges).toHaveLength(n);
    cursor = forward ? page.pageInfo.endCursor : page.pageInfo.startCursor;
  }
  throw new Error('paging did not end');
}

/** Every edge carries its own key's value and partition. */
function expectEdgesConsistent(pages: readonly any[]): void {
  for (const page of pages) {
    for (const edge of page.edges) {
      expect(edge.node).toEqual({ key: edge.node.key, value: { n: KEYS.indexOf(edge.node.key) }, partition: partitionOf(edge.node.key) });
    }
  }
}

const ALL = byteOrder(KEYS);
const UNDER_PREFIX = byteOrder(KEYS.filter((k) => k.startsWith('key-')));

describe('range and prefix pages gathered from every instance that hosts a partition', () => {
  it('the test keys, and those under the prefix, cover every partition', () => {
    expect(KEYS.length).toBeGreaterThanOrEqual(40);
    expect(UNDER_PREFIX.length).toBeGreaterThanOrEqual(40);
    expect(new Set(UNDER_PREFIX.map(partitionOf))).toEqual(new Set([0, 1, 2, 3]));
  });

  for (const direction of ['forward', 'backward'] as const) {
    it(`pages ${direction} through a range over all partitions from either instance, every key once and in order, with pages of 1, 3 and 7`, async () => {
      for (const [self, other] of [[a, b], [b, a]] as const) {
        for (const n of [1, 3, 7]) {
          const before = other.requests.length;
          const { keys, pages } = await pageThrough([self], 'range(store: "words")', n, direction);
          expect(keys).toEqual(ALL);
          expect(pages).toHaveLength(Math.ceil(ALL.length / n));
          expectEdgesConsistent(pages);
          // One POST to the other instance per page, marked as forwarded.
          expect(other.requests.slice(before)).toEqual(pages.map(() => '1'));
          for (const page of pages) {
            expect(page.partitions.map((p: any) => [p.partition, p.failure, p.position !== null])).toEqual([0, 1, 2, 3].map((p) => [p, null, true]));
          }
        }
      }
    });

    it(`pages ${direction} through a prefix over all partitions from either instance, every key under it once and in order, with pages of 1, 3 and 7`, async () => {
      for (const self of [a, b]) {
        for (const n of [1, 3, 7]) {
          const { keys, pages } = await pageThrough([self], 'prefix(store: "words", prefix: "key-")', n, direction);
          expect(keys).toEqual(UNDER_PREFIX);
          expect(pages).toHaveLength(Math.ceil(UNDER_PREFIX.length / n));
          expectEdgesConsistent(pages);
        }
      }
    });
  }

  it('pages in descending order from either instance', async () => {
    const forward = await pageThrough([a], 'range(store: "words", from: "b", to: "z", order: DESC)', 3, 'forward');
    const expected = ALL.filter((k) => k >= 'b' && k <= 'z').reverse();
    expect(forward.keys).toEqual(expected);
    const backward = await pageThrough([b], 'prefix(store: "words", prefix: "key-", order: DESC)', 7, 'backward');
    expect(backward.keys).toEqual([...UNDER_PREFIX].reverse());
  });

  it('continues a pinned listing on the other instance (at its current state there) and goes on reading the snapshot back where it was pinned', async () => {
    const query = 'query ($c: String) { page: range(store: "words", first: 5, after: $c) { edges { cursor node { key } } pageInfo { endCursor } } }';
    const first: any = await gql(fetch as Fetch, a.url, query, { c: null });
    expect(first.errors).toBeUndefined();
    const elsewhere: any = await gql(fetch as Fetch, b.url, query, { c: first.data.page.pageInfo.endCursor });
    expect(elsewhere.errors).toBeUndefined();
    expect(elsewhere.data.page.edges.map((e: any) => e.node.key)).toEqual(ALL.slice(5, 10));
    // b pinned nothing of its own: its cursors still name a's snapshot, which a reads again.
    const back: any = await gql(fetch as Fetch, a.url, query, { c: elsewhere.data.page.pageInfo.endCursor });
    expect(back.errors).toBeUndefined();
    expect(back.data.page.edges.map((e: any) => e.node.key)).toEqual(ALL.slice(10, 15));
    // Once a has let the snapshot go, a cursor naming it is STALE_CURSOR there.
    await a.gateway.dispose();
    const gone: any = await gql(fetch as Fetch, a.url, query, { c: back.data.page.pageInfo.endCursor });
    expect(gone.errors?.map((e: any) => e.extensions.code)).toEqual(['STALE_CURSOR']);
  });

  it('with pinning off (cursorSnapshotTtlMs: 0), a cursor from one instance continues on the other', async () => {
    await dispose(a);
    await dispose(b);
    ({ a, b } = await instancePair({ cursorSnapshotTtlMs: 0 }));
    const forward = await pageThrough([a, b], 'range(store: "words", from: "b", to: "z", order: DESC)', 3, 'forward');
    expect(forward.keys).toEqual(ALL.filter((k) => k >= 'b' && k <= 'z').reverse());
    const backward = await pageThrough([b, a], 'prefix(store: "words", prefix: "key-", order: DESC)', 7, 'backward');
    expect(backward.keys).toEqual([...UNDER_PREFIX].reverse());
  });

  it('asks only the owners of the partitions requested, and reports them in the order asked', async () => {
    const result: any = await gql(fetch as Fetch, a.url, `{ page: range(store: "words", partitions: [3, 0], first: 100) { ${PAGE_FIELDS} } }`);
    expect(result.errors).toBeUndefined();
    expect(result.data.page.edges.map((e: any) => e.node.key)).toEqual(ALL.filter((k) => [0, 3].includes(partitionOf(k))));
    expect(result.data.page.partitions.map((p: any) => [p.partition, p.failure])).toEqual([[3, null], [0, null]]);
    expect(b.requests).toEqual(['1']);
    const local: any = await gql(fetch as Fetch, a.url, `{ page: range(store: "words", partitions: [1]) { ${PAGE_FIELDS} } }`);
    expect(local.data.page.edges.every((e: any) => e.node.partition === 1)).toBe(true);
    expect(b.requests).toEqual(['1']);
  });

  it('forwards the read options: the uncommitted view, the position bound and execution info reach the owner', async () => {
    const key = 'key-uncommitted';
    const partition = partitionOf(key);
    const owner = b.tasks.find((t) => t.store(STORE.name).partition === partition);
    expect(owner, 'the key should fall in one of b\'s partitions; pick another name').toBeDefined();
    owner!.store(STORE.name).put(serdes.string.serialize(key), serdes.json.serialize({ n: -1 }), { topic: 'input', partition, offset: 1000 });
    const query = `query ($rc: Boolean, $bound: Position) { page: prefix(store: "words", prefix: "key-u", readCommitted: $rc, positionBound: $bound, executionInfo: true) { ${PAGE_FIELDS} } }`;

    const committed: any = await gql(fetch as Fetch, a.url, query, { rc: true });
    expect(committed.data.page.edges).toEqual([]);
    const uncommitted: any = await gql(fetch as Fetch, a.url, query, { rc: false });
    expect(uncommitted.data.page.edges.map((e: any) => e.node)).toEqual([{ key, value: { n: -1 }, partition }]);
    const info = uncommitted.data.page.partitions.find((p: any) => p.partition === partition).executionInfo;
    expect(info[0]).toMatch(`forwarded to ${b.url}`);
    expect(info.join(' ')).toMatch('uncommitted view');

    // A bound that the owner's committed data has not reached fails its partition there, alone.
    const bound = { input: { [String(partition)]: 1000 } };
    const bounded: any = await gql(fetch as Fetch, a.url, query, { rc: true, bound });
    expect(bounded.data.page.partitions.map((p: any) => [p.partition, p.failure?.reason ?? null])).toEqual(
      [0, 1, 2, 3].map((p) => [p, p === partition ? 'NOT_UP_TO_BOUND' : null]),
    );
  });

  it('fails the partitions of an owner that is down with FORWARD_FAILED and its URL, and still pages through the local keys in order', async () => {
    const down = await downUrl();
    for (const p of [2, 3]) a.provider.setRemoteOwner(STORE.name, p, down);
    for (const direction of ['forward', 'backward'] as const) {
      const { keys, pages } = await pageThrough([a], 'range(store: "words")', 3, direction);
      expect(keys).toEqual(ALL.filter((k) => partitionOf(k) < 2));
      for (const page of pages) {
        expect(page.partitions.map((p: any) => [p.partition, p.failure?.reason ?? null, p.failure?.owner ?? null])).toEqual([
          [0, null, null],
          [1, null, null],
          [2, 'FORWARD_FAILED', down],
          [3, 'FORWARD_FAILED', down],
        ]);
        expect(page.partitions[2].failure.message).toMatch('ECONNREFUSED');
      }
    }
  });

  it('serves the other entries of a page when the owner cannot decode one value, failing that value alone with DECODE_FAILED', async () => {
    const key = ALL.find((k) => partitionOf(k) === 2)!;
    b.tasks.find((t) => t.store(STORE.name).partition === 2)!.store(STORE.name).put(serdes.string.serialize(key), Buffer.from('{not json'), { topic: 'input', partition: 2, offset: 500 });
    const result: any = await gql(fetch as Fetch, a.url, '{ range(store: "words", first: 100, readCommitted: false) { edges { node { key value } } } }');
    const index = ALL.indexOf(key);
    expect(result.data.range.edges.map((e: any) => e.node.key)).toEqual(ALL);
    expect(result.data.range.edges[index].node.value).toBeNull();
    expect(result.errors.map((e: any) => [e.extensions.code, e.path])).toEqual([['DECODE_FAILED', ['range', 'edges', index, 'node', 'value']]]);
  });

  it('never forwards a forwarded scan: a partition the owner does not host answers NOT_PRESENT after one hop', async () => {
    // Both instances believe the other hosts partition 2 (a stale map during a rebalance).
    b.provider.removeTask('0_2');
    b.provider.setRemoteOwner(STORE.name, 2, a.url);
    const result: any = await gql(fetch as Fetch, a.url, `{ page: range(store: "words", first: 100) { ${PAGE_FIELDS} } }`);
    expect(result.errors).toBeUndefined();
    expect(result.data.page.edges.map((e: any) => e.node.key)).toEqual(ALL.filter((k) => partitionOf(k) !== 2));
    expect(result.data.page.partitions[2].failure).toMatchObject({ reason: 'NOT_PRESENT', owner: a.url });
    expect(a.requests).toEqual([null]);
    expect(b.requests).toEqual(['1']);
  });

  it('answers a forwarded request from its local partitions only, reporting the others NOT_PRESENT with their owner', async () => {
    const response = await fetch(a.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [FORWARDED_HEADER]: '1' },
      body: JSON.stringify({ query: '{ range(store: "words", first: 100) { edges { node { partition } } partitions { partition failure { reason owner } } } }' }),
    });
    const result: any = await response.json();
    expect(new Set(result.data.range.edges.map((e: any) => e.node.partition))).toEqual(new Set([0, 1]));
    expect(result.data.range.partitions.map((p: any) => p.failure)).toEqual([null, null, { reason: 'NOT_PRESENT', owner: b.url }, { reason: 'NOT_PRESENT', owner: b.url }]);
    expect(b.requests).toEqual([]);
  });
});
