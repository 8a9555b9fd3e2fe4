/**
 * PinnedSnapshots over read views of real LevelDB store partitions (a temporary directory):
 * expiry by TTL (a test clock, and the unref'd timer), eviction at the cap, release when a
 * partition closes, at close(), and never under a read in progress; and the QueryEngine's
 * STALE_CURSOR once a listing's snapshot has expired on its clock.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import { partitionForKey } from '../../../src/murmur2.js';
import { PinnedSnapshots, type PinnedPartition } from '../../../src/query/pinned-snapshots.js';
import { QueryEngine } from '../../../src/query/query-engine.js';
import type { PageRequest, QueryOptions } from '../../../src/query/query-types.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';
import { openLevelStoreEngine } from '../../../src/store/level-engine.js';
import { serdes } from '../../../src/store/serdes.js';
import type { KeyValueStorePartition, ReadView, Serde, StoreEngine, TaskStores } from '../../../src/store/types.js';

const PARTITIONS = 2;
const FINGERPRINT = Buffer.alloc(8, 1);
let directory: string;
let engine: StoreEngine;
let tasks: TaskStores[];
let offset = 0;

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'iqgate-pins-'));
  engine = await openLevelStoreEngine({ directory });
  tasks = [];
  for (let p = 0; p < PARTITIONS; p++) tasks.push(await engine.openTask(`t${p}`, [{ name: 'kv', partition: p }]));
  for (let i = 0; i < 20; i++) await put(`k${String(i).padStart(2, '0')}`, 'v');
});

afterEach(async () => {
  await engine.close();
  await rm(directory, { recursive: true, force: true });
});

function store(p: number): KeyValueStorePartition {
  return tasks[p]!.store('kv');
}

async function put(key: string, value: string): Promise<void> {
  const bytes = Buffer.from(key);
  const p = partitionForKey(bytes, PARTITIONS);
  store(p).put(bytes, Buffer.from(value), { topic: 'in', partition: p, offset: offset++ });
  await tasks[p]!.commit({});
}

/** Views of every partition, as a page would pin them (uncommitted ones, so every layer is held). */
function views(): Map<number, PinnedPartition> {
  return new Map(tasks.map((_, p) => [p, { store: store(p), view: store(p).view({ readCommitted: false }) }]));
}

/** Whether a view was closed: a closed view refuses reads with STORE_CLOSED. */
async function isClosed(view: ReadView): Promise<boolean> {
  try {
    await view.get(Buffer.from('k00'));
    return false;
  } catch (error) {
    if (isIqgateError(error, 'STORE_CLOSED')) return true;
    throw error;
  }
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('PinnedSnapshots', () => {
  it('holds a pin until its TTL has passed on its clock, then releases it and closes its views', async () => {
    let now = 1_000;
    const pins = new PinnedSnapshots({ ttlMs: 30_000, maxPinned: 10, now: () => now });
    const held = views();
    const id = pins.pin(FINGERPRINT, false, held)!;
    expect(id).toHaveLength(12);
    now += 29_999;
    const pin = pins.acquire(id);
    expect(pin?.partitions).toBe(held);
    pins.done(pin!);
    expect(await isClosed(held.get(0)!.view)).toBe(false);
    now += 1;
    expect(pins.acquire(id)).toBeUndefined();
    expect(pins.size).toBe(0);
    await pins.close();
    for (const { view } of held.values()) expect(await isClosed(view)).toBe(true);
  });

  it('releases an expired pin by its timer, without a page asking for it', async () => {
    const pins = new PinnedSnapshots({ ttlMs: 20, maxPinned: 10 });
    const held = views();
    pins.pin(FINGERPRINT, false, held);
    expect(pins.size).toBe(1);
    await until(() => pins.size === 0);
    await until(async () => await isClosed(held.get(1)!.view));
  });

  it('evicts the oldest pin when a new one would pass the cap', async () => {
    const pins = new PinnedSnapshots({ ttlMs: 60_000, maxPinned: 2 });
    const made = [views(), views(), views()];
    const ids = made.map((held) => pins.pin(FINGERPRINT, true, held)!);
    expect(pins.size).toBe(2);
    expect(pins.acquire(ids[0]!)).toBeUndefined();
    await until(async () => await isClosed(made[0]!.get(0)!.view));
    for (const id of ids.slice(1)) {
      const pin = pins.acquire(id)!;
      expect(pin).toBeDefined();
      pins.done(pin);
    }
    expect(await isClosed(made[2]!.get(0)!.view)).toBe(false);
    await pins.close();
    expect(pins.size).toBe(0);
  });

  it('releases a pin when one of its partitions closes, and never after without a new pin', async () => {
    const pins = new PinnedSnapshots({ ttlMs: 60_000, maxPinned: 10 });
    const held = views();
    const id = pins.pin(FINGERPRINT, false, held)!;
    await tasks[1]!.close();
    expect(pins.size).toBe(0);
    expect(pins.acquire(id)).toBeUndefined();
    await until(async () => await isClosed(held.get(0)!.view));
    await pins.close();
  });

  it('keeps the views of a released pin open until the read holding it is done', async () => {
    const pins = new PinnedSnapshots({ ttlMs: 60_000, maxPinned: 10 });
    const held = views();
    const id = pins.pin(FINGERPRINT, false, held)!;
    const reading = pins.acquire(id)!;
    await pins.close().then(() => undefined, () => undefined);
    expect(pins.size).toBe(0);
    expect(await isClosed(held.get(0)!.view)).toBe(false);
    pins.done(reading);
    await until(async () => await isClosed(held.get(0)!.view));
    // Closed: nothing is pinned any more, the views handed over close at once.
    const late = views();
    expect(pins.pin(FINGERPRINT, false, late)).toBeUndefined();
    await until(async () => await isClosed(late.get(0)!.view));
  });

  it('pins nothing with ttlMs 0, closing the views it was handed', async () => {
    const pins = new PinnedSnapshots({ ttlMs: 0, maxPinned: 10 });
    const held = views();
    expect(pins.enabled).toBe(false);
    expect(pins.pin(FINGERPRINT, false, held)).toBeUndefined();
    await until(async () => await isClosed(held.get(0)!.view));
  });
});

describe('QueryEngine with pinned listings', () => {
  const options: QueryOptions = { store: 'kv', boundTimeoutMs: 0, requireActive: false, allowStale: false, readCommitted: true, executionInfo: false };
  const first: PageRequest = { scan: { type: 'range' }, order: 'asc', direction: 'forward', size: 5, pin: true };

  function provider(): StaticStateProvider {
    const state = new StaticStateProvider({ stores: [{ name: 'kv', keySerde: serdes.string as Serde<unknown>, valueSerde: serdes.string as Serde<unknown>, partitions: PARTITIONS }] });
    for (const task of tasks) state.addTask(task);
    return state;
  }

  it('reads later pages from the first page\'s snapshot until the TTL passes on its clock, then fails STALE_CURSOR', async () => {
    let now = 0;
    const query = new QueryEngine(provider(), { cursorSnapshotTtlMs: 1_000, now: () => now });
    const page1 = await query.page(options, first);
    expect(page1.pinnedNow).toBe(true);
    expect(query.pinnedSnapshots()).toBe(1);
    await put('k05+', 'inserted after the first page');
    const next: PageRequest = { ...first, cursorKey: page1.entries.at(-1)!.key, snapshot: page1.snapshot! };
    const page2 = await query.page(options, next);
    expect(page2.pinnedNow).toBe(false);
    expect(page2.snapshot).toEqual(page1.snapshot);
    expect(page2.entries.map((e) => e.key.toString())).toEqual(['k05', 'k06', 'k07', 'k08', 'k09']);
    now = 1_000;
    await expect(query.page(options, next)).rejects.toSatisfy((error) => isIqgateError(error, 'STALE_CURSOR'));
    expect(query.pinnedSnapshots()).toBe(0);
    // An unpinned read of the same range sees the insert: the pin was what hid it.
    const live = await query.page(options, { ...first, cursorKey: page1.entries.at(-1)!.key, pin: false });
    expect(live.entries.map((e) => e.key.toString())).toEqual(['k05', 'k05+', 'k06', 'k07', 'k08']);
    expect(live.snapshot).toBeUndefined();
    await query.close();
  });

  it('releases its pins at close() and pins no more after it', async () => {
    const query = new QueryEngine(provider());
    const page1 = await query.page(options, first);
    expect(query.pinnedSnapshots()).toBe(1);
    await query.close();
    expect(query.pinnedSnapshots()).toBe(0);
    await expect(query.page(options, { ...first, cursorKey: page1.entries.at(-1)!.key, snapshot: page1.snapshot! })).rejects.toSatisfy((error) =>
      isIqgateError(error, 'STALE_CURSOR'),
    );
    const unpinned = await query.page(options, first);
    expect(unpinned.snapshot).toBeUndefined();
    expect(unpinned.entries).toHaveLength(5);
  });
});
