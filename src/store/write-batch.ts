/**
 * The write batch: the transaction buffer of one store partition (KIP-892's transaction
 * buffer, in the role Kafka Streams gives RocksDB's WriteBatchWithIndex). A sorted map of
 * key → value, or null for a tombstone that masks the committed store, holding everything
 * flushed since the last commit, with byte accounting. Commit writes it as one atomic batch;
 * abort drops it.
 */
import { ENTRY_OVERHEAD_BYTES } from './store-options.js';
import { createSortedMap, type SortedMap } from './sorted-map.js';

export type BatchValue = Buffer | null;

export function entryBytes(key: string, value: BatchValue): number {
  return key.length + (value === null ? 0 : value.length) + ENTRY_OVERHEAD_BYTES;
}

export class WriteBatch {
  private tree: SortedMap<BatchValue> = createSortedMap<BatchValue>();
  private byteCount = 0;

  /** Sets a value or tombstone; returns the change in accounted bytes. */
  set(key: string, value: BatchValue): number {
    const previous = this.tree.get(key);
    const delta = entryBytes(key, value) - (previous === undefined ? 0 : entryBytes(key, previous));
    this.tree.set(key, value);
    this.byteCount += delta;
    return delta;
  }

  /**
   * Takes in newer entries given as a sorted map with known accounted bytes (a flushed
   * NamedCache's dirty entries, which this batch may keep and change). Merges the smaller map
   * into the larger: an empty batch just takes the map over, O(1), and a large flush into a
   * small batch costs the small batch's size, not the flush's. Returns the change in bytes.
   */
  absorb(newer: SortedMap<BatchValue>, newerBytes: number): number {
    const before = this.byteCount;
    if (newer.size >= this.tree.size) {
      let total = before + newerBytes;
      for (const [key, value] of this.tree.entries(undefined, [])) {
        // set without overwrite: the newer entry wins; an older one it hides stops counting.
        if (!newer.set(key, value, false)) total -= entryBytes(key, value);
      }
      this.tree = newer;
      this.byteCount = total;
    } else {
      for (const [key, value] of newer.entries(undefined, [])) this.set(key, value);
    }
    return this.byteCount - before;
  }

  /** The value, null for a tombstone, undefined when this batch does not know the key. */
  get(key: string): BatchValue | undefined {
    return this.tree.get(key);
  }

  get bytes(): number {
    return this.byteCount;
  }

  get size(): number {
    return this.tree.size;
  }

  /** O(1) copy-on-write snapshot for a read view: later writes to the batch do not show in it. */
  snapshot(): SortedMap<BatchValue> {
    return this.tree.clone();
  }

  /**
   * Entries in key order. The pair array is reused from one step to the next (sorted-btree's
   * reusedArray, no allocation per entry): destructure it, do not keep it.
   */
  entries(): IterableIterator<[string, BatchValue]> {
    return this.tree.entries(undefined, []);
  }
}
