import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, scanFingerprint } from '../../../src/query/cursor.js';
import { isIqgateError } from '../../../src/errors.js';

const range = { type: 'range' as const, from: Buffer.from('a'), to: Buffer.from('m') };

function code(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    return isIqgateError(error) ? error.code : 'not an IqgateError';
  }
}

describe('cursors', () => {
  it('round-trip any key bytes, including empty and binary keys', () => {
    const fp = scanFingerprint('words', range, 'asc');
    for (const key of [Buffer.alloc(0), Buffer.from([0, 255, 10, 13]), Buffer.from('hello')]) {
      const cursor = encodeCursor(fp, key);
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor(cursor, fp)).toEqual({ key });
    }
  });

  it('are bound to the store, the bounds and the order of the query that made them', () => {
    const cursor = encodeCursor(scanFingerprint('words', range, 'asc'), Buffer.from('c'));
    expect(code(() => decodeCursor(cursor, scanFingerprint('words', range, 'desc')))).toBe('INVALID_CURSOR');
    expect(code(() => decodeCursor(cursor, scanFingerprint('other', range, 'asc')))).toBe('INVALID_CURSOR');
    expect(code(() => decodeCursor(cursor, scanFingerprint('words', { type: 'range', from: Buffer.from('a') }, 'asc')))).toBe('INVALID_CURSOR');
    expect(code(() => decodeCursor(cursor, scanFingerprint('words', { type: 'prefix', prefix: Buffer.from('a') }, 'asc')))).toBe('INVALID_CURSOR');
  });

  it('reject garbage with INVALID_CURSOR', () => {
    const fp = scanFingerprint('words', range, 'asc');
    for (const garbage of ['', 'x', '!!!!', 'AAAA', Buffer.from([2, 1, 2, 3, 4, 5, 6, 7, 8, 9]).toString('base64url')]) {
      expect(code(() => decodeCursor(garbage, fp))).toBe('INVALID_CURSOR');
    }
  });
});
