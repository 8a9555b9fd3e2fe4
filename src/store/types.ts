/**
 * The contracts of the state store stack (docs/architecture.md §3). Everything above store/ (processing,
 * query, graphql) programs against these interfaces; store/ provides the in-memory and the
 * LevelDB-backed implementations, which pass one contract suite.
 *
 * Keys and values are bytes (Node Buffers). Keys order by their bytes as LevelDB's
 * BytewiseComparator does: memcmp over the common length, then the shorter key first.
 */
import type { IqgateError } from '../errors.js';
import type { Position } from './position.js';
import type { CommitGroup } from './commit-group.js';
import { Buffer } from 'node:buffer';

export type Bytes = Buffer;

/** Turns typed values into bytes and back. `deserialize` throws IqgateError DECODE_FAILED. */
export interface Serde<T> {
  /** Stable name, shown in the GraphQL schema; iqgate's own serdes use their key in `serdes` ("string", "int64", "sortableInt64", …). */
  readonly name: string;
  serialize(value: T): Bytes;
  deserialize(bytes: Bytes): T;
  /**
   * Optional: writes the bytes serialize(value) returns into `target` from `offset`, never past
   * its end, without allocating; returns how many, or -1 when they do not fit (bytes it wrote
   * before finding that out may be left in `target`). Throws what
   * serialize throws. Packed repartition topics encode through it (record-pack.ts).
   */
  encodeInto?(value: T, target: Buffer, offset: number): number;
}

/** Where a write came from: the input record being processed. */
export interface RecordSource {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

export interface KeyValue {
  readonly key: Bytes;
  readonly value: Bytes;
}

/** A key and its new value, or null for a delete (tombstone). */
export interface Change {
  readonly key: Bytes;
  readonly value: Bytes | null;
}

export type Order = 'asc' | 'desc';

/** Both bounds inclusive, either may be absent (open). from > to is INVALID_RANGE. */
export interface RangeOptions {
  readonly from?: Bytes;
  readonly to?: Bytes;
  readonly order?: Order;
  /** At most this many entries; absent = no limit. */
  readonly limit?: number;
  /**
   * About how many entries the caller expects to take (a page merged over many partitions
   * takes about its size divided among them): the committed store's first read is that many,
   * and later reads grow. Absent: the first read is sized for `limit`.
   */
  readonly expected?: number;
}

export interface PrefixOptions {
  readonly order?: Order;
  readonly limit?: number;
}

/**
 * One consistent point in time of one store partition: a LevelDB snapshot plus copy-on-write
 * snapshots of the in-memory layers, all taken in the same synchronous tick. Reads never see
 * writes made after the view was taken. Must be closed (releases the LevelDB snapshot);
 * closing twice is harmless.
 */
export interface ReadView {
  readonly storeName: string;
  readonly partition: number;
  readonly readCommitted: boolean;
  /** The Position this view reflects (committed position, or current processing position). */
  readonly position: Position;
  get(key: Bytes): Promise<Bytes | undefined>;
  getMany(keys: readonly Bytes[]): Promise<Array<Bytes | undefined>>;
  /** Entries in key-byte order (or reverse); the iterator releases its resources when done or returned early. */
  range(options?: RangeOptions): AsyncIterableIterator<KeyValue>;
  prefix(prefix: Bytes, options?: PrefixOptions): AsyncIterableIterator<KeyValue>;
  close(): Promise<void>;
}

/**
 * What a store partition tells its subscribers. Each kind follows one read view:
 * - `committed`: after each store commit (or restore), the changes it made durable, at the new
 *   committed Position — what `readCommitted: true` reads.
 * - `uncommitted`: whenever what `readCommitted: false` reads changes — a write (put or delete,
 *   at the moment it lands in the record cache, with the uncommitted Position after it), a
 *   restore (keys no uncommitted write hides), and a rollback (`rolledBack: true`): when
 *   uncommitted writes are dropped (abort, failed or abandoned commit, close), one change per
 *   dropped key with the value now visible (the committed one, or null for absent), at the
 *   Position the store went back to (the committed one, or the newest commit still in flight).
 */
export type StoreChangeEvent =
  | {
      readonly kind: 'uncommitted';
      readonly changes: readonly Change[];
      readonly position: Position;
      /** A rollback: the position went back, and the changes undo writes reported before. */
      readonly rolledBack?: boolean;
    }
  | { readonly kind: 'committed'; readonly changes: readonly Change[]; readonly position: Position };

export type StoreChangeKind = StoreChangeEvent['kind'];

export type StoreChangeListener = (event: StoreChangeEvent) => void;

export interface StoreSubscribeOptions {
  /**
   * Only this kind of event. Default: both. Uncommitted events cost the write path an event per
   * write while at least one subscription wants them, so a committed-only subscriber says so.
   */
  readonly kind?: StoreChangeKind;
  /**
   * Called once, after the subscription's last event, when the partition closes under it (the
   * listener is dropped with it): `reason` is what its closer gave — PARTITION_REVOKED when a
   * rebalance moved the partition away, STORE_CLOSED otherwise. Not called after unsubscribe.
   */
  readonly onClose?: (reason: IqgateError) => void;
}

/**
 * One partition of one logical store, owned by one task. Writes are synchronous (they land in
 * the record cache); the processing path reads synchronously through cache → write batch →
 * committed store. Queries read through `view()`.
 */
export interface KeyValueStorePartition {
  readonly storeName: string;
  readonly partition: number;
  /** Uncommitted read for the processing path (cache → write batch → committed store). */
  get(key: Bytes): Bytes | undefined;
  put(key: Bytes, value: Bytes, source: RecordSource): void;
  delete(key: Bytes, source: RecordSource): void;
  /** Takes a consistent read view synchronously. */
  view(options: { readonly readCommitted: boolean }): ReadView;
  committedPosition(): Position;
  uncommittedPosition(): Position;
  /**
   * Committed events are emitted after each store commit; uncommitted ones whenever the
   * uncommitted view changes (StoreChangeEvent). Listeners run synchronously; one that throws is reported (a process warning) and
   * affects neither the other listeners nor the write or commit that emitted the event.
   */
  subscribe(listener: StoreChangeListener, options?: StoreSubscribeOptions): () => void;
  /** Subscriptions currently open (each subscribe() call until its unsubscribe). */
  listenerCount(): number;
  /**
   * Calls `listener` once when the partition closes (at once if it is closed already), so that
   * whoever keeps a read view open beyond one request (a pinned listing's snapshot) releases it
   * with the partition. Not a subscription: listenerCount() does not count it. Returns the
   * way to stop listening.
   */
  onClose(listener: () => void): () => void;
}

/** A dirty entry leaving the record cache (evicted or flushed), in the order it is handed over. */
export interface FlushedChange extends Change {
  readonly storeName: string;
  readonly partition: number;
  /** The input record of the latest write to this key. */
  readonly source: RecordSource;
}

/** Receives dirty cache entries: the runtime sends them to the changelog and downstream. */
export type FlushListener = (changes: readonly FlushedChange[]) => void;

/**
 * The stores of one task (one input partition), committed together. Commit protocol
 * (docs/architecture.md §4): the runtime calls flush(), sends the flushed changes to the changelog in its
 * Kafka transaction, commits the transaction, then calls commit() with the changelog offsets.
 */
/**
 * A processor's typed store's access to a store partition (TaskStores.processingStore): get, put
 * and delete take the key's internal form along (sorted-map.ts toInternalKey) when the caller
 * already has it. It must be exactly that of `key` — a wrong one would file the write under one
 * key in the cache and write batch and another in the changelog — so this is not an
 * application's interface.
 */
export interface ProcessingStorePartition {
  get(key: Bytes, internalKey?: string): Bytes | undefined;
  put(key: Bytes, value: Bytes, source: RecordSource, internalKey?: string): void;
  delete(key: Bytes, source: RecordSource, internalKey?: string): void;
}

export interface TaskStores {
  readonly taskId: string;
  /** Throws IqgateError STORE_NOT_FOUND for a name the task does not have. */
  store(name: string): KeyValueStorePartition;
  /** The same partition, for the processing path's typed stores (ProcessingStorePartition). */
  processingStore(name: string): ProcessingStorePartition;
  storeNames(): readonly string[];
  /** Flushes the task's record cache: dirty entries, in write order, go to the write batch and the flush listeners. */
  flush(): void;
  /**
   * One atomic LevelDB batch: the write batch, the changelog offsets (store name → next
   * changelog offset to read) and the uncommitted Position, which becomes the committed one.
   */
  commit(changelogOffsets: Readonly<Record<string, number>>): Promise<void>;
  /**
   * Captures everything written so far for a commit whose Kafka transaction is still to
   * complete (exactly-once v2: processing goes on into fresh write batches meanwhile). Flushes
   * the record cache first. Captures are written, or abandoned, in the order they were taken.
   */
  capture(): CapturedCommit;
  /** Drops everything uncommitted: dirty cache entries, the write batch, the uncommitted Position. */
  abort(): void;
  /** The changelog offsets stored by the last completed commit (or restore), loaded at open. */
  changelogOffsets(): Readonly<Record<string, number>>;
  /**
   * Applies changelog records straight to the committed store (restore), atomically with the
   * store's next changelog offset and the Position they carry.
   */
  restore(storeName: string, changes: readonly Change[], nextChangelogOffset: number, position: Position): Promise<void>;
  onFlush(listener: FlushListener): () => void;
  /**
   * Bytes this task holds uncommitted: its write batches (including one being committed) and
   * its dirty record-cache entries, as counted against StoreEngineOptions.uncommittedMaxBytes.
   */
  uncommittedBytes(): number;
  /**
   * Closes the task's stores once any commit in flight has settled; their subscribers hear
   * `reason` (StoreSubscribeOptions.onClose; default STORE_CLOSED) after their last event.
   */
  close(reason?: IqgateError): Promise<void>;
}

/** A write batch captured by TaskStores.capture(), readable as a `committing` layer until settled. */
export interface CapturedCommit {
  /**
   * One atomic batch, as commit(): the captured writes, the changelog offsets, the captured
   * Position — or, given a group, part of the group's one batch (commit-group.ts).
   */
  write(changelogOffsets: Readonly<Record<string, number>>, group?: CommitGroup): Promise<void>;
  /** The transaction failed: the captured writes are dropped, never written. */
  abandon(): void;
}

export interface StoreEngineOptions {
  /** Record cache bytes shared by all tasks of the process (Kafka Streams' statestore.cache.max.bytes). Default 10 MiB. */
  readonly cacheMaxBytes?: number;
  /** Uncommitted bytes across all write batches before "commit needed" fires (KIP-892). Default 64 MiB. */
  readonly uncommittedMaxBytes?: number;
  readonly maxKeyBytes?: number;
  readonly maxValueBytes?: number;
}

/** Process-wide owner of the database, the shared cache and the uncommitted-bytes accounting. */
export interface StoreEngine {
  openTask(taskId: string, stores: ReadonlyArray<{ readonly name: string; readonly partition: number }>): Promise<TaskStores>;
  /** Fires when process-wide uncommitted bytes pass the limit; the listener should commit early. */
  onCommitNeeded(listener: (uncommittedBytes: number) => void): () => void;
  uncommittedBytes(): number;
  close(): Promise<void>;
}
