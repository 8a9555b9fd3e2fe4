/**
 * RangeOptions.expected sizes the committed store's first read: a page merged over many
 * partitions takes about its size divided among them, and each partition's first LevelDB read
 * is sized so instead of for the whole page (later reads grow, level-committed-store.ts).
 */
import { describe, expect, it } from 'vitest';
import { rangeQuery } from '../../../src/store/key-bounds.js';
import { mergeRange, type MemoryLayer } from '../../../src/store/merge-range.js';
import { createSortedMap, toInternalKey } from '../../../src/store/sorted-map.js';
import type { CommittedCursor } from '../../../src/store/committed-store.js';
import type { RangeQuery } from '../../../src/store/key-bounds.js';

/** A committed store of keys k000..k099, recording each cursor's query and first-read size. */
function committed() {
  const opened: Array<{ limit: number; firstChunk: number | undefined }> = [];
  const keys = Array.from({ length: 100 }, (_, i) => Buffer.from(`k${String(i).padStart(3, '0')}`));
  const open = (query: RangeQuery, firstChunk?: number): CommittedCursor => {
    opened.push({ limit: query.limit, firstChunk });
    let at = 0;
    return {
      next: async () => {
        if (at >= keys.length) return undefined;
        const chunk = keys.slice(at, at + (firstChunk ?? 1000)).map((key) => ({ key, value: Buffer.from('v') }));
        at += chunk.length;
        return chunk;
      },
      close: async () => undefined,
    };
  };
  return { opened, open };
}

async function take(iterator: AsyncIterableIterator<unknown>, n: number): Promise<number> {
  let taken = 0;
  for await (const _ of iterator) if (++taken === n) break;
  return taken;
}

describe('RangeOptions.expected', () => {
  it('sizes the first committed read, with or without entries in memory on top, and a read still yields up to its limit', async () => {
    const bare = committed();
    expect(await take(mergeRange([], bare.open, rangeQuery({ limit: 52, expected: 6 })), 52)).toBe(52);
    expect(bare.opened).toEqual([{ limit: 52, firstChunk: 6 }]);

    const layer: MemoryLayer = createSortedMap();
    layer.set(toInternalKey(Buffer.from('k050')), null); // a tombstone: the committed read runs unlimited
    const masked = committed();
    expect(await take(mergeRange([layer], masked.open, rangeQuery({ limit: 52, expected: 6 })), 52)).toBe(52);
    expect(masked.opened).toEqual([{ limit: Infinity, firstChunk: 6 + 16 }]);

    const plain = committed();
    await take(mergeRange([layer], plain.open, rangeQuery({ limit: 52 })), 1);
    expect(plain.opened).toEqual([{ limit: Infinity, firstChunk: 52 + 16 }]);
  });

  it('is a positive integer', () => {
    for (const expected of [0, -1, 1.5]) expect(() => rangeQuery({ limit: 10, expected })).toThrow(TypeError);
  });
});
