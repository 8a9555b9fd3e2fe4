import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSortedMap } from '../../../src/store/sorted-map.js';
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
        const tree = createSortedMap<BatchValue>();
        let bytes = 0;
        for (const [k, v] of newer) {
          const previous = tree.get(k);
          if (previous !== undefined) bytes -= entryBytes(k, previous);
          tree.set(k, value(v));
          bytes += entryBytes(k, value(v));
          expected.set(k, value(v));
        }
        const before = batch.bytes;
        const delta = batch.absorb(tree, bytes);
        expect(batch.bytes).toBe(expected.bytes);
        expect(delta).toBe(expected.bytes - before);
        const dump = (b: WriteBatch) => [...b.entries()].map(([k, v]) => `${k}=${v === null ? '∅' : v.toString()}`);
        expect(dump(batch)).toEqual(dump(expected));
      }),
    );
  });

  it('a snapshot does not change when the batch absorbs or sets later', () => {
    const batch = new WriteBatch();
    batch.set('a', Buffer.from('1'));
    const snapshot = batch.snapshot();
    const newer = createSortedMap<BatchValue>();
    for (const k of ['a', 'b', 'c']) newer.set(k, Buffer.from('2'));
    batch.absorb(newer, 3 * entryBytes('a', Buffer.from('2')));
    batch.set('d', null);
    expect([...snapshot.entries()].map(([k, v]) => `${k}=${v?.toString()}`)).toEqual(['a=1']);
  });
});
