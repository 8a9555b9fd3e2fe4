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
 * need the dirty entries, which each NamedCache also keeps in a copy-on-write sorted map.
 */
import { ENTRY_OVERHEAD_BYTES } from './store-options.js';
import { createSortedMap, type SortedMap } from './sorted-map.js';
import type { RecordSource } from './types.js';
import type { UncommittedBudget } from './uncommitted-budget.js';

export class CacheEntry {
  prev: CacheEntry | null = null;
  next: CacheEntry | null = null;
  dirty: boolean;
  readonly size: number;

  constructor(
    readonly owner: NamedCache,
    readonly key: string,
    readonly keyBytes: Buffer,
    readonly value: Buffer | null,
    readonly source: RecordSource | null,
  ) {
    this.dirty = source !== null;
    this.size = key.length + (value === null ? 0 : value.length) + ENTRY_OVERHEAD_BYTES;
  }
}

/** Receives a NamedCache's dirty entries, in write order, when they are flushed. */
export type CacheFlushHandler = (entries: readonly CacheEntry[]) => void;

export class NamedCache {
  readonly entries = new Map<string, CacheEntry>();
  dirty = new Map<string, CacheEntry>();
  dirtySorted: SortedMap<Buffer | null> = createSortedMap<Buffer | null>();
  dirtyBytes = 0;

  constructor(
    readonly name: string,
    readonly onFlush: CacheFlushHandler,
  ) {}
}

export class RecordCache {
  private head: CacheEntry | null = null;
  private tail: CacheEntry | null = null;
  private byteCount = 0;

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
    const entry = new CacheEntry(cache, key, keyBytes, value, source);
    this.replace(cache, entry);
    cache.dirty.delete(key);
    cache.dirty.set(key, entry);
    cache.dirtySorted.set(key, value);
    cache.dirtyBytes += entry.size;
    this.budget.add(entry.size);
    this.evictIfNeeded();
  }

  /** Caches a value read from a lower layer. */
  putClean(cache: NamedCache, key: string, keyBytes: Buffer, value: Buffer): void {
    this.replace(cache, new CacheEntry(cache, key, keyBytes, value, null));
    this.evictIfNeeded();
  }

  /** Hands the NamedCache's dirty entries, in write order, to its flush handler; they stay as clean entries. */
  flush(cache: NamedCache): void {
    if (cache.dirty.size === 0) return;
    const flushed = [...cache.dirty.values()];
    for (const entry of flushed) entry.dirty = false;
    this.budget.add(-cache.dirtyBytes);
    cache.dirty = new Map();
    cache.dirtySorted = createSortedMap<Buffer | null>();
    cache.dirtyBytes = 0;
    cache.onFlush(flushed);
  }

  /** Drops every entry of the NamedCache, dirty ones included (abort, close). */
  drop(cache: NamedCache): void {
    for (const entry of cache.entries.values()) this.remove(entry);
    this.budget.add(-cache.dirtyBytes);
    cache.dirty = new Map();
    cache.dirtySorted = createSortedMap<Buffer | null>();
    cache.dirtyBytes = 0;
  }

  /** Drops the clean entries (after a restore wrote the committed store directly). */
  dropClean(cache: NamedCache): void {
    for (const entry of cache.entries.values()) if (!entry.dirty) this.remove(entry);
  }

  private replace(cache: NamedCache, entry: CacheEntry): void {
    const previous = cache.entries.get(entry.key);
    if (previous !== undefined) {
      if (previous.dirty) {
        cache.dirtyBytes -= previous.size;
        this.budget.add(-previous.size);
      }
      this.unlink(previous);
      this.byteCount -= previous.size;
    }
    cache.entries.set(entry.key, entry);
    this.append(entry);
    this.byteCount += entry.size;
  }

  private evictIfNeeded(): void {
    while (this.byteCount > this.maxBytes && this.head !== null) {
      const eldest = this.head;
      if (eldest.dirty) this.flush(eldest.owner);
      // The flush handler may have dropped or replaced entries; only remove what is still there.
      if (eldest.owner.entries.get(eldest.key) === eldest) this.remove(eldest);
    }
  }

  private remove(entry: CacheEntry): void {
    this.unlink(entry);
    this.byteCount -= entry.size;
    entry.owner.entries.delete(entry.key);
    if (entry.dirty) {
      // Only drop() removes dirty entries; it settles dirtyBytes and the budget itself.
      entry.dirty = false;
    }
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
}
