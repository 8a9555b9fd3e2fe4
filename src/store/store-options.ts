/**
 * Options of a StoreEngine, with their defaults in one place. Validated once when the engine
 * is created (the edge validates, the inside trusts).
 */
import { IqgateError } from '../errors.js';
import type { StoreEngineOptions } from './types.js';

export interface ResolvedStoreOptions {
  readonly cacheMaxBytes: number;
  readonly uncommittedMaxBytes: number;
  readonly maxKeyBytes: number;
  readonly maxValueBytes: number;
}

export const DEFAULT_STORE_OPTIONS: ResolvedStoreOptions = {
  /** Kafka Streams' statestore.cache.max.bytes default (10 MiB), shared by all tasks of the process. */
  cacheMaxBytes: 10 * 1024 * 1024,
  /** KIP-892's statestore.uncommitted.max.bytes default (64 MiB), across all write batches and dirty cache entries. */
  uncommittedMaxBytes: 64 * 1024 * 1024,
  /** Keys are copied into every layer and index; 64 KiB is far above any sensible key. */
  maxKeyBytes: 64 * 1024,
  /** Every value goes to a changelog record; 1 MiB matches Kafka's default message.max.bytes. */
  maxValueBytes: 1024 * 1024,
};

/**
 * Bytes accounted per entry on top of key and value bytes, for both the record cache and the
 * write batch: an estimate of the JS objects and tree slots that hold one entry (Kafka
 * Streams' LRUCacheEntry adds a similar fixed overhead).
 */
export const ENTRY_OVERHEAD_BYTES = 64;

export function resolveStoreOptions(options: StoreEngineOptions = {}): ResolvedStoreOptions {
  const resolved: ResolvedStoreOptions = {
    cacheMaxBytes: options.cacheMaxBytes ?? DEFAULT_STORE_OPTIONS.cacheMaxBytes,
    uncommittedMaxBytes: options.uncommittedMaxBytes ?? DEFAULT_STORE_OPTIONS.uncommittedMaxBytes,
    maxKeyBytes: options.maxKeyBytes ?? DEFAULT_STORE_OPTIONS.maxKeyBytes,
    maxValueBytes: options.maxValueBytes ?? DEFAULT_STORE_OPTIONS.maxValueBytes,
  };
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new IqgateError('INVALID_CONFIG', `store option ${name} must be a non-negative integer, got ${String(value)}`, {
        details: { option: name, value },
      });
    }
  }
  return resolved;
}
