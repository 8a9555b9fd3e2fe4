/**
 * K-way merge of per-partition iterators that are each sorted by key bytes, so a range over a
 * partitioned store comes back in one global key order. A binary heap of the sources' heads
 * keeps each step O(log partitions), and sources are pulled lazily: a page of N entries reads
 * about N entries overall, not N per partition.
 */
import type { Bytes } from '../store/types.js';
import { Buffer } from 'node:buffer';

export interface MergeSource<T> {
  readonly iterator: AsyncIterator<T>;
  /** Called when the source's iterator throws; the merge continues without it. */
  readonly onError: (error: unknown) => void;
}

interface Head<T> {
  readonly value: T;
  readonly source: number;
}

export async function* mergeSorted<T>(
  sources: ReadonlyArray<MergeSource<T>>,
  keyOf: (item: T) => Bytes,
  descending: boolean,
): AsyncGenerator<T, void, undefined> {
  const sign = descending ? -1 : 1;
  // Ties (the same key in two partitions, which correct routing never produces) go to the
  // lower source index, so the output is deterministic.
  const before = (a: Head<T>, b: Head<T>): boolean => {
    const c = sign * Buffer.compare(keyOf(a.value), keyOf(b.value));
    return c < 0 || (c === 0 && a.source < b.source);
  };
  const heap: Array<Head<T>> = [];
  const push = (head: Head<T>): void => {
    heap.push(head);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  };
  const pop = (): Head<T> => {
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  };
  const pull = async (index: number): Promise<void> => {
    const source = sources[index]!;
    try {
      const next = await source.iterator.next();
      if (next.done !== true) push({ value: next.value, source: index });
    } catch (error) {
      source.onError(error);
    }
  };

  await Promise.all(sources.map((_, i) => pull(i)));
  while (heap.length > 0) {
    const head = pop();
    yield head.value;
    await pull(head.source);
  }
}
