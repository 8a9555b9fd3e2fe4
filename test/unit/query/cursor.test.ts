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

  it('carry the snapshot id of a pinned listing, and the key alongside it', () => {
    const fp = scanFingerprint('words', range, 'asc');
    const snapshot = Buffer.from('0123456789ab');
    for (const key of [Buffer.alloc(0), Buffer.from([0, 12, 255]), Buffer.from('hello')]) {
      const cursor = encodeCursor(fp, key, snapshot);
      expect(Buffer.from(cursor, 'base64url')[0]).toBe(2);
      expect(decodeCursor(cursor, fp)).toEqual({ key, snapshot });
    }
    expect(() => encodeCursor(fp, Buffer.from('k'), Buffer.from('short'))).toThrow(TypeError);
  });

  it('read a version 1 cursor (before pinning) as one that names no snapshot', () => {
    const fp = scanFingerprint('words', range, 'asc');
    const v1 = Buffer.concat([Buffer.of(1), fp, Buffer.from('c')]).toString('base64url');
    expect(decodeCursor(v1, fp)).toEqual({ key: Buffer.from('c') });
    const v1OtherQuery = Buffer.concat([Buffer.of(1), scanFingerprint('other', range, 'asc'), Buffer.from('c')]).toString('base64url');
    expect(code(() => decodeCursor(v1OtherQuery, fp))).toBe('INVALID_CURSOR');
  });

  it('reject a tampered snapshot field or an unknown version with INVALID_CURSOR', () => {
    const fp = scanFingerprint('words', range, 'asc');
    const bytes = Buffer.from(encodeCursor(fp, Buffer.from('key'), Buffer.from('0123456789ab')), 'base64url');
    const tamper = (edit: (b: Buffer) => Buffer): string => edit(Buffer.from(bytes)).toString('base64url');
    expect(code(() => decodeCursor(tamper((b) => ((b[9] = 7), b)), fp))).toBe('INVALID_CURSOR');
    expect(code(() => decodeCursor(tamper((b) => ((b[9] = 200), b)), fp))).toBe('INVALID_CURSOR');
    expect(code(() => decodeCursor(tamper((b) => b.subarray(0, 15)), fp))).toBe('INVALID_CURSOR');
    expect(code(() => decodeCursor(tamper((b) => b.subarray(0, 9)), fp))).toBe('INVALID_CURSOR');
    expect(code(() => decodeCursor(tamper((b) => ((b[0] = 3), b)), fp))).toBe('INVALID_CURSOR');
    expect(code(() => decodeCursor(tamper((b) => ((b[3] = b[3]! ^ 1), b)), fp))).toBe('INVALID_CURSOR');
    // A flipped id byte is still a well-formed cursor: whether it names a snapshot is the engine's to say (STALE_CURSOR).
    expect(decodeCursor(tamper((b) => ((b[12] = b[12]! ^ 1), b)), fp).snapshot).not.toEqual(Buffer.from('0123456789ab'));
  });

  it('reject garbage with INVALID_CURSOR', () => {
    const fp = scanFingerprint('words', range, 'asc');
    for (const garbage of ['', 'x', '!!!!', 'AAAA', Buffer.from([2, 1, 2, 3, 4, 5, 6, 7, 8, 9]).toString('base64url')]) {
      expect(code(() => decodeCursor(garbage, fp))).toBe('INVALID_CURSOR');
    }
  });
});
