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
  /** Neighbours in the owner's dirty list (write order); only meaningful while dirty. */
  dirtyPrev: CacheEntry | null = null;
  dirtyNext: CacheEntry | null = null;
  dirty = false;
  value: Buffer | null;
  source: RecordSource | null = null;
  size: number;

  constructor(
    readonly owner: NamedCache,
    readonly key: string,
    public keyBytes: Buffer,
    value: Buffer | null,
  ) {
    this.value = value;
    this.size = key.length + (value === null ? 0 : value.length) + ENTRY_OVERHEAD_BYTES;
  }
}

/**
 * Receives a NamedCache's dirty entries, in write order, when they are flushed, together with
 * the same entries as a sorted map (key → latest value) and their accounted bytes, which the
 * write batch can adopt whole when it is empty.
 */
export type CacheFlushHandler = (entries: readonly CacheEntry[], sorted: SortedMap<Buffer | null>, bytes: number) => void;

export class NamedCache {
  readonly entries = new Map<string, CacheEntry>();
  /** Dirty entries in order of their latest write (an intrusive list: no per-write Map operations). */
  dirtyHead: CacheEntry | null = null;
  dirtyTail: CacheEntry | null = null;
  dirtyCount = 0;
  /** The dirty entries' values by key, copy-on-write: what uncommitted read views see of the cache. */
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
    let entry = cache.entries.get(key);
    if (entry === undefined) {
      entry = new CacheEntry(cache, key, keyBytes, value);
      cache.entries.set(key, entry);
      this.byteCount += entry.size;
    } else {
      // Entries are mutable: read views never see them (they clone dirtySorted instead).
      if (entry.dirty) {
        cache.dirtyBytes -= entry.size;
        this.budget.add(-entry.size);
        this.unlinkDirty(entry);
      }
      this.byteCount -= entry.size;
      entry.keyBytes = keyBytes;
      entry.value = value;
      entry.size = key.length + (value === null ? 0 : value.length) + ENTRY_OVERHEAD_BYTES;
      this.byteCount += entry.size;
      if (entry !== this.tail) this.unlink(entry);
    }
    if (entry !== this.tail) this.append(entry);
    entry.source = source;
    entry.dirty = true;
    this.appendDirty(entry);
    cache.dirtySorted.set(key, value);
    cache.dirtyBytes += entry.size;
    this.budget.add(entry.size);
    if (this.byteCount > this.maxBytes) this.evict();
  }

  /** Caches a value read from a lower layer (the key is not cached yet). */
  putClean(cache: NamedCache, key: string, keyBytes: Buffer, value: Buffer): void {
    const entry = new CacheEntry(cache, key, keyBytes, value);
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
    for (let entry = cache.dirtyHead; entry !== null; entry = entry.dirtyNext) {
      flushed[i++] = entry;
      entry.dirty = false;
    }
    for (const entry of flushed) entry.dirtyPrev = entry.dirtyNext = null;
    const sorted = cache.dirtySorted;
    const bytes = cache.dirtyBytes;
    this.budget.add(-bytes);
    this.resetDirty(cache);
    cache.onFlush(flushed, sorted, bytes);
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
    cache.dirtySorted = createSortedMap<Buffer | null>();
    cache.dirtyBytes = 0;
  }

  private evict(): void {
    while (this.byteCount > this.maxBytes && this.head !== null) {
      const eldest = this.head;
      if (eldest.dirty) this.flush(eldest.owner);
      // The flush handler may have dropped or replaced entries; only remove what is still there.
      if (eldest.owner.entries.get(eldest.key) === eldest) this.remove(eldest);
    }
  }

  /** Removes a clean entry. */
  private remove(entry: CacheEntry): void {
    this.unlink(entry);
    this.byteCount -= entry.size;
    entry.owner.entries.delete(entry.key);
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
