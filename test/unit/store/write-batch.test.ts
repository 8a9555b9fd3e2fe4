import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sortedMapFromSorted } from '../../../src/store/sorted-map.js';
import { WriteBatch, entryBytes, type BatchValue } from '../../../src/store/write-batch.js';

const entriesArb = fc.array(
  fc.tuple(fc.string({ unit: fc.constantFrom('a', 'b', 'c', '\xff'), maxLength: 3 }), fc.option(fc.string({ maxLength: 5 }), { nil: null })),
  { maxLength: 30 },
);

describe('WriteBatch', () => {
  it('absorbing a newer sorted map equals setting its entries one by one, contents and bytes', () => {
    fc.assert(
      fc.property(entriesArb, entriesArb, (older, newer) => {
        const value = (v: string | null): BatchValue => (v === null ? null : Buffer.from(v));
        const expected = new WriteBatch();
        const batch = new WriteBatch();
        for (const [k, v] of older) {
          expected.set(k, value(v));
          batch.set(k, value(v));
        }
        const incoming = new WriteBatch();
        for (const [k, v] of newer) {
          incoming.set(k, value(v));
          expected.set(k, value(v));
        }
        const before = batch.bytes;
        const delta = batch.absorb(incoming);
        expect(batch.bytes).toBe(expected.bytes);
        expect(delta).toBe(expected.bytes - before);
        // Array.from maps each pair as it comes: sortedEntries() reuses one pair array.
        const dump = (b: WriteBatch) => Array.from(b.sortedEntries(), ([k, v]) => `${k}=${v === null ? '∅' : v.toString()}`);
        expect(dump(batch)).toEqual(dump(expected));
        const unordered = (b: WriteBatch) => Array.from(b.entries(), ([k, v]) => `${k}=${v === null ? '∅' : v.toString()}`).sort();
        expect(unordered(batch)).toEqual(dump(expected).sort());
      }),
    );
  });

  it('snapshots, reads and commits taken between writes, flushes and absorbs see exactly the entries of their moment', () => {
    const opArb = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), entries: entriesArb }),
      fc.record({ kind: fc.constant('absorb' as const), entries: entriesArb, snapshotFirst: fc.boolean() }),
      fc.record({ kind: fc.constant('snapshot' as const) }),
      // A flush's entries (distinct keys): kept as arrays when the batch is empty, indexed later.
      fc.record({ kind: fc.constant('each' as const), entries: entriesArb }),
      fc.record({ kind: fc.constant('get' as const), key: fc.constantFrom('', 'a', 'b', 'ab', '\xff') }),
    );
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 20 }), (ops) => {
        const value = (v: string | null): BatchValue => (v === null ? null : Buffer.from(v));
        const show = (pairs: Iterable<[string, BatchValue]>) => Array.from(pairs, ([k, v]) => `${k}=${v === null ? '∅' : v.toString()}`);
        const batch = new WriteBatch();
        const model = new Map<string, BatchValue>();
        const expectations: Array<{ snapshot: ReturnType<WriteBatch['snapshot']>; expected: string[] }> = [];
        const modelDump = () => show([...model].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
        for (const op of ops) {
          if (op.kind === 'snapshot') {
            expectations.push({ snapshot: batch.snapshot(), expected: modelDump() });
            continue;
          }
          if (op.kind === 'get') {
            expect(batch.get(op.key)).toEqual(model.get(op.key));
            continue;
          }
          if (op.kind === 'each') {
            const distinct = new Map(op.entries.map(([k, v]) => [k, value(v)] as const));
            const before = batch.bytes;
            let expectedDelta = 0;
            for (const [k, v] of distinct) {
              const previous = model.get(k);
              expectedDelta += entryBytes(k, v) - (previous === undefined ? 0 : entryBytes(k, previous));
              model.set(k, v);
            }
            const delta = batch.setEach([...distinct].map(([key, v]) => ({ key, value: v, size: entryBytes(key, v) })));
            expect(delta).toBe(expectedDelta);
            expect(batch.bytes - before).toBe(expectedDelta);
            expect(batch.size).toBe(model.size);
            continue;
          }
          if (op.kind === 'set') {
            for (const [k, v] of op.entries) {
              batch.set(k, value(v));
              model.set(k, value(v));
            }
            continue;
          }
          const incoming = new WriteBatch();
          if (op.snapshotFirst) incoming.snapshot();
          for (const [k, v] of op.entries) {
            incoming.set(k, value(v));
            model.set(k, value(v));
          }
          batch.absorb(incoming);
        }
        const visited: Array<[string, BatchValue]> = [];
        batch.forEachEntry((k, v) => visited.push([k, v]));
        expect(show(visited).sort()).toEqual(modelDump().sort());
        expect(batch.size).toBe(model.size);
        expect(show(batch.sortedEntries())).toEqual(modelDump());
        expect(show(batch.snapshot().entries(undefined, []))).toEqual(modelDump());
        let bytes = 0;
        for (const [k, v] of model) bytes += entryBytes(k, v);
        expect(batch.bytes).toBe(bytes);
        for (const { snapshot, expected } of expectations) expect(show(snapshot.entries(undefined, []))).toEqual(expected);
      }),
    );
  });

  it('a snapshot does not change when the batch absorbs or sets later', () => {
    const batch = new WriteBatch();
    batch.set('a', Buffer.from('1'));
    const snapshot = batch.snapshot();
    const newer = new WriteBatch();
    for (const k of ['a', 'b', 'c']) newer.set(k, Buffer.from('2'));
    batch.absorb(newer);
    batch.set('d', null);
    expect(Array.from(snapshot.entries(), ([k, v]) => `${k}=${v?.toString()}`)).toEqual(['a=1']);
  });
});

describe('sortedMapFromSorted', () => {
  it('builds a valid tree of any size that stays valid under later writes and clones', () => {
    for (const n of [0, 1, 5, 23, 24, 25, 577, 600, 13_825]) {
      const keys = Array.from({ length: n }, (_, i) => String(i).padStart(8, '0'));
      const tree = sortedMapFromSorted<BatchValue>(keys, keys.map((k) => Buffer.from(k)));
      tree.checkValid();
      expect(tree.size).toBe(n);
      expect(Array.from(tree.keys())).toEqual(keys);
      const clone = tree.clone();
      tree.set('zz', null);
      tree.set('00000003a', null);
      if (n > 2) tree.delete(keys[2]!);
      tree.checkValid();
      clone.checkValid();
      expect(Array.from(clone.keys())).toEqual(keys);
    }
  });
});
