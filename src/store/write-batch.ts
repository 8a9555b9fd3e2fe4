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
  /** The sorted copy for read views; undefined until a snapshot needs it (or after it fell far behind). */
  private tree: SortedMap<BatchValue> | undefined = undefined;
  /** Keys set since `tree` was last brought up to date (with repeats); empty while there is no tree. */
  private stale: string[] = [];
  private byteCount = 0;

  /** Sets a value or tombstone; returns the change in accounted bytes. */
  set(key: string, value: BatchValue): number {
    const previous = this.map.get(key);
    const delta = entryBytes(key, value) - (previous === undefined ? 0 : entryBytes(key, previous));
    this.setAccounted(key, value, delta);
    return delta;
  }

  /** set() for a caller that already knows the change in accounted bytes (the record cache). */
  setAccounted(key: string, value: BatchValue, delta: number): void {
    this.map.set(key, value);
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

  /** The value, null for a tombstone, undefined when this batch does not know the key. */
  get(key: string): BatchValue | undefined {
    return this.map.get(key);
  }

  get bytes(): number {
    return this.byteCount;
  }

  get size(): number {
    return this.map.size;
  }

  /** The sorted map, brought up to date. */
  private sorted(): SortedMap<BatchValue> {
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

  /** Entries in no particular order (what a commit writes). */
  entries(): IterableIterator<[string, BatchValue]> {
    return this.map.entries();
  }

  /**
   * Entries in key order. The pair array is reused from one step to the next (sorted-btree's
   * reusedArray, no allocation per entry): destructure it, do not keep it.
   */
  sortedEntries(): IterableIterator<[string, BatchValue]> {
    return this.sorted().entries(undefined, []);
  }
}
