import { describe, expect, it } from 'vitest';
import { Position } from '../../../src/store/position.js';

describe('Position', () => {
  it('keeps the highest offset per input partition and round-trips through JSON', () => {
    const position = Position.empty().advance('in', 0, 5).advance('in', 0, 3).advance('in', 2, 9).advance('other', 1, 1);
    expect(position.toJSON()).toEqual({ in: { '0': 5, '2': 9 }, other: { '1': 1 } });
    expect(Position.fromJSON(position.toJSON()).equals(position)).toBe(true);
  });

  it('dominates a bound only when every component of the bound is reached', () => {
    const position = Position.fromJSON({ in: { '0': 5, '1': 7 } });
    expect(position.dominates(Position.fromJSON({ in: { '0': 5 } }))).toBe(true);
    expect(position.dominates(Position.fromJSON({ in: { '0': 6 } }))).toBe(false);
    expect(position.dominates(Position.fromJSON({ in: { '2': 0 } }))).toBe(false);
  });

  it('rejects partitions that are not canonical decimal numbers, and bad offsets', () => {
    for (const partition of ['1e3', '0x1', '', '-1', '01', '1.5', ' 1']) {
      expect(() => Position.fromJSON({ in: { [partition]: 1 } }), partition).toThrow(TypeError);
    }
    expect(() => Position.fromJSON({ in: { '0': -1 } })).toThrow(TypeError);
    expect(() => Position.fromJSON({ in: { '0': 1.5 } })).toThrow(TypeError);
  });
});
