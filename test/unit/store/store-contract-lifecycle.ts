/**
 * Lifecycle: positions, events, changelog offsets, crash and reopen, commit needed, record cache, bad input.
 * Part of the store contract suite (store-contract.ts).
 */
import { describe, expect, it, vi } from 'vitest';
import { IqgateError } from '../../../src/errors.js';
import { Position, serdes } from '../../../src/store/index.js';
import type { FlushedChange, StoreChangeEvent } from '../../../src/store/index.js';
import { STORES, expectCode, openTaskForEachTest } from './store-contract-support.js';
import { b, collect, source, type HarnessFactory } from './store-harness.js';

export function describeLifecycleContract(factory: HarnessFactory): void {
  const fx = openTaskForEachTest(factory);

  describe('positions, events and offsets', () => {
    it('keeps committed and uncommitted positions apart and persists the committed one with the data', async () => {
      const store = fx.task.store('counts');
      store.put(b('a'), b('1'), source(5, 'in', 0));
      store.put(b('b'), b('1'), source(3, 'in', 1));
      store.put(b('c'), b('1'), source(2, 'in', 0)); // lower offset: the maximum stays
      expect(store.uncommittedPosition().toJSON()).toEqual({ in: { '0': 5, '1': 3 } });
      expect(store.committedPosition().isEmpty()).toBe(true);
      await fx.task.commit({ counts: 42 });
      expect(store.committedPosition().toJSON()).toEqual({ in: { '0': 5, '1': 3 } });
      store.delete(b('a'), source(6, 'in', 0));
      expect(store.committedPosition().toJSON()).toEqual({ in: { '0': 5, '1': 3 } });
      expect(store.uncommittedPosition().toJSON()).toEqual({ in: { '0': 6, '1': 3 } });
      expect(fx.task.store('other').committedPosition().isEmpty()).toBe(true);
      expect(fx.task.changelogOffsets()).toEqual({ counts: 42 });

      await fx.reopen();
      const reopened = fx.task.store('counts');
      expect(reopened.committedPosition().toJSON()).toEqual({ in: { '0': 5, '1': 3 } });
      expect(reopened.uncommittedPosition().toJSON()).toEqual({ in: { '0': 5, '1': 3 } });
      expect(fx.task.changelogOffsets()).toEqual({ counts: 42 });
      const view = reopened.view({ readCommitted: true });
      expect(view.position.toJSON()).toEqual({ in: { '0': 5, '1': 3 } });
      expect(await collect(view.range())).toEqual(['a=1', 'b=1', 'c=1']);
      await view.close();
    });

    it('changelog offsets absent from a commit keep their previous value', async () => {
      await fx.task.commit({ counts: 7, other: 1 });
      await fx.task.commit({ other: 3 });
      expect(fx.task.changelogOffsets()).toEqual({ counts: 7, other: 3 });
    });

    it('subscribers get an uncommitted event at each write, none at the flush, and committed events after the commit', async () => {
      const store = fx.task.store('counts');
      const events: StoreChangeEvent[] = [];
      const unsubscribe = store.subscribe((event) => events.push(event));
      expect(store.listenerCount()).toBe(1);
      const shown = (event: StoreChangeEvent): unknown => [event.kind, event.changes.map((c) => [c.key.toString(), c.value?.toString() ?? null]), event.position.toJSON()];
      store.put(b('a'), b('1'), source(1));
      store.put(b('a'), b('2'), source(2));
      store.delete(b('b'), source(3));
      expect(events.map(shown)).toEqual([
        ['uncommitted', [['a', '1']], { input: { '0': 1 } }],
        ['uncommitted', [['a', '2']], { input: { '0': 2 } }],
        ['uncommitted', [['b', null]], { input: { '0': 3 } }],
      ]);
      fx.task.flush();
      expect(events).toHaveLength(3);
      await fx.task.commit({});
      expect(events).toHaveLength(4);
      expect(events[3]!.kind).toBe('committed');
      expect(events[3]!.changes.map((c) => [c.key.toString(), c.value?.toString() ?? null])).toEqual([
        ['a', '2'],
        ['b', null],
      ]);
      expect(events[3]!.position.equals(store.committedPosition())).toBe(true);
      unsubscribe();
      expect(store.listenerCount()).toBe(0);
      store.put(b('c'), b('1'), source(4));
      await fx.task.commit({});
      expect(events).toHaveLength(4);
    });

    it('a subscriber that throws breaks neither the flush nor the commit, nor the other subscribers', async () => {
      const store = fx.task.store('counts');
      const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
      try {
        const flushed: FlushedChange[] = [];
        fx.task.onFlush((changes) => flushed.push(...changes));
        const failure = new Error('subscriber bug');
        store.subscribe(() => {
          throw failure;
        });
        const events: string[] = [];
        store.subscribe((event) => events.push(event.kind));
        store.put(b('a'), b('1'), source(1));
        fx.task.flush();
        expect(flushed.map((c) => c.key.toString())).toEqual(['a']);
        await fx.task.commit({ counts: 1 });
        store.put(b('b'), b('1'), source(2));
        await fx.task.commit({ counts: 2 });
        expect(events).toEqual(['uncommitted', 'committed', 'uncommitted', 'committed']);
        expect(store.committedPosition().toJSON()).toEqual({ input: { '0': 2 } });
        expect(fx.task.uncommittedBytes()).toBe(0);
        const view = store.view({ readCommitted: true });
        expect(await collect(view.range())).toEqual(['a=1', 'b=1']);
        await view.close();
        expect(warn).toHaveBeenCalledWith(failure);
      } finally {
        warn.mockRestore();
      }
    });

    it('a subscriber hears why the partition closed, once, after its last event; an unsubscribed one hears nothing', async () => {
      const store = fx.task.store('counts');
      const heard: string[] = [];
      store.subscribe((event) => heard.push(event.kind), { onClose: (reason) => heard.push(`closed:${reason.code}:${reason.message}`) });
      const gone: string[] = [];
      store.subscribe((event) => gone.push(event.kind), { onClose: (reason) => gone.push(`closed:${reason.code}`) })();
      const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
      try {
        store.subscribe(() => {}, { onClose: () => { throw new Error('onClose bug'); } });
        store.put(b('a'), b('1'), source(1));
        await fx.task.commit({ counts: 1 });
        await fx.task.close(new IqgateError('PARTITION_REVOKED', 'moved away', { retriable: true }));
        await fx.task.close(new IqgateError('STORE_CLOSED', 'again'));
        expect(heard).toEqual(['uncommitted', 'committed', 'closed:PARTITION_REVOKED:moved away']);
        expect(gone).toEqual([]);
        expect(store.listenerCount()).toBe(0);
        expect(warn).toHaveBeenCalledTimes(1);
      } finally {
        warn.mockRestore();
      }
      await expectCode(() => store.subscribe(() => {}), 'STORE_CLOSED');
    });

    it('flush hands dirty entries to the flush listener once per key, in order of their latest write', async () => {
      const flushed: FlushedChange[][] = [];
      fx.task.onFlush((changes) => flushed.push([...changes]));
      const store = fx.task.store('counts');
      store.put(b('x'), b('1'), source(1));
      store.put(b('y'), b('1'), source(2));
      store.put(b('x'), b('2'), source(3));
      store.delete(b('z'), source(4));
      fx.task.flush();
      expect(flushed).toHaveLength(1);
      expect(flushed[0]!.map((c) => [c.storeName, c.partition, c.key.toString(), c.value?.toString() ?? null, c.source.offset])).toEqual([
        ['counts', 0, 'y', '1', 2],
        ['counts', 0, 'x', '2', 3],
        ['counts', 0, 'z', null, 4],
      ]);
      fx.task.flush();
      expect(flushed).toHaveLength(1);
      store.put(b('w'), b('1'), source(5));
      await fx.task.commit({}); // commit flushes
      expect(flushed).toHaveLength(2);
    });

    it('restore applies changelog records to the committed store with their offset and position', async () => {
      const store = fx.task.store('counts');
      store.put(b('a'), b('uncommitted'), source(1));
      await fx.task.restore('counts', [{ key: b('a'), value: b('r1') }, { key: b('b'), value: b('r2') }, { key: b('b'), value: null }], 11, Position.fromJSON({ input: { '0': 9 } }));
      expect(fx.task.changelogOffsets()).toEqual({ counts: 11 });
      const committed = store.view({ readCommitted: true });
      expect(await collect(committed.range())).toEqual(['a=r1']);
      expect(committed.position.toJSON()).toEqual({ input: { '0': 9 } });
      await committed.close();
      expect(store.get(b('a'))?.toString()).toBe('uncommitted');
    });
  });

  describe('crash and reopen', () => {
    it('reopening shows exactly the last completed commit and nothing uncommitted', async () => {
      const store = fx.task.store('counts');
      store.put(b('a'), b('1'), source(1));
      await fx.task.commit({ counts: 1 });
      store.put(b('a'), b('2'), source(2));
      store.put(b('b'), b('2'), source(3));
      fx.task.flush();
      store.put(b('c'), b('3'), source(4));
      await fx.reopen(); // no commit: like a crash, as far as the committed store goes
      const reopened = fx.task.store('counts');
      expect(reopened.get(b('a'))?.toString()).toBe('1');
      expect(reopened.get(b('b'))).toBeUndefined();
      for (const readCommitted of [true, false]) {
        const view = reopened.view({ readCommitted });
        expect(await collect(view.range())).toEqual(['a=1']);
        await view.close();
      }
      expect(fx.task.changelogOffsets()).toEqual({ counts: 1 });
    });
  });

  describe('commit needed', () => {
    it('fires when uncommitted bytes pass the limit, and committing on the signal keeps them within one record of it', async () => {
      const limit = 20_000;
      await fx.restart({ uncommittedMaxBytes: limit, cacheMaxBytes: 4_000 });
      const store = fx.task.store('counts');
      let signals = 0;
      fx.engine.onCommitNeeded((bytes) => {
        signals++;
        expect(bytes).toBeGreaterThan(limit);
      });
      let maxSeen = 0;
      let maxRecord = 0;
      for (let i = 0; i < 2_000; i++) {
        const key = b(`key-${i % 700}`);
        const value = Buffer.alloc(10 + (i % 90), 1);
        maxRecord = Math.max(maxRecord, key.length + value.length + 64);
        const before = signals;
        store.put(key, value, source(i));
        maxSeen = Math.max(maxSeen, fx.engine.uncommittedBytes());
        expect(fx.task.uncommittedBytes()).toBe(fx.engine.uncommittedBytes());
        if (signals > before) await fx.task.commit({});
      }
      expect(signals).toBeGreaterThan(3);
      expect(maxSeen).toBeGreaterThan(limit);
      expect(maxSeen).toBeLessThanOrEqual(limit + maxRecord);
      await fx.task.commit({});
      expect(fx.engine.uncommittedBytes()).toBe(0);
    });
  });

  describe('record cache', () => {
    it('keeps its own copy of a key that is a view into a large buffer (a pack, a fetched batch), never the buffer', async () => {
      await fx.restart({ cacheMaxBytes: 1_000_000 });
      const flushed: Buffer[] = [];
      fx.task.onFlush((changes) => flushed.push(...changes.map((c) => c.key)));
      const counts = fx.task.processingStore('counts');
      const heard: Buffer[] = [];
      const unsubscribe = fx.task.store('counts').subscribe((event) => heard.push(...event.changes.map((c) => c.key)), { kind: 'uncommitted' });
      // Larger than the Buffer pool's slab on every Node line (8 KiB on 22, 64 KiB from 24).
      const big = Buffer.alloc(1024 * 1024, 0x61);
      big.write('kafka', 100, 'latin1');
      const view = big.subarray(100, 105);
      counts.put(view, b('1'), source(1));
      counts.put(view, b('2'), source(2), 'kafka'); // the internal form passed along: the same key
      expect(counts.get(b('kafka'), 'kafka')?.toString()).toBe('2');
      await fx.task.commit({});
      unsubscribe();
      // Neither the cache (whose key bytes the changelog gets) nor a subscriber keeps `big` alive.
      expect(flushed.map((k) => k.toString())).toEqual(['kafka']);
      expect(heard.map((k) => k.toString())).toEqual(['kafka', 'kafka']);
      for (const key of [...flushed, ...heard]) expect(key.buffer).not.toBe(big.buffer);
    });

    it('evicting a dirty entry flushes the whole named cache, in write order, into the write batch', async () => {
      await fx.restart({ cacheMaxBytes: 3 * (1 + 1 + 64) });
      const flushed: string[][] = [];
      fx.task.onFlush((changes) => flushed.push(changes.map((c) => `${c.storeName}:${c.key.toString()}`)));
      const counts = fx.task.store('counts');
      const other = fx.task.store('other');
      counts.put(b('a'), b('1'), source(1));
      other.put(b('z'), b('1'), source(2));
      counts.put(b('b'), b('1'), source(3));
      expect(flushed).toEqual([]);
      // Over the limit: evicting the eldest (counts:a, dirty) first flushes every dirty entry
      // of its named cache, c included (ThreadCache.put puts, then maybeEvict), not other:z.
      counts.put(b('c'), b('1'), source(4));
      expect(flushed).toEqual([['counts:a', 'counts:b', 'counts:c']]);
      counts.get(b('b')); // a read is a use: b moves behind c in the LRU order
      counts.put(b('d'), b('1'), source(5)); // evicts other:z, the least recently used: flushes other only
      expect(flushed).toEqual([['counts:a', 'counts:b', 'counts:c'], ['other:z']]);
      counts.put(b('e'), b('1'), source(6)); // evicts counts:c, clean: no flush
      expect(flushed).toHaveLength(2);
      expect(counts.get(b('c'))?.toString()).toBe('1'); // still readable from the write batch
      const committed = counts.view({ readCommitted: true });
      const uncommitted = counts.view({ readCommitted: false });
      expect(await collect(committed.range())).toEqual([]);
      expect(await collect(uncommitted.range())).toEqual(['a=1', 'b=1', 'c=1', 'd=1', 'e=1']);
      await committed.close();
      await uncommitted.close();
    });

    it('works with the cache disabled: every write goes straight to the write batch', async () => {
      await fx.restart({ cacheMaxBytes: 0 });
      let flushes = 0;
      fx.task.onFlush(() => flushes++);
      const store = fx.task.store('counts');
      store.put(b('a'), b('1'), source(1));
      store.put(b('a'), b('2'), source(2));
      expect(flushes).toBe(2);
      expect(store.get(b('a'))?.toString()).toBe('2');
      await fx.task.commit({});
      const view = store.view({ readCommitted: true });
      expect(await collect(view.range())).toEqual(['a=2']);
      await view.close();
    });
  });

  describe('bad input', () => {
    it('rejects keys and values above the limits before anything is written', async () => {
      await fx.restart({ maxKeyBytes: 8, maxValueBytes: 16 });
      const store = fx.task.store('counts');
      const flushes: unknown[] = [];
      fx.task.onFlush((c) => flushes.push(c));
      await expectCode(() => store.put(Buffer.alloc(9), b('v'), source(1)), 'KEY_TOO_LARGE');
      await expectCode(() => store.delete(Buffer.alloc(9), source(2)), 'KEY_TOO_LARGE');
      await expectCode(() => store.put(b('k'), Buffer.alloc(17), source(3)), 'VALUE_TOO_LARGE');
      store.put(Buffer.alloc(8), Buffer.alloc(16), source(4)); // at the limits is fine
      expect(store.uncommittedPosition().toJSON()).toEqual({ input: { '0': 4 } });
      await fx.task.commit({});
      expect(flushes).toHaveLength(1);
      const view = store.view({ readCommitted: true });
      expect((await collect(view.range())).length).toBe(1);
      await view.close();
    });

    it('rejects a range whose from sorts after its to, and bad limits, with INVALID_RANGE', async () => {
      const view = fx.task.store('counts').view({ readCommitted: false });
      await expectCode(() => view.range({ from: b('b'), to: b('a') }), 'INVALID_RANGE');
      await expectCode(() => view.range({ from: b('a\x00'), to: b('a'), order: 'desc' }), 'INVALID_RANGE');
      await expectCode(() => view.range({ limit: -1 }), 'INVALID_RANGE');
      await expectCode(() => view.range({ limit: 1.5 }), 'INVALID_RANGE');
      await expectCode(() => view.prefix(b('a'), { limit: -2 }), 'INVALID_RANGE');
      expect(await collect(view.range({ from: b('a'), to: b('a') }))).toEqual([]);
      await view.close();
    });

    it('bytes that do not decode raise DECODE_FAILED and leave the store unharmed', async () => {
      const store = fx.task.store('counts');
      store.put(b('bad'), Buffer.from([0xff, 0xfe]), source(1));
      store.put(b('good'), serdes.json.serialize({ n: 1 }), source(2));
      await fx.task.commit({});
      const view = store.view({ readCommitted: true });
      const bad = (await view.get(b('bad')))!;
      await expectCode(() => serdes.json.deserialize(bad), 'DECODE_FAILED');
      await expectCode(() => serdes.int64.deserialize(bad), 'DECODE_FAILED');
      expect(serdes.json.deserialize((await view.get(b('good')))!)).toEqual({ n: 1 });
      await view.close();
      store.put(b('after'), b('ok'), source(3));
      await fx.task.commit({});
      expect(store.get(b('after'))?.toString()).toBe('ok');
    });

    it('unknown store names raise STORE_NOT_FOUND', async () => {
      await expectCode(() => fx.task.store('nope'), 'STORE_NOT_FOUND');
      await expectCode(() => fx.task.restore('nope', [], 0, Position.empty()), 'STORE_NOT_FOUND');
      await expectCode(() => fx.task.commit({ nope: 1 }), 'STORE_NOT_FOUND');
    });

    it('a closed view, task or engine raises STORE_CLOSED', async () => {
      const store = fx.task.store('counts');
      store.put(b('a'), b('1'), source(1));
      await fx.task.commit({});
      const view = store.view({ readCommitted: false });
      const open = store.view({ readCommitted: true });
      await view.close();
      await expectCode(view.get(b('a')), 'STORE_CLOSED');
      await expectCode(view.getMany([b('a')]), 'STORE_CLOSED');
      await expectCode(() => view.range(), 'STORE_CLOSED');

      await fx.task.close();
      await expectCode(() => store.put(b('a'), b('2'), source(2)), 'STORE_CLOSED');
      await expectCode(() => store.get(b('a')), 'STORE_CLOSED');
      await expectCode(() => store.view({ readCommitted: true }), 'STORE_CLOSED');
      await expectCode(() => fx.task.store('counts'), 'STORE_CLOSED');
      await expectCode(() => fx.task.commit({}), 'STORE_CLOSED');
      await expectCode(() => fx.task.flush(), 'STORE_CLOSED');
      expect((await open.get(b('a')))?.toString()).toBe('1'); // views outlive their task

      const again = await fx.engine.openTask('task-0', STORES); // a closed task's partitions can be reopened
      await fx.engine.close();
      await expectCode(open.get(b('a')), 'STORE_CLOSED');
      await expectCode(async () => collect(open.range()), 'STORE_CLOSED');
      await expectCode(() => again.store('counts').put(b('a'), b('3'), source(3)), 'STORE_CLOSED');
      await expectCode(fx.engine.openTask('task-1', [{ name: 'counts', partition: 1 }]), 'STORE_CLOSED');
      await open.close();
    });
  });
}
