/**
 * A scan (range or prefix) plus an exclusive cursor key, turned into the inclusive bounds a
 * store range reads, and the filters that make them exact (the cursor's own key, the prefix).
 */
import type { Bytes, Order, RangeOptions } from '../store/types.js';
import type { ScanSpec } from './query-types.js';
import { Buffer } from 'node:buffer';

export interface ScanBounds {
  readonly range: Pick<RangeOptions, 'from' | 'to'>;
  /** The cursor's key: the store range is inclusive, the cursor exclusive. */
  readonly exclude?: Bytes;
  /** Entries must start with it (the upper end of a prefix range is inclusive). */
  readonly prefix?: Bytes;
}

/** Turns a scan plus an exclusive cursor into inclusive store bounds, or 'empty' when nothing can match. */
export function scanBounds(scan: ScanSpec, iterationOrder: Order, cursorKey: Bytes | undefined): ScanBounds | 'empty' {
  let from: Bytes | undefined;
  let to: Bytes | undefined;
  let prefix: Bytes | undefined;
  if (scan.type === 'range') {
    from = scan.from;
    to = scan.to;
  } else {
    prefix = scan.prefix;
    from = scan.prefix.length === 0 ? undefined : scan.prefix;
    to = prefixSuccessor(scan.prefix);
  }
  if (cursorKey !== undefined) {
    if (iterationOrder === 'asc') {
      if (from === undefined || Buffer.compare(cursorKey, from) > 0) from = cursorKey;
    } else if (to === undefined || Buffer.compare(cursorKey, to) < 0) {
      to = cursorKey;
    }
  }
  if (from !== undefined && to !== undefined && Buffer.compare(from, to) > 0) return 'empty';
  const range: { from?: Bytes; to?: Bytes } = {};
  if (from !== undefined) range.from = from;
  if (to !== undefined) range.to = to;
  return {
    range,
    ...(cursorKey === undefined ? {} : { exclude: cursorKey }),
    ...(prefix === undefined || prefix.length === 0 ? {} : { prefix }),
  };
}

/** The smallest key above every key with this prefix, or undefined when there is none (all 0xff). */
export function prefixSuccessor(prefix: Bytes): Bytes | undefined {
  let end = prefix.length;
  while (end > 0 && prefix[end - 1] === 0xff) end--;
  if (end === 0) return undefined;
  const successor = Buffer.from(prefix.subarray(0, end));
  successor[end - 1] = successor[end - 1]! + 1;
  return successor;
}

export function startsWith(key: Bytes, prefix: Bytes): boolean {
  return key.length >= prefix.length && key.subarray(0, prefix.length).equals(prefix);
}
