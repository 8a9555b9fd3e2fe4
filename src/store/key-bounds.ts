/**
 * Range and prefix arguments, validated once at the edge and normalised to internal bounds
 * over latin1 keys (one char per byte, ordered like LevelDB's memcmp comparator).
 *
 * Both ends of a range are inclusive and either may be open. A `from` that sorts after `to`
 * is rejected with INVALID_RANGE: Kafka Streams silently returns nothing there, which hides
 * client bugs. Descending order is asked for with `order`, never by swapping the bounds.
 */
import { IqgateError } from '../errors.js';
import { toInternalKey } from './sorted-map.js';
import type { Bytes, Order, PrefixOptions, RangeOptions } from './types.js';
import { Buffer } from 'node:buffer';

/** Internal bounds: `gte` inclusive lower; upper either `lte` (inclusive) or `lt` (exclusive), never both. */
export interface KeyBounds {
  readonly gte?: string;
  readonly lte?: string;
  readonly lt?: string;
}

export interface RangeQuery {
  readonly bounds: KeyBounds;
  readonly reverse: boolean;
  /** Infinity when there is no limit. */
  readonly limit: number;
  /** RangeOptions.expected: the size of the committed store's first read. */
  readonly expected?: number;
}

function checkOrderAndLimit(order: Order | undefined, limit: number | undefined): { reverse: boolean; limit: number } {
  if (order !== undefined && order !== 'asc' && order !== 'desc') {
    throw new TypeError(`order must be "asc" or "desc", got ${String(order)}`);
  }
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) {
    throw new IqgateError('INVALID_RANGE', `limit must be a non-negative integer, got ${String(limit)}`, {
      details: { limit },
    });
  }
  return { reverse: order === 'desc', limit: limit ?? Infinity };
}

function checkKey(name: string, key: Bytes | undefined): void {
  if (key !== undefined && !Buffer.isBuffer(key)) throw new TypeError(`${name} must be a Buffer`);
}

export function rangeQuery(options: RangeOptions = {}): RangeQuery {
  checkKey('from', options.from);
  checkKey('to', options.to);
  const { reverse, limit } = checkOrderAndLimit(options.order, options.limit);
  if (options.from !== undefined && options.to !== undefined && Buffer.compare(options.from, options.to) > 0) {
    throw new IqgateError('INVALID_RANGE', 'range "from" sorts after "to" (use order: "desc" for descending ranges)', {
      details: { from: options.from.toString('hex'), to: options.to.toString('hex') },
    });
  }
  const bounds: { gte?: string; lte?: string } = {};
  if (options.from !== undefined) bounds.gte = toInternalKey(options.from);
  if (options.to !== undefined) bounds.lte = toInternalKey(options.to);
  const expected = options.expected;
  if (expected !== undefined && (!Number.isSafeInteger(expected) || expected < 1)) throw new TypeError(`expected must be a positive integer, got ${String(expected)}`);
  return { bounds, reverse, limit, ...(expected === undefined ? {} : { expected }) };
}

/** Every key starting with `prefix`: [prefix, prefix with its last non-0xff byte incremented). */
export function prefixQuery(prefix: Bytes, options: PrefixOptions = {}): RangeQuery {
  checkKey('prefix', prefix);
  const { reverse, limit } = checkOrderAndLimit(options.order, options.limit);
  const gte = toInternalKey(prefix);
  const upper = prefixUpperBound(gte);
  return { bounds: upper === undefined ? { gte } : { gte, lt: upper }, reverse, limit };
}

/** The smallest key above every key starting with `prefix`; undefined when there is none (all 0xff). */
export function prefixUpperBound(prefix: string): string | undefined {
  let end = prefix.length;
  while (end > 0 && prefix.charCodeAt(end - 1) === 0xff) end--;
  if (end === 0) return undefined;
  return prefix.slice(0, end - 1) + String.fromCharCode(prefix.charCodeAt(end - 1) + 1);
}

export function isAboveUpper(key: string, bounds: KeyBounds): boolean {
  return (bounds.lte !== undefined && key > bounds.lte) || (bounds.lt !== undefined && key >= bounds.lt);
}

export function isBelowLower(key: string, bounds: KeyBounds): boolean {
  return bounds.gte !== undefined && key < bounds.gte;
}
