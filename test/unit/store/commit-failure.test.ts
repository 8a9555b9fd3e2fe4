/**
 * A commit whose committed-store write fails: it and the commits queued behind it fail, the
 * task drops what was uncommitted, and the task keeps working afterwards (the runtime reuses
 * the same TaskStores to restore from the changelog and commit again).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import type { CommittedStore, CommittedWrite } from '../../../src/store/committed-store.js';
import { LevelCommittedStore } from '../../../src/store/level-committed-store.js';
import { MemoryCommittedStore, createInMemoryDatabase } from '../../../src/store/memory-committed-store.js';
import { Position } from '../../../src/store/position.js';
import { LayeredStoreEngine } from '../../../src/store/store-engine.js';
import { resolveStoreOptions } from '../../../src/store/store-options.js';
import type { StoreEngine } from '../../../src/store/types.js';
import { b, collect, source } from './store-harness.js';

/** A CommittedStore decorator whose next commit fails (after a turn, as real I/O would). */
class FailingCommittedStore implements CommittedStore {
  failNext = false;
  constructor(private readonly inner: CommittedStore) {}
  keyspace(storeName: string, partition: number) {
    return this.inner.keyspace(storeName, partition);
  }
  readMeta(taskId: string, storeName: string) {
    return this.inner.readMeta(taskId, storeName);
  }
  async commit(writes: readonly CommittedWrite[]): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      await new Promise((resolve) => setTimeout(resolve, 1));
      throw new Error('disk on fire');
    }
    return this.inner.commit(writes);
  }
  close() {
    return this.inner.close();
  }
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const engines: Record<string, () => Promise<CommittedStore>> = {
  'in-memory': async () => new MemoryCommittedStore(createInMemoryDatabase()),
  LevelDB: async () => {
    const directory = await mkdtemp(join(tmpdir(), 'iqgate-commit-failure-'));
    cleanups.push(() => rm(directory, { recursive: true, force: true }));
    return LevelCommittedStore.open(directory);
  },
};

for (const [name, open] of Object.entries(engines)) {
  describe(`a failed commit (${name})`, () => {
    it('fails the commits queued behind it, drops what was uncommitted, and the task commits and restores again afterwards', async () => {
      const committed = new FailingCommittedStore(await open());
      const engine: StoreEngine = new LayeredStoreEngine(committed, resolveStoreOptions());
      cleanups.push(() => engine.close());
      const task = await engine.openTask('task-0', [{ name: 'counts', partition: 0 }]);
      const store = task.store('counts');
      store.put(b('a'), b('1'), source(1));
      await task.commit({ counts: 1 });

      committed.failNext = true;
      store.put(b('a'), b('2'), source(2));
      const failing = task.commit({ counts: 2 });
      store.put(b('b'), b('3'), source(3));
      const queued = task.commit({ counts: 3 });
      const outcomes = await Promise.allSettled([failing, queued]);
      for (const outcome of outcomes) {
        expect(outcome.status).toBe('rejected');
        expect(isIqgateError((outcome as PromiseRejectedResult).reason, 'STORE_EXCEPTION')).toBe(true);
      }
      expect(engine.uncommittedBytes()).toBe(0);
      expect(store.get(b('a'))?.toString()).toBe('1');
      expect(store.uncommittedPosition().toJSON()).toEqual({ input: { '0': 1 } });
      expect(task.changelogOffsets()).toEqual({ counts: 1 });

      // The same TaskStores keeps working: a restore and a commit made after the failure settled.
      await task.restore('counts', [{ key: b('a'), value: b('2') }], 3, Position.fromJSON({ input: { '0': 2 } }));
      store.put(b('c'), b('4'), source(4));
      await task.commit({ counts: 5 });
      const view = store.view({ readCommitted: true });
      expect(await collect(view.range())).toEqual(['a=2', 'c=4']);
      expect(view.position.toJSON()).toEqual({ input: { '0': 4 } });
      await view.close();
      expect(task.changelogOffsets()).toEqual({ counts: 5 });
    });

    it('tells uncommitted subscribers that every write of the failed and the queued commits is gone, with what is readable now', async () => {
      const committed = new FailingCommittedStore(await open());
      const engine: StoreEngine = new LayeredStoreEngine(committed, resolveStoreOptions());
      cleanups.push(() => engine.close());
      const task = await engine.openTask('task-0', [{ name: 'counts', partition: 0 }]);
      const store = task.store('counts');
      store.put(b('a'), b('1'), source(1));
      await task.commit({ counts: 1 });
      const shown = new Map<string, string | null>([['a', '1']]);
      const rollbackPositions: unknown[] = [];
      store.subscribe(
        (event) => {
          for (const change of event.changes) shown.set(change.key.toString(), change.value?.toString() ?? null);
          if (event.kind === 'uncommitted' && event.rolledBack === true) rollbackPositions.push(event.position.toJSON());
        },
        { kind: 'uncommitted' },
      );

      committed.failNext = true;
      store.put(b('a'), b('2'), source(2));
      const failing = task.commit({ counts: 2 });
      store.put(b('b'), b('3'), source(3));
      const queued = task.commit({ counts: 3 });
      store.put(b('c'), b('4'), source(4)); // still in the cache when the failure drops it
      expect(Object.fromEntries(shown)).toEqual({ a: '2', b: '3', c: '4' });
      await Promise.allSettled([failing, queued]);

      expect(Object.fromEntries(shown)).toEqual({ a: '1', b: null, c: null });
      for (const key of ['a', 'b', 'c']) expect(store.get(b(key))?.toString() ?? null).toBe(shown.get(key));
      // The last one goes back to the committed Position (earlier ones to the newest commit still in flight then).
      expect(rollbackPositions.at(-1)).toEqual({ input: { '0': 1 } });
    });
  });
}
