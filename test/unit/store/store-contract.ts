/**
 * The one contract suite every StoreEngine passes (abstract-level's habit: one shared test
 * suite, many implementations). Call it with a harness factory from a *.test.ts file.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isIqgateError, type ErrorCode } from '../../../src/errors.js';
import { Position, serdes } from '../../../src/store/index.js';
import type { FlushedChange, StoreChangeEvent, StoreEngine, TaskStores } from '../../../src/store/index.js';
import { b, collect, source, type EngineHarness, type HarnessFactory } from './store-harness.js';

const STORES = [
  { name: 'counts', partition: 0 },
  { name: 'other', partition: 0 },
];

async function expectCode(promiseOrFn: Promise<unknown> | (() => unknown), code: ErrorCode): Promise<void> {
  let caught: unknown;
  try {
    await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn);
  } catch (error) {
    caught = error;
  }
  expect(isIqgateError(caught, code), `expected IqgateError ${code}, got ${String(caught)}`).toBe(true);
}

export function describeStoreContract(name: string, factory: HarnessFactory): void {
  describe(`store contract: ${name}`, () => {
    let harness: EngineHarness;
    let engine: StoreEngine;
    let task: TaskStores;

    beforeEach(async () => {
      harness = await factory();
      engine = await harness.open();
      task = await engine.openTask('task-0', STORES);
    });

    afterEach(async () => {
      await harness.cleanup();
    });

    describe('isolation', () => {
      it('a committed read never shows uncommitted writes, an uncommitted read does', async () => {
        const store = task.store('counts');
        store.put(b('k'), b('v1'), source(1));
        const committed = store.view({ readCommitted: true });
        const uncommitted = store.view({ readCommitted: false });
        expect(await committed.get(b('k'))).toBeUndefined();
        expect(await collect(committed.range())).toEqual([]);
        expect((await uncommitted.get(b('k')))?.toString()).toBe('v1');
        expect(await collect(uncommitted.range())).toEqual(['k=v1']);
        expect(store.get(b('k'))?.toString()).toBe('v1');
        await committed.close();
        await uncommitted.close();

        task.flush();
        const afterFlush = store.view({ readCommitted: true });
        expect(await afterFlush.get(b('k'))).toBeUndefined();
        await afterFlush.close();

        await task.commit({});
        const afterCommit = store.view({ readCommitted: true });
        expect((await afterCommit.get(b('k')))?.toString()).toBe('v1');
        await afterCommit.close();
      });

      it('aborted writes are never visible, at either isolation level', async () => {
        const store = task.store('counts');
        store.put(b('a'), b('1'), source(1));
        await task.commit({});
        store.put(b('a'), b('2'), source(2));
        store.put(b('b'), b('2'), source(3));
        task.flush();
        store.put(b('c'), b('3'), source(4));
        task.abort();
        expect(store.get(b('a'))?.toString()).toBe('1');
        expect(store.get(b('b'))).toBeUndefined();
        for (const readCommitted of [true, false]) {
          const view = store.view({ readCommitted });
          expect(await collect(view.range())).toEqual(['a=1']);
          expect(view.position.toJSON()).toEqual({ input: { '0': 1 } });
          await view.close();
        }
        expect(store.uncommittedPosition().toJSON()).toEqual({ input: { '0': 1 } });
        expect(task.uncommittedBytes()).toBe(0);
        expect(engine.uncommittedBytes()).toBe(0);
        await task.commit({});
        const view = store.view({ readCommitted: true });
        expect(await collect(view.range())).toEqual(['a=1']);
        await view.close();
      });

      it('the uncommitted view layers cache over write batch over committed, tombstones masking, ranges included', async () => {
        const store = task.store('counts');
        for (const k of ['a', 'b', 'c', 'd', 'e']) store.put(b(k), b(`committed-${k}`), source(1));
        await task.commit({});
        store.put(b('b'), b('batch-b'), source(2));
        store.delete(b('c'), source(3));
        store.put(b('f'), b('batch-f'), source(4));
        task.flush(); // b, c (tombstone), f now sit in the write batch
        store.put(b('b'), b('cache-b'), source(5)); // cache over batch
        store.delete(b('d'), source(6)); // cache tombstone over committed
        store.put(b('c'), b('cache-c'), source(7)); // cache value over batch tombstone
        store.delete(b('f'), source(8)); // cache tombstone over batch value
        store.put(b('0'), b('cache-0'), source(9));
        const view = store.view({ readCommitted: false });
        const expected = ['0=cache-0', 'a=committed-a', 'b=cache-b', 'c=cache-c', 'e=committed-e'];
        expect(await collect(view.range())).toEqual(expected);
        expect(await collect(view.range({ order: 'desc' }))).toEqual([...expected].reverse());
        expect(await collect(view.range({ from: b('b'), to: b('e'), limit: 2 }))).toEqual(['b=cache-b', 'c=cache-c']);
        expect(await collect(view.range({ from: b('a'), to: b('f'), order: 'desc', limit: 2 }))).toEqual([
          'e=committed-e',
          'c=cache-c',
        ]);
        const keys = ['0', 'a', 'b', 'c', 'd', 'e', 'f', 'zz'].map(b);
        expect((await view.getMany(keys)).map((v) => v?.toString())).toEqual([
          'cache-0', 'committed-a', 'cache-b', 'cache-c', undefined, 'committed-e', undefined, undefined,
        ]);
        for (const key of keys) expect((await view.get(key))?.toString()).toBe(store.get(key)?.toString());
        await view.close();

        const committed = store.view({ readCommitted: true });
        expect(await collect(committed.range())).toEqual(['a', 'b', 'c', 'd', 'e'].map((k) => `${k}=committed-${k}`));
        await committed.close();

        await task.commit({});
        const after = store.view({ readCommitted: true });
        expect(await collect(after.range())).toEqual(expected);
        await after.close();
      });

      it('writes made while a commit is in flight stay uncommitted and visible to uncommitted reads', async () => {
        const store = task.store('counts');
        store.put(b('a'), b('1'), source(1));
        store.put(b('b'), b('1'), source(2));
        task.flush();
        const first = task.commit({ counts: 1 });
        store.put(b('b'), b('2'), source(3));
        store.delete(b('a'), source(4));
        store.put(b('c'), b('2'), source(5));
        const second = task.commit({ counts: 2 }); // queued behind the first
        store.put(b('d'), b('3'), source(6));
        const during = store.view({ readCommitted: false });
        expect(await collect(during.range())).toEqual(['b=2', 'c=2', 'd=3']);
        expect(store.get(b('a'))).toBeUndefined();
        await first;
        const afterFirst = store.view({ readCommitted: true });
        // The second commit may have landed too by now; either way the view is one whole commit.
        const seen = await collect(afterFirst.range());
        expect([['a=1', 'b=1'], ['b=2', 'c=2']]).toContainEqual(seen);
        expect(afterFirst.position.toJSON()).toEqual({ input: { '0': seen[0] === 'a=1' ? 2 : 5 } });
        await afterFirst.close();
        await second;
        expect(task.changelogOffsets()).toEqual({ counts: 2 });
        expect(store.committedPosition().toJSON()).toEqual({ input: { '0': 5 } });
        expect(store.uncommittedPosition().toJSON()).toEqual({ input: { '0': 6 } });
        expect(await collect(during.range())).toEqual(['b=2', 'c=2', 'd=3']);
        await during.close();
        await task.commit({});
        const last = store.view({ readCommitted: true });
        expect(await collect(last.range())).toEqual(['b=2', 'c=2', 'd=3']);
        await last.close();
      });

      it('stores of one task are isolated from each other', async () => {
        task.store('counts').put(b('k'), b('1'), source(1));
        task.store('other').put(b('k'), b('2'), source(2));
        await task.commit({});
        const view = task.store('other').view({ readCommitted: true });
        expect(await collect(view.range())).toEqual(['k=2']);
        await view.close();
      });
    });

    describe('ranges', () => {
      const keys = ['', '\x00', 'a', 'a\x00', 'ab', 'b', 'b\xff', 'b\xff\xff', 'c', '\xff', '\xff\xff'];

      async function seeded(committedShare: number) {
        const store = task.store('counts');
        keys.forEach((k, i) => {
          if (i < committedShare) store.put(b(k), b(String(i)), source(i));
        });
        await task.commit({});
        keys.forEach((k, i) => {
          if (i >= committedShare) store.put(b(k), b(String(i)), source(i));
        });
        return store;
      }

      for (const committedShare of [0, 5, keys.length]) {
        for (const readCommitted of [false, true]) {
          it(`orders by key bytes, shorter first, with inclusive bounds and limits (${committedShare} committed, readCommitted ${readCommitted})`, async () => {
            const store = await seeded(committedShare);
            const view = store.view({ readCommitted });
            const visible = readCommitted ? keys.slice(0, committedShare) : keys;
            const all = visible.map((k) => `${k}=${keys.indexOf(k)}`);
            expect(await collect(view.range())).toEqual(all);
            expect(await collect(view.range({ order: 'desc' }))).toEqual([...all].reverse());
            const within = (lo: string, hi: string) => all.filter((e) => {
              const k = e.slice(0, e.lastIndexOf('='));
              return k >= lo && k <= hi;
            });
            expect(await collect(view.range({ from: b('a'), to: b('b\xff') }))).toEqual(within('a', 'b\xff'));
            expect(await collect(view.range({ from: b('a\x00'), to: b('a\x00') }))).toEqual(within('a\x00', 'a\x00'));
            expect(await collect(view.range({ from: b('aa'), to: b('ab'), order: 'desc' }))).toEqual(within('aa', 'ab').reverse());
            expect(await collect(view.range({ from: b('b') }))).toEqual(within('b', '\xff\xff\xff'));
            expect(await collect(view.range({ to: b('a') }))).toEqual(within('', 'a'));
            expect(await collect(view.range({ to: b('a'), order: 'desc', limit: 2 }))).toEqual(within('', 'a').reverse().slice(0, 2));
            expect(await collect(view.range({ limit: 3 }))).toEqual(all.slice(0, 3));
            expect(await collect(view.range({ limit: 0 }))).toEqual([]);
            expect(await collect(view.range({ from: b('bb'), to: b('bc') }))).toEqual([]);
            await view.close();
          });

          it(`prefix returns exactly the keys starting with the prefix (${committedShare} committed, readCommitted ${readCommitted})`, async () => {
            const store = await seeded(committedShare);
            const view = store.view({ readCommitted });
            const visible = readCommitted ? keys.slice(0, committedShare) : keys;
            const withPrefix = (p: string) => visible.filter((k) => k.startsWith(p)).map((k) => `${k}=${keys.indexOf(k)}`);
            for (const p of ['', 'a', 'b\xff', '\xff', '\xff\xff', 'q']) {
              expect(await collect(view.prefix(b(p)))).toEqual(withPrefix(p));
              expect(await collect(view.prefix(b(p), { order: 'desc' }))).toEqual(withPrefix(p).reverse());
              expect(await collect(view.prefix(b(p), { limit: 1 }))).toEqual(withPrefix(p).slice(0, 1));
            }
            await view.close();
          });
        }
      }

      it('keys of very different lengths round-trip through commit, gets and ranges', async () => {
        const store = task.store('counts');
        const lengths = [0, 1, 16, 255, 256, 257, 1000, 5000, 16, 3, 70_000].filter((n) => n <= 65_536);
        const keys = lengths.map((n, i) => Buffer.alloc(n, 0x61 + i));
        keys.forEach((key, i) => store.put(key, b(`v${i}`), source(i)));
        await task.commit({});
        const view = store.view({ readCommitted: true });
        for (let i = 0; i < keys.length; i++) {
          expect((await view.get(keys[i]!))?.toString()).toBe(`v${i}`);
          expect(store.get(keys[i]!)?.toString()).toBe(`v${i}`);
        }
        expect((await view.getMany(keys)).map((v) => v?.toString())).toEqual(keys.map((_, i) => `v${i}`));
        const ranged: Buffer[] = [];
        for await (const { key } of view.range()) ranged.push(key);
        expect(ranged.map((k) => k.toString('hex'))).toEqual([...keys].sort(Buffer.compare).map((k) => k.toString('hex')));
        await view.close();
      });

      it('order-preserving numeric serdes make numeric ranges work, negatives included', async () => {
        const store = task.store('counts');
        const numbers = [-2_000_000_000, -5, -1, 0, 1, 7, 300, 2_000_000_000];
        for (const n of [...numbers].reverse()) store.put(serdes.int32.serialize(n), serdes.int32.serialize(n), source(1));
        const view = store.view({ readCommitted: false });
        const seen: number[] = [];
        for await (const { key } of view.range({ from: serdes.int32.serialize(-5), to: serdes.int32.serialize(300) })) {
          seen.push(serdes.int32.deserialize(key));
        }
        expect(seen).toEqual([-5, -1, 0, 1, 7, 300]);
        await view.close();
      });

      it('next() called again before the previous call resolved still yields each entry once, in order', async () => {
        const store = task.store('counts');
        for (let i = 0; i < 2500; i++) store.put(b(`k${String(i).padStart(4, '0')}`), b('v'), source(i));
        await task.commit({});
        store.put(b('k0001x'), b('u'), source(9999));
        for (const readCommitted of [true, false]) {
          const view = store.view({ readCommitted });
          const iterator = view.range();
          const results = await Promise.all(Array.from({ length: 2600 }, () => iterator.next()));
          const keys = results.filter((r) => r.done !== true).map((r) => (r.value as { key: Buffer }).key.toString());
          expect(keys).toHaveLength(readCommitted ? 2500 : 2501);
          expect([...keys].sort()).toEqual(keys);
          expect(new Set(keys).size).toBe(keys.length);
          await view.close();
        }
      });

      it('an iterator abandoned early releases its resources and the view still closes', async () => {
        const store = task.store('counts');
        for (let i = 0; i < 50; i++) store.put(b(`k${String(i).padStart(2, '0')}`), b('v'), source(i));
        await task.commit({});
        const view = store.view({ readCommitted: true });
        for await (const entry of view.range()) {
          expect(entry.key.toString()).toBe('k00');
          break;
        }
        const dangling = view.range();
        await dangling.next();
        await view.close();
        await view.close();
      });
    });

    describe('snapshots', () => {
      it('a view taken before later writes, flushes, commits and aborts does not change', async () => {
        const store = task.store('counts');
        store.put(b('a'), b('1'), source(1));
        store.put(b('b'), b('1'), source(2));
        await task.commit({});
        store.put(b('c'), b('1'), source(3));
        task.flush();
        store.put(b('d'), b('1'), source(4));
        const committed = store.view({ readCommitted: true });
        const uncommitted = store.view({ readCommitted: false });
        const before = { c: await collect(committed.range()), u: await collect(uncommitted.range()) };
        store.put(b('a'), b('2'), source(5));
        store.delete(b('b'), source(6));
        store.put(b('e'), b('2'), source(7));
        await task.commit({});
        store.put(b('f'), b('3'), source(8));
        task.flush();
        store.delete(b('c'), source(9));
        task.abort();
        expect(await collect(committed.range())).toEqual(before.c);
        expect(await collect(uncommitted.range())).toEqual(before.u);
        expect(await collect(uncommitted.range({ order: 'desc' }))).toEqual([...before.u].reverse());
        expect((await uncommitted.get(b('a')))?.toString()).toBe('1');
        expect((await committed.getMany([b('b'), b('e')])).map((v) => v?.toString())).toEqual(['1', undefined]);
        expect(committed.position.toJSON()).toEqual({ input: { '0': 2 } });
        expect(uncommitted.position.toJSON()).toEqual({ input: { '0': 4 } });
        await committed.close();
        await uncommitted.close();
      });

      it('a range read interleaved with commits stays on its point in time', async () => {
        const store = task.store('counts');
        for (let i = 0; i < 3000; i++) store.put(b(`k${String(i).padStart(5, '0')}`), b('old'), source(i));
        await task.commit({});
        for (const readCommitted of [true, false]) {
          const view = store.view({ readCommitted });
          let count = 0;
          let offset = 10_000;
          for await (const { key, value } of view.range()) {
            expect(value.toString()).toBe('old');
            if (count++ % 500 === 0) {
              store.put(key, b('new'), source(offset++));
              store.put(b(`k${String(count + 5).padStart(5, '0')}`), b('new'), source(offset++));
              store.delete(b(`k${String(count + 7).padStart(5, '0')}`), source(offset++));
              await task.commit({});
            }
          }
          expect(count).toBe(3000);
          await view.close();
          task.abort();
          for (let i = 0; i < 3000; i++) store.put(b(`k${String(i).padStart(5, '0')}`), b('old'), source(offset++));
          await task.commit({});
        }
      });
    });

    describe('positions, events and offsets', () => {
      it('keeps committed and uncommitted positions apart and persists the committed one with the data', async () => {
        const store = task.store('counts');
        store.put(b('a'), b('1'), source(5, 'in', 0));
        store.put(b('b'), b('1'), source(3, 'in', 1));
        store.put(b('c'), b('1'), source(2, 'in', 0)); // lower offset: the maximum stays
        expect(store.uncommittedPosition().toJSON()).toEqual({ in: { '0': 5, '1': 3 } });
        expect(store.committedPosition().isEmpty()).toBe(true);
        await task.commit({ counts: 42 });
        expect(store.committedPosition().toJSON()).toEqual({ in: { '0': 5, '1': 3 } });
        store.delete(b('a'), source(6, 'in', 0));
        expect(store.committedPosition().toJSON()).toEqual({ in: { '0': 5, '1': 3 } });
        expect(store.uncommittedPosition().toJSON()).toEqual({ in: { '0': 6, '1': 3 } });
        expect(task.store('other').committedPosition().isEmpty()).toBe(true);
        expect(task.changelogOffsets()).toEqual({ counts: 42 });

        await engine.close();
        engine = await harness.open();
        task = await engine.openTask('task-0', STORES);
        const reopened = task.store('counts');
        expect(reopened.committedPosition().toJSON()).toEqual({ in: { '0': 5, '1': 3 } });
        expect(reopened.uncommittedPosition().toJSON()).toEqual({ in: { '0': 5, '1': 3 } });
        expect(task.changelogOffsets()).toEqual({ counts: 42 });
        const view = reopened.view({ readCommitted: true });
        expect(view.position.toJSON()).toEqual({ in: { '0': 5, '1': 3 } });
        expect(await collect(view.range())).toEqual(['a=1', 'b=1', 'c=1']);
        await view.close();
      });

      it('changelog offsets absent from a commit keep their previous value', async () => {
        await task.commit({ counts: 7, other: 1 });
        await task.commit({ other: 3 });
        expect(task.changelogOffsets()).toEqual({ counts: 7, other: 3 });
      });

      it('subscribers get uncommitted events on flush and committed events after the commit', async () => {
        const store = task.store('counts');
        const events: StoreChangeEvent[] = [];
        const unsubscribe = store.subscribe((event) => events.push(event));
        store.put(b('a'), b('1'), source(1));
        store.put(b('a'), b('2'), source(2));
        store.delete(b('b'), source(3));
        expect(events).toEqual([]);
        task.flush();
        expect(events).toHaveLength(1);
        expect(events[0]!.kind).toBe('uncommitted');
        expect(events[0]!.changes.map((c) => [c.key.toString(), c.value?.toString() ?? null])).toEqual([
          ['a', '2'],
          ['b', null],
        ]);
        expect(events[0]!.position.toJSON()).toEqual({ input: { '0': 3 } });
        await task.commit({});
        expect(events).toHaveLength(2);
        expect(events[1]!.kind).toBe('committed');
        expect(events[1]!.changes.map((c) => [c.key.toString(), c.value?.toString() ?? null])).toEqual([
          ['a', '2'],
          ['b', null],
        ]);
        expect(events[1]!.position.equals(store.committedPosition())).toBe(true);
        unsubscribe();
        store.put(b('c'), b('1'), source(4));
        await task.commit({});
        expect(events).toHaveLength(2);
      });

      it('flush hands dirty entries to the flush listener once per key, in order of their latest write', async () => {
        const flushed: FlushedChange[][] = [];
        task.onFlush((changes) => flushed.push([...changes]));
        const store = task.store('counts');
        store.put(b('x'), b('1'), source(1));
        store.put(b('y'), b('1'), source(2));
        store.put(b('x'), b('2'), source(3));
        store.delete(b('z'), source(4));
        task.flush();
        expect(flushed).toHaveLength(1);
        expect(flushed[0]!.map((c) => [c.storeName, c.partition, c.key.toString(), c.value?.toString() ?? null, c.source.offset])).toEqual([
          ['counts', 0, 'y', '1', 2],
          ['counts', 0, 'x', '2', 3],
          ['counts', 0, 'z', null, 4],
        ]);
        task.flush();
        expect(flushed).toHaveLength(1);
        store.put(b('w'), b('1'), source(5));
        await task.commit({}); // commit flushes
        expect(flushed).toHaveLength(2);
      });

      it('restore applies changelog records to the committed store with their offset and position', async () => {
        const store = task.store('counts');
        store.put(b('a'), b('uncommitted'), source(1));
        await task.restore('counts', [{ key: b('a'), value: b('r1') }, { key: b('b'), value: b('r2') }, { key: b('b'), value: null }], 11, Position.fromJSON({ input: { '0': 9 } }));
        expect(task.changelogOffsets()).toEqual({ counts: 11 });
        const committed = store.view({ readCommitted: true });
        expect(await collect(committed.range())).toEqual(['a=r1']);
        expect(committed.position.toJSON()).toEqual({ input: { '0': 9 } });
        await committed.close();
        expect(store.get(b('a'))?.toString()).toBe('uncommitted');
      });
    });

    describe('crash and reopen', () => {
      it('reopening shows exactly the last completed commit and nothing uncommitted', async () => {
        const store = task.store('counts');
        store.put(b('a'), b('1'), source(1));
        await task.commit({ counts: 1 });
        store.put(b('a'), b('2'), source(2));
        store.put(b('b'), b('2'), source(3));
        task.flush();
        store.put(b('c'), b('3'), source(4));
        await engine.close(); // no commit: like a crash, as far as the committed store goes
        engine = await harness.open();
        task = await engine.openTask('task-0', STORES);
        const reopened = task.store('counts');
        expect(reopened.get(b('a'))?.toString()).toBe('1');
        expect(reopened.get(b('b'))).toBeUndefined();
        for (const readCommitted of [true, false]) {
          const view = reopened.view({ readCommitted });
          expect(await collect(view.range())).toEqual(['a=1']);
          await view.close();
        }
        expect(task.changelogOffsets()).toEqual({ counts: 1 });
      });
    });

    describe('commit needed', () => {
      it('fires when uncommitted bytes pass the limit, and committing on the signal keeps them within one record of it', async () => {
        await harness.cleanup();
        harness = await factory();
        const limit = 20_000;
        engine = await harness.open({ uncommittedMaxBytes: limit, cacheMaxBytes: 4_000 });
        task = await engine.openTask('task-0', STORES);
        const store = task.store('counts');
        let signals = 0;
        engine.onCommitNeeded((bytes) => {
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
          maxSeen = Math.max(maxSeen, engine.uncommittedBytes());
          expect(task.uncommittedBytes()).toBe(engine.uncommittedBytes());
          if (signals > before) await task.commit({});
        }
        expect(signals).toBeGreaterThan(3);
        expect(maxSeen).toBeGreaterThan(limit);
        expect(maxSeen).toBeLessThanOrEqual(limit + maxRecord);
        await task.commit({});
        expect(engine.uncommittedBytes()).toBe(0);
      });
    });

    describe('record cache', () => {
      it('evicting a dirty entry flushes the whole named cache, in write order, into the write batch', async () => {
        await harness.cleanup();
        harness = await factory();
        engine = await harness.open({ cacheMaxBytes: 3 * (1 + 1 + 64) });
        task = await engine.openTask('task-0', STORES);
        const flushed: string[][] = [];
        task.onFlush((changes) => flushed.push(changes.map((c) => `${c.storeName}:${c.key.toString()}`)));
        const counts = task.store('counts');
        const other = task.store('other');
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
        await harness.cleanup();
        harness = await factory();
        engine = await harness.open({ cacheMaxBytes: 0 });
        task = await engine.openTask('task-0', STORES);
        let flushes = 0;
        task.onFlush(() => flushes++);
        const store = task.store('counts');
        store.put(b('a'), b('1'), source(1));
        store.put(b('a'), b('2'), source(2));
        expect(flushes).toBe(2);
        expect(store.get(b('a'))?.toString()).toBe('2');
        await task.commit({});
        const view = store.view({ readCommitted: true });
        expect(await collect(view.range())).toEqual(['a=2']);
        await view.close();
      });
    });

    describe('bad input', () => {
      it('rejects keys and values above the limits before anything is written', async () => {
        await harness.cleanup();
        harness = await factory();
        engine = await harness.open({ maxKeyBytes: 8, maxValueBytes: 16 });
        task = await engine.openTask('task-0', STORES);
        const store = task.store('counts');
        const flushes: unknown[] = [];
        task.onFlush((c) => flushes.push(c));
        await expectCode(() => store.put(Buffer.alloc(9), b('v'), source(1)), 'KEY_TOO_LARGE');
        await expectCode(() => store.delete(Buffer.alloc(9), source(2)), 'KEY_TOO_LARGE');
        await expectCode(() => store.put(b('k'), Buffer.alloc(17), source(3)), 'VALUE_TOO_LARGE');
        store.put(Buffer.alloc(8), Buffer.alloc(16), source(4)); // at the limits is fine
        expect(store.uncommittedPosition().toJSON()).toEqual({ input: { '0': 4 } });
        await task.commit({});
        expect(flushes).toHaveLength(1);
        const view = store.view({ readCommitted: true });
        expect((await collect(view.range())).length).toBe(1);
        await view.close();
      });

      it('rejects a range whose from sorts after its to, and bad limits, with INVALID_RANGE', async () => {
        const view = task.store('counts').view({ readCommitted: false });
        await expectCode(() => view.range({ from: b('b'), to: b('a') }), 'INVALID_RANGE');
        await expectCode(() => view.range({ from: b('a\x00'), to: b('a'), order: 'desc' }), 'INVALID_RANGE');
        await expectCode(() => view.range({ limit: -1 }), 'INVALID_RANGE');
        await expectCode(() => view.range({ limit: 1.5 }), 'INVALID_RANGE');
        await expectCode(() => view.prefix(b('a'), { limit: -2 }), 'INVALID_RANGE');
        expect(await collect(view.range({ from: b('a'), to: b('a') }))).toEqual([]);
        await view.close();
      });

      it('bytes that do not decode raise DECODE_FAILED and leave the store unharmed', async () => {
        const store = task.store('counts');
        store.put(b('bad'), Buffer.from([0xff, 0xfe]), source(1));
        store.put(b('good'), serdes.json.serialize({ n: 1 }), source(2));
        await task.commit({});
        const view = store.view({ readCommitted: true });
        const bad = (await view.get(b('bad')))!;
        await expectCode(() => serdes.json.deserialize(bad), 'DECODE_FAILED');
        await expectCode(() => serdes.int64.deserialize(bad), 'DECODE_FAILED');
        expect(serdes.json.deserialize((await view.get(b('good')))!)).toEqual({ n: 1 });
        await view.close();
        store.put(b('after'), b('ok'), source(3));
        await task.commit({});
        expect(store.get(b('after'))?.toString()).toBe('ok');
      });

      it('unknown store names raise STORE_NOT_FOUND', async () => {
        await expectCode(() => task.store('nope'), 'STORE_NOT_FOUND');
        await expectCode(() => task.restore('nope', [], 0, Position.empty()), 'STORE_NOT_FOUND');
        await expectCode(() => task.commit({ nope: 1 }), 'STORE_NOT_FOUND');
      });

      it('a closed view, task or engine raises STORE_CLOSED', async () => {
        const store = task.store('counts');
        store.put(b('a'), b('1'), source(1));
        await task.commit({});
        const view = store.view({ readCommitted: false });
        const open = store.view({ readCommitted: true });
        await view.close();
        await expectCode(view.get(b('a')), 'STORE_CLOSED');
        await expectCode(view.getMany([b('a')]), 'STORE_CLOSED');
        await expectCode(() => view.range(), 'STORE_CLOSED');

        await task.close();
        await expectCode(() => store.put(b('a'), b('2'), source(2)), 'STORE_CLOSED');
        await expectCode(() => store.get(b('a')), 'STORE_CLOSED');
        await expectCode(() => store.view({ readCommitted: true }), 'STORE_CLOSED');
        await expectCode(() => task.store('counts'), 'STORE_CLOSED');
        await expectCode(() => task.commit({}), 'STORE_CLOSED');
        await expectCode(() => task.flush(), 'STORE_CLOSED');
        expect((await open.get(b('a')))?.toString()).toBe('1'); // views outlive their task

        const again = await engine.openTask('task-0', STORES); // a closed task's partitions can be reopened
        await engine.close();
        await expectCode(open.get(b('a')), 'STORE_CLOSED');
        await expectCode(async () => collect(open.range()), 'STORE_CLOSED');
        await expectCode(() => again.store('counts').put(b('a'), b('3'), source(3)), 'STORE_CLOSED');
        await expectCode(engine.openTask('task-1', [{ name: 'counts', partition: 1 }]), 'STORE_CLOSED');
        await open.close();
      });
    });
  });
}
