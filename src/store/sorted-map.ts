/**
 * The sorted map of the in-memory layers (record cache dirty entries, write batch, in-memory
 * committed store): sorted-btree's BTree with latin1-string keys. A latin1 string holds one
 * char per key byte, so JS `<` orders exactly like LevelDB's memcmp BytewiseComparator
 * (shorter prefix first), at ~6x the speed of a Buffer.compare comparator (docs/leveldb-notes.md §5).
 * `clone()` is O(1) copy-on-write, which is what gives read views their point in time.
 */
import sortedBtree from 'sorted-btree';
import { Buffer } from 'node:buffer';

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

/**
 * sorted-btree's node classes (exported, marked @internal; the version is pinned). Building a
 * tree bottom-up from sorted keys is O(n), where n inserts pay a descent and leaf splits and
 * shifts each. Undefined when the module shape differs: then the tree is built by inserts.
 */
interface NodeClasses {
  BNode: new (keys: unknown[], values: unknown[]) => unknown;
  BNodeInternal: new (children: unknown[], size: number) => unknown;
}
const nodeClasses: NodeClasses | undefined = (() => {
  const candidates = [sortedBtree as unknown, (sortedBtree as unknown as { default?: unknown }).default];
  for (const candidate of candidates) {
    const classes = candidate as Partial<NodeClasses> | undefined;
    if (typeof classes?.BNode === 'function' && typeof classes.BNodeInternal === 'function') return classes as NodeClasses;
  }
  return undefined;
})();

/** Leaves and internal nodes are filled to this many entries: room for later inserts without splitting at once. */
const BULK_NODE_FILL = 24;

/** A sorted map holding `keys` (strictly ascending, as compareStrings orders) with `values`. */
export function sortedMapFromSorted<V>(keys: string[], values: V[]): SortedMap<V> {
  const tree = createSortedMap<V>();
  const internals = tree as unknown as { _root: unknown; _maxNodeSize: number };
  if (nodeClasses === undefined || keys.length === 0 || internals._maxNodeSize < BULK_NODE_FILL) {
    for (let i = 0; i < keys.length; i++) tree.set(keys[i]!, values[i]!);
    return tree;
  }
  let level: unknown[] = [];
  let sizes: number[] = [];
  for (let i = 0; i < keys.length; i += BULK_NODE_FILL) {
    const end = Math.min(keys.length, i + BULK_NODE_FILL);
    level.push(new nodeClasses.BNode(keys.slice(i, end), values.slice(i, end)));
    sizes.push(end - i);
  }
  while (level.length > 1) {
    const parents: unknown[] = [];
    const parentSizes: number[] = [];
    for (let i = 0; i < level.length; i += BULK_NODE_FILL) {
      const end = Math.min(level.length, i + BULK_NODE_FILL);
      let size = 0;
      for (let j = i; j < end; j++) size += sizes[j]!;
      parents.push(new nodeClasses.BNodeInternal(level.slice(i, end), size));
      parentSizes.push(size);
    }
    level = parents;
    sizes = parentSizes;
  }
  internals._root = level[0];
  return tree;
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
