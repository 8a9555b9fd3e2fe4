/**
 * The sorted map of the in-memory layers (record cache dirty entries, write batch, in-memory
 * committed store): sorted-btree's BTree with latin1-string keys. A latin1 string holds one
 * char per key byte, so JS `<` orders exactly like LevelDB's memcmp BytewiseComparator
 * (shorter prefix first), at ~6x the speed of a Buffer.compare comparator (LEVEL-NOTES §5).
 * `clone()` is O(1) copy-on-write, which is what gives read views their point in time.
 */
import sortedBtree from 'sorted-btree';

// sorted-btree is CommonJS with `exports.default`. Under Node ESM the default import is the
// whole exports object; bundlers with interop (vite/vitest) hand over the class itself.
const imported = sortedBtree as unknown as typeof sortedBtree.default | typeof sortedBtree;
const BTree = typeof imported === 'function' ? imported : imported.default;

export type SortedMap<V> = InstanceType<typeof BTree<string, V>>;

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function createSortedMap<V>(): SortedMap<V> {
  return new BTree<string, V>(undefined, compareStrings);
}

/** Internal key form: one latin1 char per byte. */
export function toInternalKey(key: Buffer): string {
  // Buffer#latin1Slice is what toString('latin1') ends in, minus its argument handling
  // (measurable on the put path); it is public but missing from @types/node.
  return (key as unknown as Latin1Slicer).latin1Slice(0, key.length);
}

interface Latin1Slicer {
  latin1Slice(start: number, end: number): string;
}

export function fromInternalKey(key: string): Buffer {
  return Buffer.from(key, 'latin1');
}
