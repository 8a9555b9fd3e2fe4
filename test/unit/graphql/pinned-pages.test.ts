/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
/**
 * Pinned listings through the GraphQL gateway over real LevelDB (a temporary directory): every
 * page of a range listing is read from the snapshot its first page took, committed or
 * uncommitted, while keys are inserted, updated and deleted — committed, left uncommitted,
 * flushed and rolled back — between the pages; and a cursor whose snapshot is gone fails
 * STALE_CURSOR without disturbing anything else.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serdes } from '../../../src/store/serdes.js';
import { openLevelStoreEngine } from '../../../src/store/level-engine.js';
import type { Serde } from '../../../src/store/types.js';
import type { GatewayOptions } from '../../../src/graphql/gateway-options.js';
import { createFixture, gql, type Fetch, type Fixture } from './gateway-fixture.js';

const URL = 'http://gateway.test/graphql';
const STORES = [{ name: 'words', keySerde: serdes.string as Serde<unknown>, valueSerde: serdes.json }];
const PAGE = `query ($c: String, $rc: Boolean, $n: Int) {
  range(store: "words", first: $n, after: $c, readCommitted: $rc) {
    edges { cursor node { key value } }
    pageInfo { hasNextPage endCursor }
    partitions { partition position failure { reason } }
  }
}`;

let directory: string;
let f: Fixture;
let metrics: Registry;

async function open(gateway: Omit<GatewayOptions, 'provider'> = {}): Promise<Fixture> {
  metrics = new Registry();
  return createFixture(await openLevelStoreEngine({ directory }), { partitions: 4, stores: STORES, gateway: { metrics, ...gateway } });
}

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'iqgate-pinned-pages-'));
});

afterEach(async () => {
  await f.close();
  await rm(directory, { recursive: true, force: true });
});

const pad = (n: number): string => String(n).padStart(5, '0');
const byBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** What the test wrote, committed and not: the model both listings are checked against. */
class Model {
  committed = new Map<string, unknown>();
  uncommitted = new Map<string, unknown>();
  constructor(private readonly fixture: Fixture) {}
  put(key: string, value: unknown): void {
    this.fixture.put('words', key, value);
    this.uncommitted.set(key, value);
  }
  remove(key: string): void {
    this.fixture.remove('words', key);
    this.uncommitted.delete(key);
  }
  async commit(): Promise<void> {
    await this.fixture.commit();
    this.committed = new Map(this.uncommitted);
  }
  abort(): void {
    this.fixture.abort();
    this.uncommitted = new Map(this.committed);
  }
  /** The view's entries in key-byte order, as a range over the whole store lists them. */
  sorted(readCommitted: boolean): Array<[string, unknown]> {
    return [...(readCommitted ? this.committed : this.uncommitted)].sort(([a], [b]) => byBytes(a, b));
  }
}

async function page(readCommitted: boolean, cursor: string | null, n: number): Promise<any> {
  return gql<any>(f.gateway.fetch as Fetch, URL, PAGE, { c: cursor, rc: readCommitted, n });
}

async function gaugeValue(): Promise<number> {
  const text = await metrics.metrics();
  const match = /^iqgate_pinned_snapshots (\d+)$/m.exec(text);
  if (match === null) throw new Error('no iqgate_pinned_snapshots gauge');
  return Number(match[1]);
}

describe('pinned listings', () => {
  it('pages through 10,000 keys while writes land: the pages, concatenated, are exactly the snapshot of the first page, committed and uncommitted', async () => {
    f = await open({ cursorSnapshotTtlMs: 300_000 });
    const model = new Model(f);
    for (let i = 0; i < 10_000; i++) model.put(`k-${pad(i)}`, { v: i });
    await model.commit();
    // The uncommitted view starts different from the committed one: an update, a delete, an insert.
    model.put('k-00007', { v: 'uncommitted' });
    model.remove('k-00008');
    model.put('k-00008+', { v: 'inserted' });

    const views = [true, false] as const;
    const expected = new Map(views.map((rc) => [rc, model.sorted(rc)]));
    const listings = new Map(views.map((rc) => [rc, { cursor: null as string | null, done: false, seen: [] as Array<[string, unknown]>, positions: undefined as unknown }]));
    const ahead = { inserted: 0, updated: 0, deleted: 0 };
    const cursorKeys = (): string[] => [...listings.values()].map((l) => l.seen.at(-1)?.[0] ?? '');
    const isAhead = (key: string): boolean => cursorKeys().some((cursorKey) => byBytes(key, cursorKey) > 0);

    for (let round = 0; [...listings.values()].some((l) => !l.done); round++) {
      expect(round).toBeLessThan(100);
      for (const [readCommitted, listing] of listings) {
        if (listing.done) continue;
        const result = await page(readCommitted, listing.cursor, 500);
        expect(result.errors).toBeUndefined();
        const connection = result.data.range;
        expect(connection.partitions.map((p: any) => p.failure)).toEqual([null, null, null, null]);
        // Every page is served at the snapshot's positions.
        const positions = connection.partitions.map((p: any) => p.position);
        listing.positions ??= positions;
        expect(positions).toEqual(listing.positions);
        listing.seen.push(...connection.edges.map((e: any): [string, unknown] => [e.node.key, e.node.value]));
        listing.cursor = connection.pageInfo.endCursor;
        listing.done = !connection.pageInfo.hasNextPage;
      }
      // Between pages: inserts, updates and deletes all over the key space, then a commit, nothing,
      // a flush of the record cache into the write batch, or a rollback.
      const keys = [...model.uncommitted.keys()];
      for (let j = 0; j < 40; j++) {
        const inserted = `k-${pad((round * 337 + j * 251) % 10_000)}+${round}`;
        model.put(inserted, { v: `new ${round}` });
        if (isAhead(inserted)) ahead.inserted++;
        const updated = keys[(round * 7919 + j * 241) % keys.length]!;
        model.put(updated, { v: `updated ${round}` });
        if (isAhead(updated)) ahead.updated++;
        const deleted = keys[(round * 4099 + j * 173 + 1) % keys.length]!;
        if (deleted !== updated) {
          model.remove(deleted);
          if (isAhead(deleted)) ahead.deleted++;
        }
      }
      if (round % 4 === 0) await model.commit();
      else if (round % 4 === 2) for (const task of f.tasks) task.flush();
      else if (round % 4 === 3) model.abort();
    }

    for (const readCommitted of views) {
      const { seen } = listings.get(readCommitted)!;
      const snapshot = expected.get(readCommitted)!;
      expect(seen.length, `readCommitted ${readCommitted}`).toBe(snapshot.length);
      expect(seen, `readCommitted ${readCommitted}`).toEqual(snapshot);
    }
    expect(expected.get(true)!.length).toBe(10_000);
    expect(expected.get(false)!.length).toBe(10_000);
    // The writes did land where the listings had still to go, and a new listing sees them.
    expect(ahead.inserted).toBeGreaterThan(100);
    expect(ahead.updated).toBeGreaterThan(100);
    expect(ahead.deleted).toBeGreaterThan(100);
    for (const readCommitted of views) {
      const now = model.sorted(readCommitted);
      expect(now).not.toEqual(expected.get(readCommitted));
      const fresh = await page(readCommitted, null, 1000);
      expect(fresh.data.range.edges.map((e: any) => [e.node.key, e.node.value])).toEqual(now.slice(0, 1000));
    }
    expect(await gaugeValue()).toBeGreaterThanOrEqual(2);
  });

  it('fails the next page of an expired listing with STALE_CURSOR, releasing its snapshot, and leaves everything else as it was', async () => {
    f = await open({ cursorSnapshotTtlMs: 100 });
    const model = new Model(f);
    for (let i = 0; i < 50; i++) model.put(`k-${pad(i)}`, { v: i });
    await model.commit();
    const first = await page(true, null, 10);
    expect(first.errors).toBeUndefined();
    expect(await gaugeValue()).toBe(1);
    // The expiry timer releases it (no page needed).
    const deadline = Date.now() + 5_000;
    while ((await gaugeValue()) !== 0) {
      if (Date.now() > deadline) throw new Error('the pin was not released');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const stale = await page(true, first.data.range.pageInfo.endCursor, 10);
    expect(stale.data?.range ?? null).toBeNull();
    expect(stale.errors?.map((e: any) => e.extensions.code)).toEqual(['STALE_CURSOR']);
    expect(stale.errors![0]!.message).toMatch(/start the listing again/);

    // Running state is undisturbed: writes commit, a new listing starts and pages.
    model.put('k-00003', { v: 'later' });
    await model.commit();
    const again = await page(true, null, 10);
    expect(again.data.range.edges.map((e: any) => [e.node.key, e.node.value])).toEqual(model.sorted(true).slice(0, 10));
    const second = await page(true, again.data.range.pageInfo.endCursor, 10);
    expect(second.errors).toBeUndefined();
    expect(second.data.range.edges.map((e: any) => e.node.key)).toEqual(model.sorted(true).slice(10, 20).map(([k]) => k));
  });

  it('keeps no snapshot for a page of none (first: 0): it has no cursor to name one', async () => {
    f = await open({});
    const model = new Model(f);
    for (let i = 0; i < 5; i++) model.put(`k-${pad(i)}`, { v: i });
    await model.commit();
    const none = await page(true, null, 0);
    expect(none.errors).toBeUndefined();
    expect(none.data.range.edges).toEqual([]);
    expect(await gaugeValue()).toBe(0);
  });

  it('fails a listing whose partition closed with STALE_CURSOR, and a malformed or tampered cursor with INVALID_CURSOR', async () => {
    f = await open();
    const model = new Model(f);
    for (let i = 0; i < 40; i++) model.put(`k-${pad(i)}`, { v: i });
    await model.commit();
    const first = await page(true, null, 5);
    const cursor: string = first.data.range.pageInfo.endCursor;
    expect(await gaugeValue()).toBe(1);

    const codeOf = async (c: string, readCommitted = true): Promise<unknown> => (await page(readCommitted, c, 5)).errors?.map((e: any) => e.extensions.code);
    expect(await codeOf('not a cursor!')).toEqual(['INVALID_CURSOR']);
    const bytes = Buffer.from(cursor, 'base64url');
    const truncated = bytes.subarray(0, 12).toString('base64url');
    expect(await codeOf(truncated)).toEqual(['INVALID_CURSOR']);
    const badLength = Buffer.from(bytes);
    badLength[9] = 5;
    expect(await codeOf(badLength.toString('base64url'))).toEqual(['INVALID_CURSOR']);
    // Another snapshot id of this gateway's (its first 4 bytes name the gateway that pinned it):
    // nothing held under it.
    const otherId = Buffer.from(bytes);
    otherId[14] = otherId[14]! ^ 0xff;
    expect(await codeOf(otherId.toString('base64url'))).toEqual(['STALE_CURSOR']);
    // An id another gateway pinned: read at the current state, no error.
    const foreign = Buffer.from(bytes);
    foreign[10] = foreign[10]! ^ 0xff;
    expect(await codeOf(foreign.toString('base64url'))).toBeUndefined();
    // The committed listing's cursor asked for the uncommitted view.
    expect(await codeOf(cursor, false)).toEqual(['INVALID_CURSOR']);
    // None of that touched the listing.
    const second = await page(true, cursor, 5);
    expect(second.errors).toBeUndefined();
    expect(second.data.range.edges.map((e: any) => e.node.key)).toEqual(model.sorted(true).slice(5, 10).map(([k]) => k));

    // A partition of the listing closes (revoked): its snapshot goes at once, the cursor is stale.
    const revoked = f.tasks[1]!;
    f.provider.removeTask(revoked.taskId);
    await revoked.close();
    expect(await gaugeValue()).toBe(0);
    expect(await codeOf(second.data.range.pageInfo.endCursor)).toEqual(['STALE_CURSOR']);
  });

  it('pins nothing for a listing that fits one page, whose cursors then read the current state', async () => {
    f = await open();
    const model = new Model(f);
    for (let i = 0; i < 5; i++) model.put(`k-${pad(i)}`, { v: i });
    await model.commit();
    const only = await page(true, null, 10);
    expect(only.data.range.pageInfo.hasNextPage).toBe(false);
    expect(await gaugeValue()).toBe(0);
    model.put('k-00009', { v: 9 });
    await model.commit();
    const tail = await page(true, only.data.range.pageInfo.endCursor, 10);
    expect(tail.errors).toBeUndefined();
    expect(tail.data.range.edges.map((e: any) => e.node.key)).toEqual(['k-00009']);
  });

  it('releases every pinned snapshot when the gateway is disposed', async () => {
    f = await open();
    const model = new Model(f);
    for (let i = 0; i < 30; i++) model.put(`k-${pad(i)}`, { v: i });
    await model.commit();
    for (const readCommitted of [true, false, true]) expect((await page(readCommitted, null, 5)).errors).toBeUndefined();
    expect(await gaugeValue()).toBe(3);
    await f.gateway.dispose();
    expect(await gaugeValue()).toBe(0);
  });

  it('evicts the oldest listing past maxPinnedSnapshots: its cursor is stale, the newer ones carry on', async () => {
    f = await open({ maxPinnedSnapshots: 2 });
    const model = new Model(f);
    for (let i = 0; i < 30; i++) model.put(`k-${pad(i)}`, { v: i });
    await model.commit();
    const cursors: string[] = [];
    for (let i = 0; i < 3; i++) cursors.push((await page(true, null, 5)).data.range.pageInfo.endCursor);
    expect(await gaugeValue()).toBe(2);
    expect((await page(true, cursors[0]!, 5)).errors?.map((e: any) => e.extensions.code)).toEqual(['STALE_CURSOR']);
    for (const cursor of cursors.slice(1)) expect((await page(true, cursor, 5)).data.range.edges).toHaveLength(5);
  });
});
