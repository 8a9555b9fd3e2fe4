import { describe, expect, it } from 'vitest';
import { nextPositionWhenEmpty } from '../../../src/kafka/changelog-reader.js';

const record = (offset: number, firstOffset: number, lastOffsetDelta: number) => ({
  offset: String(offset),
  batchContext: { firstOffset: String(firstOffset), lastOffsetDelta },
});

describe('the changelog reader after a fetch that shows nothing at the position', () => {
  it('continues after a compacted batch whose remaining records all lie below the position', () => {
    // Batch [100, 110]: the cleaner kept 100..103; restore stands at 105. The records after 110
    // are still to be read: ending the restore here would lose them.
    const compacted = [record(100, 100, 10), record(101, 100, 10), record(103, 100, 10)];
    expect(nextPositionWhenEmpty(compacted, 105, 500)).toBe(111);
  });

  it('is at the end when no batch reaches the position', () => {
    expect(nextPositionWhenEmpty([], 105, 500)).toBe(500);
    expect(nextPositionWhenEmpty([record(90, 90, 4)], 105, 500)).toBe(500);
  });
});
