import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergePages } from '../../../src/query/merge-pages.js';

/** The page a source holding `keys` serves: its first `size` keys after `cursor`, in `order`. */
function pageOf(keys: readonly Buffer[], order: 'asc' | 'desc', direction: 'forward' | 'backward', size: number, cursor: Buffer | undefined) {
  const sign = order === 'desc' ? -1 : 1;
  const sorted = [...keys].sort((x, y) => sign * Buffer.compare(x, y));
  // In the direction of travel: forward walks `order`, backward walks against it.
  const travel = direction === 'forward' ? sorted : [...sorted].reverse();
  const beyond = cursor === undefined ? travel : travel.filter((k) => (direction === 'forward' ? 1 : -1) * sign * Buffer.compare(k, cursor) > 0);
  const taken = beyond.slice(0, size);
  return { entries: (direction === 'forward' ? taken : taken.reverse()).map((key) => ({ key })), hasMore: beyond.length > size };
}

describe('mergePages', () => {
  it('merges the pages of disjoint sources into the page of their union, in either order and direction', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.uint8Array({ maxLength: 3 }).map((b) => Buffer.from(b)), { maxLength: 30, comparator: (x, y) => x.equals(y) }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 8 }),
        fc.constantFrom('asc' as const, 'desc' as const),
        fc.constantFrom('forward' as const, 'backward' as const),
        fc.option(fc.uint8Array({ maxLength: 3 }).map((b) => Buffer.from(b)), { nil: undefined }),
        fc.infiniteStream(fc.nat()),
        (keys, sourceCount, size, order, direction, cursor, picks) => {
          const sources: Buffer[][] = Array.from({ length: sourceCount }, () => []);
          for (const key of keys) sources[picks.next().value % sourceCount]!.push(key);
          const merged = mergePages(
            sources.map((source) => pageOf(source, order, direction, size, cursor)),
            { order, direction, size },
          );
          const whole = pageOf(keys, order, direction, size, cursor);
          expect(merged.entries.map((e) => e.key.toString('hex'))).toEqual(whole.entries.map((e) => e.key.toString('hex')));
          expect(merged.hasMore).toBe(whole.hasMore);
        },
      ),
      { numRuns: 500 },
    );
  });
});
