/**
 * Reads: isolation levels, ranges and prefixes, point-in-time views.
 * Part of the store contract suite (store-contract.ts).
 */
import { describe, expect, it } from 'vitest';
import { serdes } from '../../../src/store/index.js';
import { openTaskForEachTest } from './store-contract-support.js';
import { b, collect, source, type HarnessFactory } from './store-harness.js';

export function describeReadContract(factory: HarnessFactory): void {
  const fx = openTaskForEachTest(factory);

  describe('isolation', () => {
    it('a committed read never shows uncommitted writes, an uncommitted read does', async () => {
      const store = fx.task.store('counts');
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

      fx.task.flush();
      const afterFlush = store.view({ readCommitted: true });
      expect(await afterFlush.get(b('k'))).toBeUndefined();
      await afterFlush.close();

      await fx.task.commit({});
      const afterCommit = store.view({ readCommitted: true });
      expect((await afterCommit.get(b('k')))?.toString()).toBe('v1');
      await afterCommit.close();
    });

    it('aborted writes are never visible, at either isolation level', async () => {
      const store = fx.task.store('counts');
      store.put(b('a'), b('1'), source(1));
      await fx.task.commit({});
      store.put(b('a'), b('2'), source(2));
      store.put(b('b'), b('2'), source(3));
      fx.task.flush();
      store.put(b('c'), b('3'), source(4));
      fx.task.abort();
      expect(store.get(b('a'))?.toString()).toBe('1');
      expect(store.get(b('b'))).toBeUndefined();
      for (const readCommitted of [true, false]) {
        const view = store.view({ readCommitted });
        expect(await collect(view.range())).toEqual(['a=1']);
        expect(view.position.toJSON()).toEqual({ input: { '0': 1 } });
        await view.close();
      }
      expect(store.uncommittedPosition().toJSON()).toEqual({ input: { '0': 1 } });
      expect(fx.task.uncommittedBytes()).toBe(0);
      expect(fx.engine.uncommittedBytes()).toBe(0);
      await fx.task.commit({});
      const view = store.view({ readCommitted: true });
      expect(await collect(view.range())).toEqual(['a=1']);
      await view.close();
    });

    it('the uncommitted view layers cache over write batch over committed, tombstones masking, ranges included', async () => {
      const store = fx.task.store('counts');
      for (const k of ['a', 'b', 'c', 'd', 'e']) store.put(b(k), b(`committed-${k}`), source(1));
      await fx.task.commit({});
      store.put(b('b'), b('batch-b'), source(2));
      store.delete(b('c'), source(3));
      store.put(b('f'), b('batch-f'), source(4));
      fx.task.flush(); // b, c (tombstone), f now sit in the write batch
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

      await fx.task.commit({});
      const after = store.view({ readCommitted: true });
      expect(await collect(after.range())).toEqual(expected);
      await after.close();
    });

    it('writes made while a commit is in flight stay uncommitted and visible to uncommitted reads', async () => {
      const store = fx.task.store('counts');
      store.put(b('a'), b('1'), source(1));
      store.put(b('b'), b('1'), source(2));
      fx.task.flush();
      const first = fx.task.commit({ counts: 1 });
      store.put(b('b'), b('2'), source(3));
      store.delete(b('a'), source(4));
      store.put(b('c'), b('2'), source(5));
      const second = fx.task.commit({ counts: 2 }); // queued behind the first
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
      expect(fx.task.changelogOffsets()).toEqual({ counts: 2 });
      expect(store.committedPosition().toJSON()).toEqual({ input: { '0': 5 } });
      expect(store.uncommittedPosition().toJSON()).toEqual({ input: { '0': 6 } });
      expect(await collect(during.range())).toEqual(['b=2', 'c=2', 'd=3']);
      await during.close();
      await fx.task.commit({});
      const last = store.view({ readCommitted: true });
      expect(await collect(last.range())).toEqual(['b=2', 'c=2', 'd=3']);
      await last.close();
    });

    it('stores of one task are isolated from each other', async () => {
      fx.task.store('counts').put(b('k'), b('1'), source(1));
      fx.task.store('other').put(b('k'), b('2'), source(2));
      await fx.task.commit({});
      const view = fx.task.store('other').view({ readCommitted: true });
      expect(await collect(view.range())).toEqual(['k=2']);
      await view.close();
    });
  });

  describe('ranges', () => {
    const keys = ['', '\x00', 'a', 'a\x00', 'ab', 'b', 'b\xff', 'b\xff\xff', 'c', '\xff', '\xff\xff'];

    async function seeded(committedShare: number) {
      const store = fx.task.store('counts');
      keys.forEach((k, i) => {
        if (i < committedShare) store.put(b(k), b(String(i)), source(i));
      });
      await fx.task.commit({});
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
      const store = fx.task.store('counts');
      const lengths = [0, 1, 16, 255, 256, 257, 1000, 5000, 16, 3, 70_000].filter((n) => n <= 65_536);
      const keys = lengths.map((n, i) => Buffer.alloc(n, 0x61 + i));
      keys.forEach((key, i) => store.put(key, b(`v${i}`), source(i)));
      await fx.task.commit({});
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

    it('sortable numeric serdes make numeric ranges work, negatives included', async () => {
      const store = fx.task.store('counts');
      const numbers = [-2_000_000_000, -5, -1, 0, 1, 7, 300, 2_000_000_000];
      for (const n of [...numbers].reverse()) store.put(serdes.sortableInt32.serialize(n), serdes.sortableInt32.serialize(n), source(1));
      const view = store.view({ readCommitted: false });
      const seen: number[] = [];
      for await (const { key } of view.range({ from: serdes.sortableInt32.serialize(-5), to: serdes.sortableInt32.serialize(300) })) {
        seen.push(serdes.sortableInt32.deserialize(key));
      }
      expect(seen).toEqual([-5, -1, 0, 1, 7, 300]);
      await view.close();
    });

    it('next() called again before the previous call resolved still yields each entry once, in order', async () => {
      const store = fx.task.store('counts');
      for (let i = 0; i < 2500; i++) store.put(b(`k${String(i).padStart(4, '0')}`), b('v'), source(i));
      await fx.task.commit({});
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

    it('an iterator returned while a chunk is being read yields nothing more', async () => {
      const store = fx.task.store('counts');
      for (let i = 0; i < 50; i++) store.put(b(`k${String(i).padStart(2, '0')}`), b('v'), source(i));
      await fx.task.commit({});
      store.put(b('k00x'), b('u'), source(99));
      for (const readCommitted of [true, false]) {
        const view = store.view({ readCommitted });
        const iterator = view.range();
        const pending = iterator.next();
        await iterator.return!();
        expect(await pending).toEqual({ done: true, value: undefined });
        expect(await iterator.next()).toEqual({ done: true, value: undefined });
        await view.close();
      }
    });

    it('an iterator abandoned early releases its resources and the view still closes', async () => {
      const store = fx.task.store('counts');
      for (let i = 0; i < 50; i++) store.put(b(`k${String(i).padStart(2, '0')}`), b('v'), source(i));
      await fx.task.commit({});
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
      const store = fx.task.store('counts');
      store.put(b('a'), b('1'), source(1));
      store.put(b('b'), b('1'), source(2));
      await fx.task.commit({});
      store.put(b('c'), b('1'), source(3));
      fx.task.flush();
      store.put(b('d'), b('1'), source(4));
      const committed = store.view({ readCommitted: true });
      const uncommitted = store.view({ readCommitted: false });
      const before = { c: await collect(committed.range()), u: await collect(uncommitted.range()) };
      store.put(b('a'), b('2'), source(5));
      store.delete(b('b'), source(6));
      store.put(b('e'), b('2'), source(7));
      await fx.task.commit({});
      store.put(b('f'), b('3'), source(8));
      fx.task.flush();
      store.delete(b('c'), source(9));
      fx.task.abort();
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
      const store = fx.task.store('counts');
      for (let i = 0; i < 3000; i++) store.put(b(`k${String(i).padStart(5, '0')}`), b('old'), source(i));
      await fx.task.commit({});
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
            await fx.task.commit({});
          }
        }
        expect(count).toBe(3000);
        await view.close();
        fx.task.abort();
        for (let i = 0; i < 3000; i++) store.put(b(`k${String(i).padStart(5, '0')}`), b('old'), source(offset++));
        await fx.task.commit({});
      }
    });
  });

}
