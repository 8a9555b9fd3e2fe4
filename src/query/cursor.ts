/**
 * Opaque pagination cursors. A cursor is the key bytes of an entry plus a fingerprint of the
 * query it came from (store, scan bounds, order), so a cursor replayed against another query
 * fails INVALID_CURSOR instead of silently paging something else. Layout, base64url:
 * [version 1][fingerprint 8 bytes][key bytes]. Keys, not offsets: a page starts strictly after
 * the cursor's key, so entries inserted or deleted between pages never shift the window and
 * no key is returned twice.
 */
import { createHash } from 'node:crypto';
import { IqgateError } from '../errors.js';
import type { Bytes, Order } from '../store/types.js';
import type { ScanSpec } from './query-types.js';
import { Buffer } from 'node:buffer';

const VERSION = 1;
const FINGERPRINT_BYTES = 8;

export function scanFingerprint(store: string, scan: ScanSpec, order: Order): Bytes {
  const hash = createHash('sha256');
  const part = (label: string, bytes: Bytes | undefined): void => {
    hash.update(label);
    if (bytes === undefined) hash.update('\u0000-');
    else hash.update(`\u0000${bytes.length}:`).update(bytes);
  };
  hash.update(`${store.length}:${store}|${scan.type}|${order}`);
  if (scan.type === 'range') {
    part('from', scan.from);
    part('to', scan.to);
  } else {
    part('prefix', scan.prefix);
  }
  return hash.digest().subarray(0, FINGERPRINT_BYTES);
}

export function encodeCursor(fingerprint: Bytes, key: Bytes): string {
  return Buffer.concat([Buffer.of(VERSION), fingerprint, key]).toString('base64url');
}

/** The key of a cursor made for the query with this fingerprint; INVALID_CURSOR otherwise. */
export function decodeCursor(cursor: string, fingerprint: Bytes): Bytes {
  const bytes = /^[A-Za-z0-9_-]*$/.test(cursor) ? Buffer.from(cursor, 'base64url') : Buffer.alloc(0);
  if (bytes.length < 1 + FINGERPRINT_BYTES || bytes[0] !== VERSION) {
    throw new IqgateError('INVALID_CURSOR', 'The cursor is malformed.');
  }
  if (!bytes.subarray(1, 1 + FINGERPRINT_BYTES).equals(fingerprint)) {
    throw new IqgateError('INVALID_CURSOR', 'The cursor belongs to another query (store, bounds or order differ).');
  }
  return bytes.subarray(1 + FINGERPRINT_BYTES);
}
