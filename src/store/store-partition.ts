/**
 * One partition of one store: the record cache's NamedCache over the write batch over the
 * committed keyspace (docs/architecture.md §3). Writes land in the cache (Kafka Streams'
 * CachingKeyValueStore); cache flushes move dirty entries to the write batch and hand them to
 * the task's flush listeners (in Kafka Streams the ChangeLoggingKeyValueBytesStore below the
 * cache); commit moves the batch to the committed store (KIP-892).
 *
 * A commit captures the write batch when it is called (what the runtime just sent to the
 * changelog) and leaves a fresh batch for new writes. Until its LevelDB write resolves, the
 * captured batch stays readable as a `committing` layer: LevelDB makes a batch visible to new
 * snapshots before `write()` resolves (docs/leveldb-notes.md, Layout), so uncommitted
 * reads keep seeing it in memory, above the committed store. Several commits may be queued;
 * their layers are read newest first.
 *
 * Subscribers hear each view's changes (StoreChangeEvent): committed events when a commit or
 * restore completes; uncommitted events when what an uncommitted read returns changes — at each
 * write, and at each rollback, which reports every dropped key with the value now visible, so a
 * feed that follows the uncommitted view converges to what an uncommitted read returns. (A
 * cache flush moves entries from one uncommitted layer to the next: no read changes, no event.)
 * The write path pays for uncommitted events only while a subscription wants them: one counter
 * test per write otherwise.
 */
import { IqgateError } from '../errors.js';
import { Position } from './position.js';
import { LayeredReadView } from './read-view.js';
import { fromInternalKey, toInternalKey } from './sorted-map.js';
import { storeClosedError } from './store-errors.js';
import { WriteBatch } from './write-batch.js';
import { pairEntries, type CommittedKeyspace, type CommittedWrite, type StoreMeta } from './committed-store.js';
import type { MemoryLayer } from './merge-range.js';
import { NamedCache, ownKeyBytes, type CacheEntry, type RecordCache } from './record-cache.js';
import type { ResolvedStoreOptions } from './store-options.js';
import type {
  Bytes,
  Change,
  FlushedChange,
  KeyValueStorePartition,
  ReadView,
  RecordSource,
  StoreChangeEvent,
  StoreChangeListener,
  StoreSubscribeOptions,
} from './types.js';
import type { UncommittedBudget } from './uncommitted-budget.js';
import { Buffer } from 'node:buffer';

export interface StorePartitionContext {
  readonly taskId: string;
  readonly storeName: string;
  readonly partition: number;
  readonly keyspace: CommittedKeyspace;
  readonly cache: RecordCache;
  readonly budget: UncommittedBudget;
  readonly options: ResolvedStoreOptions;
  readonly meta: StoreMeta | undefined;
  /** Hands flushed entries to the task's flush listeners. */
  readonly emitFlush: (changes: readonly FlushedChange[]) => void;
}

/** A prepared commit of this partition: the write (built when its turn comes), and how to settle it. */
export interface PreparedCommit {
  readonly write: () => CommittedWrite;
  complete(): void;
  fail(): void;
  /**
   * Sets the changelog offset the commit stores, when it is learned after the capture (the
   * Kafka transaction that carries the batch's changelog records commits in between).
   */
  setChangelogOffset(offset: number): void;
}

export class StorePartition implements KeyValueStorePartition {
  readonly storeName: string;
  readonly partition: number;
  readonly named: NamedCache;
  private batch = new WriteBatch();
  /** Captured batches of commits not yet settled, oldest first, with the Position each stores. */
  private committing: Array<{ readonly batch: WriteBatch; readonly position: Position; offset: number | undefined }> = [];
  private committedPos: Position;
  private uncommittedPos: Position;
  private offset: number | undefined;
  private readonly listeners = new Set<StoreChangeListener>();
  /** The onClose of each subscription that asked for one, by its (wrapped) listener. */
  private readonly closeListeners = new Map<StoreChangeListener, (reason: IqgateError) => void>();
  /** Subscriptions that receive uncommitted events: while 0, writes and rollbacks emit nothing. */
  private uncommittedListeners = 0;
  /** Told once when the partition closes (onClose): holders of long-lived read views let them go. */
  private readonly closeHooks = new Set<() => void>();
  private closed = false;
  private readonly cache: RecordCache;
  private readonly budget: UncommittedBudget;
  private readonly maxKeyBytes: number;
  private readonly maxValueBytes: number;

  constructor(private readonly context: StorePartitionContext) {
    this.storeName = context.storeName;
    this.partition = context.partition;
    this.cache = context.cache;
    this.budget = context.budget;
    this.maxKeyBytes = context.options.maxKeyBytes;
    this.maxValueBytes = context.options.maxValueBytes;
    this.committedPos = context.meta?.position.copy() ?? Position.empty();
    this.uncommittedPos = this.committedPos.copy();
    this.offset = context.meta?.changelogOffset;
    this.named = new NamedCache(`${context.taskId}/${context.storeName}/${context.partition}`, (entries, dirty) =>
      this.onCacheFlush(entries, dirty),
    );
  }

  get changelogOffset(): number | undefined {
    return this.offset;
  }

  private checkOpen(): void {
    if (this.closed) throw storeClosedError(`store ${this.storeName} partition ${this.partition}`);
  }

  private checkKey(key: Bytes): void {
    if (!Buffer.isBuffer(key)) throw new TypeError('key must be a Buffer');
    if (key.length > this.maxKeyBytes) {
      throw new IqgateError('KEY_TOO_LARGE', `key of ${key.length} bytes exceeds maxKeyBytes ${this.maxKeyBytes}`, {
        details: { store: this.storeName, bytes: key.length, limit: this.maxKeyBytes },
      });
    }
  }

  get(key: Bytes, internalKey?: string): Bytes | undefined {
    this.checkOpen();
    if (!Buffer.isBuffer(key)) throw new TypeError('key must be a Buffer');
    const k = internalKey ?? toInternalKey(key);
    const cached = this.cache.get(this.named, k);
    if (cached !== undefined) return cached.value ?? undefined;
    let value = this.batch.get(k);
    for (let i = this.committing.length - 1; value === undefined && i >= 0; i--) value = this.committing[i]!.batch.get(k);
    if (value === undefined) value = this.context.keyspace.getSync(key);
    if (value === null || value === undefined) return undefined;
    this.cache.putClean(this.named, k, key, value);
    return value;
  }

  put(key: Bytes, value: Bytes, source: RecordSource, internalKey?: string): void {
    this.checkOpen();
    this.checkKey(key);
    if (!Buffer.isBuffer(value)) throw new TypeError('value must be a Buffer');
    if (value.length > this.maxValueBytes) {
      throw new IqgateError(
        'VALUE_TOO_LARGE',
        `value of ${value.length} bytes exceeds maxValueBytes ${this.maxValueBytes}`,
        { details: { store: this.storeName, bytes: value.length, limit: this.maxValueBytes } },
      );
    }
    this.write(key, value, source, internalKey);
  }

  delete(key: Bytes, source: RecordSource, internalKey?: string): void {
    this.checkOpen();
    this.checkKey(key);
    this.write(key, null, source, internalKey);
  }

  private write(key: Bytes, value: Bytes | null, source: RecordSource, internalKey: string | undefined): void {
    this.uncommittedPos.advance(source.topic, source.partition, source.offset);
    this.cache.putDirty(this.named, internalKey ?? toInternalKey(key), key, value, source);
    // Visible to uncommitted reads from now on (the cache is their top layer).
    if (this.uncommittedListeners !== 0) {
      // A subscriber may hold events for a while (a change stream buffers them): never a view into an input buffer.
      this.emit({ kind: 'uncommitted', changes: [{ key: ownKeyBytes(key), value }], position: this.uncommittedPos.copy() });
    }
    this.budget.check();
  }

  /** Dirty cache entries, in write order, reach the write batch and the flush listeners. */
  private onCacheFlush(entries: readonly CacheEntry[], dirty: WriteBatch | undefined): void {
    // A dirty batch a read view made the cache build holds exactly these entries' latest
    // values: the batch absorbs it whole (O(1) for the first flush since the last commit).
    const delta = dirty !== undefined ? this.batch.absorb(dirty) : this.batch.setEach(entries);
    const changes: FlushedChange[] = new Array(entries.length);
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      changes[i] = {
        storeName: this.storeName,
        partition: this.partition,
        key: entry.keyBytes,
        value: entry.value,
        source: entry.source!,
      };
    }
    this.budget.add(delta);
    this.context.emitFlush(changes);
  }

  view(options: { readonly readCommitted: boolean }): ReadView {
    this.checkOpen();
    const snapshot = this.context.keyspace.snapshot(this.context.taskId);
    if (options.readCommitted) {
      return new LayeredReadView(this.storeName, this.partition, true, snapshot.position, [], snapshot);
    }
    // Same synchronous tick as the snapshot: O(1) copy-on-write clones of the memory layers.
    const layers: MemoryLayer[] = [];
    if (this.named.dirtyCount > 0) layers.push(this.named.dirtyBatch().snapshot());
    if (this.batch.size > 0) layers.push(this.batch.snapshot());
    for (let i = this.committing.length - 1; i >= 0; i--) {
      const { batch } = this.committing[i]!;
      if (batch.size > 0) layers.push(batch.snapshot());
    }
    return new LayeredReadView(this.storeName, this.partition, false, this.uncommittedPos.copy(), layers, snapshot);
  }

  committedPosition(): Position {
    return this.committedPos.copy();
  }

  uncommittedPosition(): Position {
    return this.uncommittedPos.copy();
  }

  subscribe(listener: StoreChangeListener, options: StoreSubscribeOptions = {}): () => void {
    this.checkOpen();
    // Wrapped so that subscribing the same function twice gives two subscriptions.
    const kind = options.kind;
    const wrapped: StoreChangeListener =
      kind === undefined
        ? (event) => listener(event)
        : (event) => {
            if (event.kind === kind) listener(event);
          };
    const uncommitted = kind !== 'committed';
    this.listeners.add(wrapped);
    if (uncommitted) this.uncommittedListeners++;
    if (options.onClose !== undefined) this.closeListeners.set(wrapped, options.onClose);
    return () => {
      // Once only: a second call, or one after close() cleared the listeners, changes nothing.
      if (this.listeners.delete(wrapped) && uncommitted) this.uncommittedListeners--;
      this.closeListeners.delete(wrapped);
    };
  }

  onClose(listener: () => void): () => void {
    if (this.closed) {
      listener();
      return () => {};
    }
    const wrapped = (): void => listener();
    this.closeHooks.add(wrapped);
    return () => {
      this.closeHooks.delete(wrapped);
    };
  }

  /** How many subscriptions are open: observable, so callers and tests can see one end. */
  listenerCount(): number {
    return this.listeners.size;
  }

  /**
   * Events go out from inside the write path (cache flush) and the commit path (complete), so
   * a throwing subscriber must not cut them short: the changelog would miss flushed entries,
   * or a commit already durable would reject with its in-flight layers left behind. As a DOM
   * EventTarget does, one listener's exception neither stops the others nor reaches the
   * emitter; it is reported as a process warning.
   */
  private emit(event: StoreChangeEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        process.emitWarning(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }

  /** Tells every subscription that asked why its feed ends, each once, a throwing one as emit() does. */
  private emitClose(reason: IqgateError): void {
    const closeListeners = [...this.closeListeners.values()];
    this.closeListeners.clear();
    for (const onClose of closeListeners) {
      try {
        onClose(reason);
      } catch (error) {
        process.emitWarning(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }

  /** Bytes this partition holds uncommitted: dirty cache entries, write batch, in-flight batch. */
  uncommittedBytes(): number {
    let bytes = this.named.dirtyBytes + this.batch.bytes;
    for (const { batch } of this.committing) bytes += batch.bytes;
    return bytes;
  }

  flushCache(): void {
    this.cache.flush(this.named);
  }

  /**
   * Captures the write batch for a commit (call flushCache first); new writes go to a fresh
   * batch. The write is built when the commit's turn comes; settle with complete() or fail().
   */
  prepareCommit(changelogOffset: number | undefined): PreparedCommit {
    const batch = this.batch;
    this.batch = new WriteBatch();
    const position = this.uncommittedPos.copy();
    const offset = changelogOffset ?? this.committing.at(-1)?.offset ?? this.offset;
    const layer = { batch, position, offset };
    this.committing.push(layer);
    return {
      write: () => ({ taskId: this.context.taskId, keyspace: this.context.keyspace, entries: batch, meta: { changelogOffset: layer.offset, position } }),
      setChangelogOffset: (next) => {
        layer.offset = next;
      },
      complete: () => {
        // Commits settle in order, so this is the oldest layer.
        this.committing.shift();
        this.budget.add(-batch.bytes);
        this.committedPos = position;
        this.offset = layer.offset;
        if (this.listeners.size > 0) {
          const changes: Change[] = [];
          for (const [key, value] of batch.sortedEntries()) changes.push({ key: fromInternalKey(key), value });
          this.emit({ kind: 'committed', changes, position: position.copy() });
        }
      },
      fail: () => {
        // Nothing was written. The task drops everything uncommitted after a failed commit
        // (the runtime restores from the changelog, as Kafka Streams does for a corrupted task).
        const index = this.committing.indexOf(layer);
        if (index >= 0) this.committing.splice(index, 1);
        this.budget.add(-batch.bytes);
        if (this.committing.length === 0) this.uncommittedPos = this.committedPos.copy();
        // Its writes were readable as the `committing` layer until now.
        if (this.uncommittedListeners !== 0 && batch.size > 0) this.emitRollback(batch.entries());
      },
    };
  }

  /** Changelog records applied straight to the committed store: prepared like a commit. */
  prepareRestore(changes: readonly Change[], nextChangelogOffset: number, position: Position): PreparedCommit {
    const entries: Array<[string, Buffer | null]> = changes.map((change) => [toInternalKey(change.key), change.value]);
    // Computed when the restore's turn comes, after any commit queued before it settled.
    let restoredPos = this.committedPos;
    return {
      write: () => {
        this.cache.dropClean(this.named);
        restoredPos = this.committedPos.copy().merge(position);
        return { taskId: this.context.taskId, keyspace: this.context.keyspace, entries: pairEntries(entries), meta: { changelogOffset: nextChangelogOffset, position: restoredPos } };
      },
      complete: () => {
        this.cache.dropClean(this.named);
        this.committedPos = restoredPos;
        this.uncommittedPos.merge(position);
        this.offset = nextChangelogOffset;
        if (this.listeners.size > 0) {
          this.emit({ kind: 'committed', changes: [...changes], position: restoredPos.copy() });
        }
        if (this.uncommittedListeners !== 0) {
          // Uncommitted reads see a restored key unless an uncommitted write hides it.
          const visible = changes.filter((change) => this.uncommittedValue(toInternalKey(change.key)) === undefined);
          if (visible.length > 0) this.emit({ kind: 'uncommitted', changes: visible, position: this.uncommittedPos.copy() });
        }
      },
      fail: () => {},
      setChangelogOffset: () => {},
    };
  }

  /**
   * Drops everything uncommitted (abort, close): cache entries, write batch, uncommitted Position.
   * Subscribers of the uncommitted view hear each dropped key with the value now visible.
   */
  dropUncommitted(): void {
    // Only subscribers need the dropped keys.
    const dirty = this.uncommittedListeners !== 0 && this.named.dirtyCount > 0 ? this.named.dirtyBatch() : undefined;
    const batch = this.batch;
    this.cache.drop(this.named);
    this.budget.add(-this.batch.bytes);
    this.batch = new WriteBatch();
    // With commits in flight, the newest one's position is where the store will be once they land.
    this.uncommittedPos = (this.committing.at(-1)?.position ?? this.committedPos).copy();
    if (this.uncommittedListeners !== 0 && (dirty?.size ?? 0) + batch.size > 0) {
      // drop() left `dirty` to us (the cache builds a new one when asked); a key in both layers once.
      this.emitRollback(dirty === undefined ? batch.entries() : batch.size === 0 ? dirty.entries() : new Map([...batch.entries(), ...dirty.entries()]).entries());
    }
  }

  /**
   * What an uncommitted read of the (internal) key finds in the memory layers above the
   * committed store: a value, null for a tombstone, undefined when none of them knows the key.
   */
  private uncommittedValue(key: string): Bytes | null | undefined {
    let value = this.named.dirtyValue(key);
    if (value === undefined) value = this.batch.get(key);
    for (let i = this.committing.length - 1; value === undefined && i >= 0; i--) value = this.committing[i]!.batch.get(key);
    return value;
  }

  /**
   * A rollback event: each dropped key (internal form, from the dropped layers' entries) with
   * what an uncommitted read returns now — a remaining layer's value, else the committed one,
   * null when absent — at the Position the store went back to.
   */
  private emitRollback(dropped: Iterable<[string, unknown]>): void {
    const changes: Change[] = [];
    try {
      for (const [key] of dropped) {
        const bytes = fromInternalKey(key);
        const value = this.uncommittedValue(key);
        changes.push({ key: bytes, value: value === undefined ? (this.context.keyspace.getSync(bytes) ?? null) : value });
      }
    } catch (error) {
      // The rollback itself is done and must not fail for its subscribers (a store read failing
      // here fails the next query too): reported as emit() reports a throwing listener.
      process.emitWarning(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    const position = (this.committing.at(-1)?.position ?? this.committedPos).copy();
    this.emit({ kind: 'uncommitted', changes, position, rolledBack: true });
  }

  /**
   * Drops what is uncommitted and every subscription. A feed that stopped without a word would
   * look like a quiet store forever, so each subscriber hears why it ends (`reason`, by default
   * STORE_CLOSED): the runtime says PARTITION_REVOKED when a rebalance moves the partition.
   */
  close(reason: IqgateError = storeClosedError(`store ${this.storeName} partition ${this.partition}`)): void {
    if (this.closed) return;
    this.dropUncommitted();
    this.closed = true;
    this.listeners.clear();
    this.uncommittedListeners = 0;
    this.emitClose(reason);
    const hooks = [...this.closeHooks];
    this.closeHooks.clear();
    for (const hook of hooks) {
      // As emit(): one hook's exception neither stops the others nor fails the close.
      try {
        hook();
      } catch (error) {
        process.emitWarning(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }
}
