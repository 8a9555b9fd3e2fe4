/**
 * The record cache: one bytes-bounded LRU shared by every store partition of the process
 * (Kafka Streams' ThreadCache, statestore.cache.max.bytes), split into one NamedCache per
 * store partition. Repeated writes of a key between flushes collapse into one dirty entry.
 *
 * As in Kafka Streams' ThreadCache/NamedCache:
 * - a NamedCache remembers its dirty keys in the order of their latest write (a re-written
 *   key moves to the end, NamedCache.put's remove-then-add);
 * - evicting a dirty entry first flushes ALL dirty entries of its NamedCache, in that order
 *   (ThreadCache.maybeEvict → NamedCache.evict → flush), so the changelog and downstream see
 *   a key's writes in order;
 * - flushed entries stay cached as clean entries, and reads that miss cache their result.
 *
 * Unlike Kafka Streams the LRU order is global across named caches rather than round-robin,
 * so the least recently used entry of the whole process goes first.
 *
 * Clean entries always equal what the layers below (write batch, committed store) hold; the
 * owner drops them when that could stop being true (abort, restore). Read views therefore only
 * need the dirty entries, as a WriteBatch of key → latest value. A NamedCache builds that batch
 * from its dirty list when a read view first asks for it and keeps it up to date from then until
 * the next flush: writes nobody reads uncommitted in between pay for one map insert (the
 * cache's own), not two. (Keeping it on every write cost about a fifth of a put, bench:store.)
 */
import { ENTRY_OVERHEAD_BYTES } from './store-options.js';
import type { RecordSource } from './types.js';
import type { UncommittedBudget } from './uncommitted-budget.js';
import { WriteBatch } from './write-batch.js';
import { Buffer } from 'node:buffer';

export class CacheEntry {
  prev: CacheEntry | null = null;
  next: CacheEntry | null = null;
  /** Neighbours in the owner's dirty list (write order); only meaningful while dirty. */
  dirtyPrev: CacheEntry | null = null;
  dirtyNext: CacheEntry | null = null;
  dirty = false;
  value: Buffer | null;
  source: RecordSource | null = null;
  size: number;

  constructor(
    public owner: NamedCache,
    public key: string,
    public keyBytes: Buffer,
    value: Buffer | null,
  ) {
    this.value = value;
    this.size = key.length + (value === null ? 0 : value.length) + ENTRY_OVERHEAD_BYTES;
  }
}

/**
 * Removed entries kept for reuse: once the cache is full every write of a new key evicts about
 * one entry, and reusing it spares an allocation that would survive into the old generation.
 */
const POOL_MAX = 64;

/**
 * Receives a NamedCache's dirty entries, in write order, when they are flushed (each key once,
 * at its latest value), and the same entries as a WriteBatch when a read view had made the
 * cache build one (the partition's write batch then absorbs it, adopting it whole when empty).
 */
export type CacheFlushHandler = (entries: readonly CacheEntry[], dirty: WriteBatch | undefined) => void;

export class NamedCache {
  readonly entries = new Map<string, CacheEntry>();
  /** Dirty entries in order of their latest write (an intrusive list: no per-write Map operations). */
  dirtyHead: CacheEntry | null = null;
  dirtyTail: CacheEntry | null = null;
  dirtyCount = 0;
  /** The dirty entries' accounted bytes (entryBytes of each). */
  dirtyBytes = 0;
  /** The dirty entries as a batch, once a read view asked (dirtyBatch()); kept current until the next flush. */
  built: WriteBatch | undefined = undefined;

  constructor(
    readonly name: string,
    readonly onFlush: CacheFlushHandler,
  ) {}

  /** The dirty entries' latest values: what uncommitted read views see of the cache. */
  dirtyBatch(): WriteBatch {
    let batch = this.built;
    if (batch === undefined) {
      batch = new WriteBatch();
      for (let entry = this.dirtyHead; entry !== null; entry = entry.dirtyNext) batch.setAccounted(entry.key, entry.value, entry.size);
      this.built = batch;
    }
    return batch;
  }

  /** The key's dirty value (null for a tombstone), undefined when the key has no dirty entry. */
  dirtyValue(key: string): Buffer | null | undefined {
    const entry = this.entries.get(key);
    return entry !== undefined && entry.dirty ? entry.value : undefined;
  }
}

/**
 * The size of the slab Node's Buffer pool hands small buffers out of. Node 24 raised
 * Buffer.poolSize from 8 KiB to 64 KiB, and Node 26's slab is a little larger than poolSize
 * (65,600 bytes), so it is read off a pooled buffer at load rather than assumed.
 */
const POOLED_SLAB_BYTES = Buffer.from('k').buffer.byteLength;
function poolSlabBytes(): number {
  return Math.max(Buffer.poolSize, POOLED_SLAB_BYTES);
}

/**
 * Key bytes an entry (or a change event) may keep: a view into a buffer larger than Node's
 * Buffer pool slab (an entry of a pack, a key inside a fetched batch — a processor's store key
 * may be the input record's own bytes) is copied, so that a cached key never keeps the whole
 * buffer alive. A view into a pool slab is kept as it is: its copy would be one too.
 */
export function ownKeyBytes(bytes: Buffer): Buffer {
  return bytes.byteLength < bytes.buffer.byteLength && bytes.buffer.byteLength > poolSlabBytes() ? Buffer.from(bytes) : bytes;
}

export class RecordCache {
  private head: CacheEntry | null = null;
  private tail: CacheEntry | null = null;
  private byteCount = 0;
  private readonly pool: CacheEntry[] = [];

  constructor(
    readonly maxBytes: number,
    private readonly budget: UncommittedBudget,
  ) {}

  get bytes(): number {
    return this.byteCount;
  }

  /** A lookup that counts as a use (moves the entry to the LRU end). */
  get(cache: NamedCache, key: string): CacheEntry | undefined {
    const entry = cache.entries.get(key);
    if (entry !== undefined && entry !== this.tail) {
      this.unlink(entry);
      this.append(entry);
    }
    return entry;
  }

  /** A write: becomes the key's dirty entry; may evict (and so flush) entries of any NamedCache. */
  putDirty(cache: NamedCache, key: string, keyBytes: Buffer, value: Buffer | null, source: RecordSource): void {
    let entry = cache.entries.get(key);
    let delta: number;
    if (entry === undefined) {
      entry = this.newEntry(cache, key, keyBytes, value);
      cache.entries.set(key, entry);
      this.byteCount += entry.size;
      delta = entry.size;
    } else {
      // Entries are mutable: read views never see them (they snapshot cache.dirty instead).
      const oldSize = entry.size;
      // The entry keeps the key bytes it has (equal to these): a caller's may be a view into a
      // larger buffer (see ownKeyBytes).
      if (entry.dirty) this.unlinkDirty(entry);
      entry.value = value;
      entry.size = key.length + (value === null ? 0 : value.length) + ENTRY_OVERHEAD_BYTES;
      this.byteCount += entry.size - oldSize;
      delta = entry.dirty ? entry.size - oldSize : entry.size;
      if (entry !== this.tail) this.unlink(entry);
    }
    if (entry !== this.tail) this.append(entry);
    entry.source = source;
    entry.dirty = true;
    this.appendDirty(entry);
    // Same formula as the batch's entryBytes, so the delta is the batch's too.
    cache.dirtyBytes += delta;
    if (cache.built !== undefined) cache.built.setAccounted(key, value, delta);
    this.budget.add(delta);
    if (this.byteCount > this.maxBytes) this.evict();
  }

  /** Caches a value read from a lower layer (the key is not cached yet). */
  putClean(cache: NamedCache, key: string, keyBytes: Buffer, value: Buffer): void {
    const entry = this.newEntry(cache, key, keyBytes, value);
    cache.entries.set(key, entry);
    this.byteCount += entry.size;
    this.append(entry);
    if (this.byteCount > this.maxBytes) this.evict();
  }

  /** Hands the NamedCache's dirty entries, in write order, to its flush handler; they stay as clean entries. */
  flush(cache: NamedCache): void {
    if (cache.dirtyCount === 0) return;
    const flushed = new Array<CacheEntry>(cache.dirtyCount);
    let i = 0;
    for (let entry = cache.dirtyHead; entry !== null; ) {
      const next: CacheEntry | null = entry.dirtyNext;
      flushed[i++] = entry;
      entry.dirty = false;
      entry.dirtyPrev = entry.dirtyNext = null;
      entry = next;
    }
    const dirty = cache.built;
    this.budget.add(-cache.dirtyBytes);
    this.resetDirty(cache);
    cache.onFlush(flushed, dirty);
  }

  /** Drops every entry of the NamedCache, dirty ones included (abort, close). */
  drop(cache: NamedCache): void {
    for (const entry of cache.entries.values()) {
      this.unlink(entry);
      this.byteCount -= entry.size;
      entry.dirty = false;
      entry.dirtyPrev = entry.dirtyNext = null;
    }
    cache.entries.clear();
    this.budget.add(-cache.dirtyBytes);
    this.resetDirty(cache);
  }

  /** Drops the clean entries (after a restore wrote the committed store directly). */
  dropClean(cache: NamedCache): void {
    for (const entry of cache.entries.values()) if (!entry.dirty) this.remove(entry);
  }

  private resetDirty(cache: NamedCache): void {
    cache.dirtyHead = cache.dirtyTail = null;
    cache.dirtyCount = 0;
    cache.dirtyBytes = 0;
    cache.built = undefined;
  }

  private evict(): void {
    while (this.byteCount > this.maxBytes && this.head !== null) {
      const eldest = this.head;
      if (!eldest.dirty) {
        this.remove(eldest);
        this.recycle(eldest);
      } else {
        this.flush(eldest.owner);
        // The flush handler may have dropped or replaced entries; only remove what is still there.
        if (eldest.owner.entries.get(eldest.key) === eldest) this.remove(eldest);
      }
    }
  }

  /** Removes a clean entry. */
  private remove(entry: CacheEntry): void {
    this.unlink(entry);
    this.byteCount -= entry.size;
    entry.owner.entries.delete(entry.key);
  }

  private newEntry(cache: NamedCache, key: string, bytes: Buffer, value: Buffer | null): CacheEntry {
    const keyBytes = ownKeyBytes(bytes);
    const entry = this.pool.pop();
    if (entry === undefined) return new CacheEntry(cache, key, keyBytes, value);
    entry.owner = cache;
    entry.key = key;
    entry.keyBytes = keyBytes;
    entry.value = value;
    entry.size = key.length + (value === null ? 0 : value.length) + ENTRY_OVERHEAD_BYTES;
    return entry;
  }

  /** An entry evicted clean, referenced from nowhere any more (unlinked, out of its map). */
  private recycle(entry: CacheEntry): void {
    if (this.pool.length >= POOL_MAX) return;
    entry.source = null;
    entry.value = null;
    this.pool.push(entry);
  }

  private append(entry: CacheEntry): void {
    entry.prev = this.tail;
    entry.next = null;
    if (this.tail === null) this.head = entry;
    else this.tail.next = entry;
    this.tail = entry;
  }

  private unlink(entry: CacheEntry): void {
    if (entry.prev === null) this.head = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === null) this.tail = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = null;
    entry.next = null;
  }

  private appendDirty(entry: CacheEntry): void {
    const cache = entry.owner;
    entry.dirtyPrev = cache.dirtyTail;
    entry.dirtyNext = null;
    if (cache.dirtyTail === null) cache.dirtyHead = entry;
    else cache.dirtyTail.dirtyNext = entry;
    cache.dirtyTail = entry;
    cache.dirtyCount++;
  }

  private unlinkDirty(entry: CacheEntry): void {
    const cache = entry.owner;
    if (entry.dirtyPrev === null) cache.dirtyHead = entry.dirtyNext;
    else entry.dirtyPrev.dirtyNext = entry.dirtyNext;
    if (entry.dirtyNext === null) cache.dirtyTail = entry.dirtyPrev;
    else entry.dirtyNext.dirtyPrev = entry.dirtyPrev;
    entry.dirtyPrev = entry.dirtyNext = null;
    cache.dirtyCount--;
  }
}
