import { afterEach, describe, expect, it } from 'vitest';
import { QueryEngine } from '../../../src/query/query-engine.js';
import type { QueryOptions } from '../../../src/query/query-types.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';
import { partitionForKey } from '../../../src/murmur2.js';
import { Position } from '../../../src/store/position.js';
import { createInMemoryStoreEngine } from '../../../src/store/in-memory-engine.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Serde, StoreEngine, TaskStores } from '../../../src/store/types.js';
import { isIqgateError } from '../../../src/errors.js';

const PARTITIONS = 4;
let engine: StoreEngine;
let tasks: TaskStores[];

async function setup(): Promise<{ provider: StaticStateProvider; query: QueryEngine; offsets: number[] }> {
  engine = createInMemoryStoreEngine();
  const provider = new StaticStateProvider({
    stores: [{ name: 'kv', keySerde: serdes.string as Serde<unknown>, valueSerde: serdes.string as Serde<unknown>, partitions: PARTITIONS }],
  });
  tasks = [];
  for (let p = 0; p < PARTITIONS; p++) {
    const task = await engine.openTask(`t${p}`, [{ name: 'kv', partition: p }]);
    tasks.push(task);
    provider.addTask(task);
  }
  return { provider, query: new QueryEngine(provider), offsets: new Array<number>(PARTITIONS).fill(0) };
}

function put(offsets: number[], key: string, value: string): { partition: number; offset: number } {
  const bytes = Buffer.from(key);
  const partition = partitionForKey(bytes, PARTITIONS);
  const offset = offsets[partition]!++;
  tasks[partition]!.store('kv').put(bytes, Buffer.from(value), { topic: 'in', partition, offset });
  return { partition, offset };
}

async function commitAll(): Promise<void> {
  for (const task of tasks) await task.commit({});
}

const base: QueryOptions = { store: 'kv', boundTimeoutMs: 0, requireActive: false, allowStale: false, readCommitted: true, executionInfo: false };

afterEach(async () => {
  for (const task of tasks) await task.close();
  await engine.close();
});

describe('QueryEngine', () => {
  it('hands a failing partition read to onPartitionError in full while the client sees only the masked reason', async () => {
    const { provider } = await setup();
    const seen: Array<{ error: unknown; partition: number }> = [];
    const query = new QueryEngine(provider, { onPartitionError: (error, { partition }) => seen.push({ error, partition }) });
    const broken = new Error('IO error: /var/lib/iqgate/000005.ldb: No such file');
    tasks[2]!.store('kv').view = () => {
      throw broken;
    };
    const page = await query.page(base, { scan: { type: 'range' }, order: 'asc', direction: 'forward', size: 10 });
    const failure = page.partitions.find((p) => p.partition === 2)?.failure;
    expect(failure?.reason).toBe('STORE_EXCEPTION');
    expect(failure?.message).not.toContain('/var/lib');
    expect(seen).toEqual([{ error: broken, partition: 2 }]);
  });

  it('routes a key to its murmur2 partition and touches no other partition', async () => {
    const { query, offsets } = await setup();
    const { partition } = put(offsets, 'apple', 'red');
    await commitAll();
    const result = await query.getMany(base, [Buffer.from('apple')]);
    expect(result.partitions.map((p) => p.partition)).toEqual([partition]);
    expect(result.lookups[0]!.value?.toString()).toBe('red');
  });

  it('reports a partition that is not hosted as NOT_PRESENT and one beyond the store as DOES_NOT_EXIST', async () => {
    const { provider, query, offsets } = await setup();
    for (let i = 0; i < 20; i++) put(offsets, `k${i}`, 'v');
    await commitAll();
    provider.removeTask('t1');
    const page = await query.page({ ...base, partitions: [0, 1, 9] }, { scan: { type: 'range' }, order: 'asc', direction: 'forward', size: 100 });
    expect(page.partitions.map((p) => [p.partition, p.failure?.reason])).toEqual([
      [0, undefined],
      [1, 'NOT_PRESENT'],
      [9, 'DOES_NOT_EXIST'],
    ]);
    expect(page.entries.every((e) => e.partition === 0)).toBe(true);
  });

  it('fails standbys with requireActive, and restoring or suspended tasks unless stale reads are allowed', async () => {
    const { provider, query, offsets } = await setup();
    const { partition } = put(offsets, 'k', 'v');
    await commitAll();
    provider.removeTask(`t${partition}`);
    provider.addTask(tasks[partition]!, { active: false });
    const key = [Buffer.from('k')];
    expect((await query.getMany({ ...base, requireActive: true }, key)).lookups[0]!.failure?.reason).toBe('NOT_ACTIVE');
    expect((await query.getMany(base, key)).lookups[0]!.value?.toString()).toBe('v');
    provider.setTaskState(`t${partition}`, 'RESTORING');
    expect((await query.getMany(base, key)).lookups[0]!.failure?.reason).toBe('NOT_ACTIVE');
    expect((await query.getMany({ ...base, allowStale: true }, key)).lookups[0]!.value?.toString()).toBe('v');
    provider.setTaskState(`t${partition}`, 'SUSPENDED');
    expect((await query.getMany(base, key)).lookups[0]!.failure?.message).toMatch(/SUSPENDED \(pass allowStale/);
    expect((await query.getMany({ ...base, allowStale: true }, key)).lookups[0]!.value?.toString()).toBe('v');
    provider.setTaskState(`t${partition}`, 'CLOSED');
    expect((await query.getMany({ ...base, allowStale: true }, key)).lookups[0]!.failure?.reason).toBe('NOT_ACTIVE');
  });

  it('throws NOT_STARTED before the instance runs and STORE_NOT_FOUND for an unknown store', async () => {
    const { provider, query } = await setup();
    await expect(query.getMany({ ...base, store: 'nope' }, [Buffer.from('a')])).rejects.toSatisfy((e) => isIqgateError(e, 'STORE_NOT_FOUND'));
    provider.setInstanceState('STARTING');
    await expect(query.getMany(base, [Buffer.from('a')])).rejects.toSatisfy((e) => isIqgateError(e, 'NOT_STARTED'));
  });

  it('serves a bound that is already reached, fails one that is not, and waits for one that a commit reaches', async () => {
    const { query, offsets } = await setup();
    const first = put(offsets, 'k', 'v1');
    await commitAll();
    const reached = Position.empty().advance('in', first.partition, first.offset);
    const ok = await query.getMany({ ...base, positionBound: reached }, [Buffer.from('k')]);
    expect(ok.lookups[0]!.value?.toString()).toBe('v1');

    const ahead = Position.empty().advance('in', first.partition, first.offset + 1);
    const failed = await query.getMany({ ...base, positionBound: ahead }, [Buffer.from('k')]);
    expect(failed.lookups[0]!.failure?.reason).toBe('NOT_UP_TO_BOUND');

    // The uncommitted view already has the write; the committed one must wait for the commit.
    put(offsets, 'k', 'v2');
    const uncommitted = await query.getMany({ ...base, readCommitted: false, positionBound: ahead }, [Buffer.from('k')]);
    expect(uncommitted.lookups[0]!.value?.toString()).toBe('v2');
    const waiting = query.getMany({ ...base, positionBound: ahead, boundTimeoutMs: 10_000 }, [Buffer.from('k')]);
    let settled = false;
    void waiting.then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    await commitAll();
    const waited = await waiting;
    expect(waited.lookups[0]!.value?.toString()).toBe('v2');
    expect(waited.partitions[0]!.position?.offset('in', first.partition)).toBe(first.offset + 1);
  });

  it('checks only the bound components of each partition\'s own number, so a merged position pins every partition', async () => {
    const { query, offsets } = await setup();
    for (let i = 0; i < 40; i++) put(offsets, `k${i}`, 'v');
    await commitAll();
    const firstPage = await query.page(base, { scan: { type: 'range' }, order: 'asc', direction: 'forward', size: 5 });
    const merged = Position.empty();
    for (const p of firstPage.partitions) merged.merge(p.position!);
    const next = await query.page({ ...base, positionBound: merged }, { scan: { type: 'range' }, order: 'asc', direction: 'forward', size: 5 });
    expect(next.partitions.every((p) => p.failure === undefined)).toBe(true);
  });

  it('pages every key exactly once in key order, forward and backward, across partitions', async () => {
    const { query, offsets } = await setup();
    const keys = Array.from({ length: 57 }, (_, i) => `key-${String(i).padStart(3, '0')}`);
    for (const key of keys) put(offsets, key, key.toUpperCase());
    await commitAll();
    for (const order of ['asc', 'desc'] as const) {
      for (const direction of ['forward', 'backward'] as const) {
        const seen: string[] = [];
        let cursorKey: Buffer | undefined;
        for (;;) {
          const page = await query.page(base, { scan: { type: 'prefix', prefix: Buffer.from('key-') }, order, direction, size: 7, ...(cursorKey ? { cursorKey } : {}) });
          const pageKeys = page.entries.map((e) => e.key.toString());
          if (direction === 'forward') seen.push(...pageKeys);
          else seen.unshift(...pageKeys);
          if (!page.hasMore) break;
          cursorKey = direction === 'forward' ? page.entries.at(-1)!.key : page.entries[0]!.key;
        }
        const expected = order === 'asc' ? [...keys] : [...keys].reverse();
        expect(seen, `${order} ${direction}`).toEqual(expected);
      }
    }
  });
});
