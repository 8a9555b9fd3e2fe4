/**
 * The recent history behind the dashboard's chart, on a fake clock: commits land in their
 * interval, idle time leaves empty intervals, only the last `keep` are kept, and the lag of a
 * partition counts the offsets between the processed position and the input's end.
 */
import { describe, expect, it } from 'vitest';
import { inputLag } from '../../../src/query/input-lag.js';
import { MetricsHistory } from '../../../src/runtime/metrics-history.js';
import { Position } from '../../../src/store/position.js';

describe('MetricsHistory', () => {
  it('sums commits per interval, keeps the mean and the longest, and the running interval last', () => {
    let now = 10_000;
    const history = new MetricsHistory({ intervalMs: 1_000, keep: 5, clock: () => now });
    history.commit(20, 3);
    history.commit(40, 1);
    now = 11_200;
    history.commit(5, 2);
    history.pause(70);
    now = 11_500;
    const intervals = history.intervals(60_000);
    expect(intervals.map((i) => i.start)).toEqual([10_000, 11_000]);
    expect(intervals[0]).toMatchObject({ commits: 2, recordsCommitted: 4, commitLatencyAvgMs: 30, commitLatencyMaxMs: 40, durationMs: 1_000 });
    expect(intervals[1]).toMatchObject({ commits: 1, commitLatencyMaxMs: 5, pauseMaxMs: 70, durationMs: 500 });
  });

  it('leaves empty intervals for idle time and keeps only the last ones', () => {
    let now = 0;
    const history = new MetricsHistory({ intervalMs: 1_000, keep: 4, clock: () => now });
    history.commit(10, 1);
    now = 2_500;
    history.commit(30, 1);
    expect(history.intervals(60_000).map((i) => [i.start, i.commits, i.commitLatencyMaxMs])).toEqual([
      [0, 1, 10], [1_000, 0, undefined], [2_000, 1, 30],
    ]);
    now = 1_000_000;
    const late = history.intervals(60_000);
    expect(late).toHaveLength(4);
    expect(late.map((i) => i.start)).toEqual([997_000, 998_000, 999_000, 1_000_000]);
    expect(late.every((i) => i.commits === 0)).toBe(true);
    expect(history.intervals(1_500).map((i) => i.start)).toEqual([998_000, 999_000, 1_000_000]);
  });
});

describe('inputLag', () => {
  it('counts the offsets from the processed one to the end, summed over the input topics', () => {
    const end = Position.empty().advance('a', 2, 100).advance('b', 2, 7);
    expect(inputLag(end, Position.empty().advance('a', 2, 89).advance('b', 2, 6), 2)).toBe(10);
    expect(inputLag(end, Position.empty().advance('a', 2, 99).advance('b', 2, 6), 2)).toBe(0);
  });

  it('is unknown while nothing of a non-empty input was processed, and 0 for an empty one', () => {
    expect(inputLag(Position.empty().advance('a', 0, 5), Position.empty(), 0)).toBeUndefined();
    expect(inputLag(Position.empty().advance('a', 0, 0), Position.empty(), 0)).toBe(0);
  });
});
