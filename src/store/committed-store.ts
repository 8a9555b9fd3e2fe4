/**
 * The port to the committed layer (docs/architecture.md §3, layer 3). The layered store stack (cache,
 * write batch, read views, commit protocol) is written once against this interface; the
 * LevelDB store and the in-memory store implement it, so both engines share every semantic
 * except durability. Keys at this port are internal latin1 strings (see sorted-map.ts).
 */
import type { Position } from './position.js';
import type { RangeQuery } from './key-bounds.js';
import type { KeyValue } from './types.js';
import { Buffer } from 'node:buffer';

/** What each commit stores next to a store partition's data, in the same atomic batch (KIP-1035). */
export interface StoreMeta {
  /** The next changelog offset to read for this store; undefined before the first commit that knew one. */
  readonly changelogOffset: number | undefined;
  readonly position: Position;
}

/**
 * The entries of a write: values, or null for deletes; keys in any order. A visitor rather than
 * an iterable: a write batch keeps a fresh flush as two arrays (write-batch.ts), and stepping a
 * generator over them cost about an eighth of a commit (bench:store).
 */
export interface WriteEntries {
  forEachEntry(visit: (key: string, value: Buffer | null) => void): void;
}

/** WriteEntries over [key, value] pairs (a restore's changes). */
export function pairEntries(pairs: ReadonlyArray<readonly [string, Buffer | null]>): WriteEntries {
  return {
    forEachEntry(visit) {
      for (const [key, value] of pairs) visit(key, value);
    },
  };
}

export interface CommittedWrite {
  /** The task whose metadata (changelog offset, Position) the write stores for its store. */
  readonly taskId: string;
  readonly keyspace: CommittedKeyspace;
  readonly entries: WriteEntries;
  readonly meta: StoreMeta;
}

export interface CommittedStore {
  /** The keyspace of one store partition, created on first use. */
  keyspace(storeName: string, partition: number): Promise<CommittedKeyspace>;
  /** The metadata the last completed commit stored for (task, store). */
  readMeta(taskId: string, storeName: string): Promise<StoreMeta | undefined>;
  /**
   * Writes all entries and metadata as ONE atomic batch: one task's stores, or every task of an
   * instance commit (commit-group.ts).
   */
  commit(writes: readonly CommittedWrite[]): Promise<void>;
  close(): Promise<void>;
}

export interface CommittedKeyspace {
  readonly storeName: string;
  readonly partition: number;
  /** Latest committed value, synchronously (the processing path). Keys here are the user's bytes. */
  getSync(key: Buffer): Buffer | undefined;
  /** A point-in-time snapshot, taken synchronously; its position is the one stored with its data. */
  snapshot(taskId: string): CommittedSnapshot;
}

export interface CommittedSnapshot {
  readonly position: Position;
  get(key: Buffer): Buffer | undefined;
  getMany(keys: readonly Buffer[]): Promise<Array<Buffer | undefined>>;
  /**
   * Entries in range order; must be closed (the view closes cursors it still holds).
   * `firstChunk` sizes the first read when the caller expects to need only about that many
   * entries (later chunks grow), so a short merged range does not read 1000 entries ahead.
   */
  cursor(query: RangeQuery, firstChunk?: number): CommittedCursor;
  close(): Promise<void>;
}

export interface CommittedCursor {
  /** The next chunk of entries (keys without any keyspace prefix), or undefined at the end. */
  next(): Promise<readonly KeyValue[] | undefined>;
  close(): Promise<void>;
}
