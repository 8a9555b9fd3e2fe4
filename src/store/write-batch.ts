/**
 * The write batch: the transaction buffer of one store partition (KIP-892's transaction
 * buffer, in the role Kafka Streams gives RocksDB's WriteBatchWithIndex). Key → value, or null
 * for a tombstone that masks the committed store, holding everything flushed since the last
 * commit, with byte accounting. Commit writes it as one atomic batch; abort drops it. The
 * record cache keeps its dirty entries in one too, which the partition's batch adopts whole
 * on a flush.
 *
 * The entries live in a hash map: writes, point reads and the commit (LevelDB takes a batch's
 * keys in any order) need no ordering. The sorted copy-on-write map that read views clone is
 * built on the first snapshot() and then kept up to date lazily: keys set since the last
 * snapshot wait in a list and go into the tree at the next one. Writes without read views
 * therefore never pay for a sorted insert; with views, each view pays for the keys written
 * since the one before.
 *
 * A flush into an empty batch (the first since the last commit, the common case) does not even
 * build the hash map: the flushed keys and values are kept as two arrays, and the map is built
 * from them only when something looks a key up or changes the batch. A commit writes from the
 * arrays, and the processing path mostly reads the flushed keys from the cache, where they stay
 * as clean entries — so a batch captured for a commit is often written without ever being
 * indexed (bench:store, uncommitted puts and commit).
 */
import { ENTRY_OVERHEAD_BYTES } from './store-options.js';
import { sortedMapFromSorted, type SortedMap } from './sorted-map.js';
import { Buffer } from 'node:buffer';

export type BatchValue = Buffer | null;

export function entryBytes(key: string, value: BatchValue): number {
  return key.length + (value === null ? 0 : value.length) + ENTRY_OVERHEAD_BYTES;
}

export class WriteBatch {
  private map = new Map<string, BatchValue>();
  /** Entries not in `map` yet (distinct keys, none in `map`): a flush into an empty batch (setEach). */
  private pendingKeys: string[] | undefined = undefined;
  private pendingValues: BatchValue[] | undefined = undefined;
  /** The sorted copy for read views; undefined until a snapshot needs it (or after it fell far behind). */
  private tree: SortedMap<BatchValue> | undefined = undefined;
  /** Keys set since `tree` was last brought up to date (with repeats); empty while there is no tree. */
  private stale: string[] = [];
  private byteCount = 0;

  /** Moves the pending entries into the map: before any lookup or change. */
  private index(): Map<string, BatchValue> {
    const keys = this.pendingKeys;
    if (keys !== undefined) {
      const values = this.pendingValues!;
      const map = this.map;
      for (let i = 0; i < keys.length; i++) map.set(keys[i]!, values[i]!);
      this.pendingKeys = this.pendingValues = undefined;
    }
    return this.map;
  }

  /** Sets a value or tombstone; returns the change in accounted bytes. */
  set(key: string, value: BatchValue): number {
    const previous = this.index().get(key);
    const delta = entryBytes(key, value) - (previous === undefined ? 0 : entryBytes(key, previous));
    this.setAccounted(key, value, delta);
    return delta;
  }

  /** set() for a caller that already knows the change in accounted bytes (the record cache). */
  setAccounted(key: string, value: BatchValue, delta: number): void {
    this.index().set(key, value);
    this.byteCount += delta;
    if (this.tree !== undefined) this.markStale(key);
  }

  private markStale(key: string): void {
    // Catching up costs one tree insert per listed key; past the batch's size a rebuild costs no more.
    if (this.stale.length >= this.map.size) {
      this.tree = undefined;
      this.stale = [];
    } else {
      this.stale.push(key);
    }
  }

  /**
   * Takes in a newer batch (a flushed NamedCache's dirty entries), which this batch may keep
   * and change, so the caller must not use it afterwards. Merges the smaller into the larger:
   * an empty batch just takes the newer one over, O(1), and a large flush into a small batch
   * costs the small batch's size, not the flush's. Returns the change in bytes.
   */
  absorb(newer: WriteBatch): number {
    this.index();
    newer.index();
    const before = this.byteCount;
    if (newer.map.size >= this.map.size) {
      let total = before + newer.byteCount;
      const map = newer.map;
      for (const [key, value] of this.map) {
        // The newer entry wins; an older one it hides stops counting.
        if (map.has(key)) {
          total -= entryBytes(key, value);
        } else {
          map.set(key, value);
          if (newer.tree !== undefined) newer.markStale(key);
        }
      }
      this.map = map;
      this.tree = newer.tree;
      this.stale = newer.stale;
      this.byteCount = total;
      newer.map = new Map();
      newer.tree = undefined;
      newer.stale = [];
      newer.byteCount = 0;
    } else {
      for (const [key, value] of newer.map) this.set(key, value);
    }
    return this.byteCount - before;
  }

  /**
   * Sets each entry (distinct keys, `size` their entryBytes: a flushed NamedCache's dirty
   * entries); returns the change in bytes. Into an empty batch no key can hide an older one,
   * so each costs one map insert and no lookup.
   */
  setEach(entries: ReadonlyArray<{ readonly key: string; readonly value: BatchValue; readonly size: number }>): number {
    if (this.size !== 0) {
      let delta = 0;
      for (const { key, value } of entries) delta += this.set(key, value);
      return delta;
    }
    const keys = new Array<string>(entries.length);
    const values = new Array<BatchValue>(entries.length);
    let total = 0;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      keys[i] = entry.key;
      values[i] = entry.value;
      total += entry.size;
    }
    this.pendingKeys = keys;
    this.pendingValues = values;
    this.byteCount = total;
    // An empty batch holds no tree worth catching up (a rebuild costs the same).
    this.tree = undefined;
    this.stale = [];
    return total;
  }

  /** The value, null for a tombstone, undefined when this batch does not know the key. */
  get(key: string): BatchValue | undefined {
    return this.index().get(key);
  }

  get bytes(): number {
    return this.byteCount;
  }

  get size(): number {
    return this.map.size + (this.pendingKeys === undefined ? 0 : this.pendingKeys.length);
  }

  /** The sorted map, brought up to date. */
  private sorted(): SortedMap<BatchValue> {
    this.index();
    let tree = this.tree;
    if (tree === undefined) {
      // The default sort orders strings by UTF-16 code units, which for latin1 keys is the
      // byte order of `<`; without a comparator callback it is about 1.5x faster.
      const keys = [...this.map.keys()].sort();
      const values = new Array<BatchValue>(keys.length);
      for (let i = 0; i < keys.length; i++) values[i] = this.map.get(keys[i]!)!;
      tree = sortedMapFromSorted(keys, values);
      this.tree = tree;
    } else if (this.stale.length > 0) {
      for (const key of this.stale) tree.set(key, this.map.get(key)!);
    }
    this.stale = [];
    return tree;
  }

  /** O(1) copy-on-write snapshot for a read view (plus catching up on keys set since the last). */
  snapshot(): SortedMap<BatchValue> {
    return this.sorted().clone();
  }

  /** Entries in no particular order. */
  entries(): IterableIterator<[string, BatchValue]> {
    return this.index().entries();
  }

  /** Each entry in no particular order, without indexing a fresh flush (what a commit writes). */
  forEachEntry(visit: (key: string, value: BatchValue) => void): void {
    const keys = this.pendingKeys;
    if (keys === undefined) {
      for (const [key, value] of this.map) visit(key, value);
      return;
    }
    const values = this.pendingValues!;
    for (let i = 0; i < keys.length; i++) visit(keys[i]!, values[i]!);
  }

  /**
   * Entries in key order. The pair array is reused from one step to the next (sorted-btree's
   * reusedArray, no allocation per entry): destructure it, do not keep it.
   */
  sortedEntries(): IterableIterator<[string, BatchValue]> {
    return this.sorted().entries(undefined, []);
  }
}
