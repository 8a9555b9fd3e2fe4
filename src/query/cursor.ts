/**
 * Opaque pagination cursors. A cursor is the key bytes of an entry plus a fingerprint of the
 * query it came from (store, scan bounds, order), so a cursor replayed against another query
 * fails INVALID_CURSOR instead of silently paging something else, and, when its listing is
 * pinned, the id of the snapshot the listing reads (pinned-snapshots.ts). Keys, not offsets: a
 * page starts strictly after the cursor's key, so no key is returned twice.
 *
 * Layout, base64url:
 * - version 2: [2][fingerprint 8 bytes][snapshot id length: 0 or 12][snapshot id][key bytes]
 * - version 1 (before snapshots were pinned): [1][fingerprint 8 bytes][key bytes]. Still read,
 *   as a cursor that names no snapshot: its page is read at the state it meets, as before, so
 *   a client in the middle of a listing across an upgrade carries on.
 *
 * The partitions a snapshot covers are kept with the snapshot, not in the cursor: every edge
 * carries a cursor, and a partition list would grow each of them with the store's partitions.
 */
import { createHash } from 'node:crypto';
import { IqgateError } from '../errors.js';
import type { Bytes, Order } from '../store/types.js';
import type { ScanSpec } from './query-types.js';
import { Buffer } from 'node:buffer';

const VERSION = 2;
const UNPINNED_VERSION = 1;
const FINGERPRINT_BYTES = 8;
/** 96 random bits: a snapshot id cannot be guessed, and never repeats within a process. */
export const SNAPSHOT_ID_BYTES = 12;

export interface DecodedCursor {
  readonly key: Bytes;
  /** The pinned snapshot the cursor's listing reads; absent for an unpinned (or version 1) cursor. */
  readonly snapshot?: Bytes;
}

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

/** A cursor after (or before) `key`; `snapshot` names the listing's pinned snapshot. */
export function encodeCursor(fingerprint: Bytes, key: Bytes, snapshot?: Bytes): string {
  if (snapshot !== undefined && snapshot.length !== SNAPSHOT_ID_BYTES) throw new TypeError(`a snapshot id has ${SNAPSHOT_ID_BYTES} bytes`);
  const id = snapshot ?? Buffer.alloc(0);
  return Buffer.concat([Buffer.of(VERSION), fingerprint, Buffer.of(id.length), id, key]).toString('base64url');
}

/** The key (and snapshot) of a cursor made for the query with this fingerprint; INVALID_CURSOR otherwise. */
export function decodeCursor(cursor: string, fingerprint: Bytes): DecodedCursor {
  const bytes = /^[A-Za-z0-9_-]*$/.test(cursor) ? Buffer.from(cursor, 'base64url') : Buffer.alloc(0);
  const version = bytes[0];
  if (bytes.length < 1 + FINGERPRINT_BYTES || (version !== VERSION && version !== UNPINNED_VERSION)) {
    throw new IqgateError('INVALID_CURSOR', 'The cursor is malformed.');
  }
  if (!bytes.subarray(1, 1 + FINGERPRINT_BYTES).equals(fingerprint)) {
    throw new IqgateError('INVALID_CURSOR', 'The cursor belongs to another query (store, bounds or order differ).');
  }
  if (version === UNPINNED_VERSION) return { key: bytes.subarray(1 + FINGERPRINT_BYTES) };
  const idAt = 2 + FINGERPRINT_BYTES;
  const idLength = bytes[idAt - 1] ?? -1;
  if ((idLength !== 0 && idLength !== SNAPSHOT_ID_BYTES) || bytes.length < idAt + idLength) {
    throw new IqgateError('INVALID_CURSOR', 'The cursor is malformed.');
  }
  const key = bytes.subarray(idAt + idLength);
  return idLength === 0 ? { key } : { key, snapshot: bytes.subarray(idAt, idAt + idLength) };
}
