/**
 * Range reads over the layers of an uncommitted view: record-cache dirty entries over the
 * write batch over a batch whose commit is in flight over the committed store. A key's value
 * comes from the highest layer that has it; a tombstone (null) there masks the lower layers,
 * for ranges as for single keys. (Kafka Streams' CachingKeyValueStore merges only cache and
 * store, with MergedSortedCacheKeyValueBytesStoreIterator; KIP-892 adds the transaction
 * buffer the same way. iqgate always merges the cache in, also for ranges.)
 */
import { isAboveUpper, isBelowLower, type RangeQuery } from './key-bounds.js';
import { fromInternalKey, toInternalKey, type SortedMap } from './sorted-map.js';
import type { CommittedCursor } from './committed-store.js';
import type { KeyValue } from './types.js';

export type MemoryLayer = SortedMap<Buffer | null>;

/** A sync iterator over one in-memory layer within the query's bounds, in query order. */
function* layerEntries(layer: MemoryLayer, query: RangeQuery): Generator<[string, Buffer | null]> {
  const { bounds, reverse } = query;
  if (reverse) {
    const iterator =
      bounds.lt !== undefined ? layer.entriesReversed(bounds.lt, undefined, true) : layer.entriesReversed(bounds.lte);
    for (const entry of iterator) {
      if (isBelowLower(entry[0], bounds)) return;
      yield entry;
    }
  } else {
    for (const entry of layer.entries(bounds.gte)) {
      if (isAboveUpper(entry[0], bounds)) return;
      yield entry;
    }
  }
}

interface Head {
  key: string;
  value: Buffer | null;
  /** The committed entry itself, to reuse its key Buffer. */
  committed: KeyValue | undefined;
}

/**
 * Merges `layers` (highest priority first) over the committed cursor, which is opened only
 * when iteration starts and closed on every exit path (end, early return, error).
 */
export async function* mergeRange(
  layers: readonly MemoryLayer[],
  openCursor: (query: RangeQuery, firstChunk?: number) => CommittedCursor,
  query: RangeQuery,
): AsyncGenerator<KeyValue, void, undefined> {
  if (query.limit === 0) return;
  const iterators = layers.map((layer) => layerEntries(layer, query));
  const heads: Array<Head | undefined> = iterators.map((iterator) => {
    const step = iterator.next();
    return step.done === true ? undefined : { key: step.value[0], value: step.value[1], committed: undefined };
  });
  // Fast path: nothing in memory within the bounds, stream the committed store as is (its
  // cursor may apply the limit). Otherwise tombstones may mask committed entries, so the
  // committed cursor runs unlimited (it is read lazily, chunk by chunk).
  const passThrough = heads.every((head) => head === undefined);
  const cursor = passThrough || query.limit === Infinity
    ? openCursor(query)
    : openCursor({ ...query, limit: Infinity }, query.limit + 16);
  try {
    if (passThrough) {
      let emitted = 0;
      for (let chunk = await cursor.next(); chunk !== undefined; chunk = await cursor.next()) {
        for (const entry of chunk) {
          yield entry;
          if (++emitted >= query.limit) return;
        }
      }
      return;
    }

    let chunk: readonly KeyValue[] | undefined = await cursor.next();
    let index = 0;
    const nextCommitted = async (): Promise<Head | undefined> => {
      while (chunk !== undefined && index >= chunk.length) {
        chunk = await cursor.next();
        index = 0;
      }
      if (chunk === undefined) return undefined;
      const entry = chunk[index++]!;
      return { key: toInternalKey(entry.key), value: entry.value, committed: entry };
    };
    let committedHead = await nextCommitted();
    const reverse = query.reverse;
    let emitted = 0;

    for (;;) {
      // The next key in query order among all heads.
      let best: string | undefined = committedHead?.key;
      for (const head of heads) {
        if (head !== undefined && (best === undefined || (reverse ? head.key > best : head.key < best))) best = head.key;
      }
      if (best === undefined) return;

      // The highest layer holding `best` decides; every layer holding it moves on.
      let winner: Head | undefined;
      for (let i = 0; i < heads.length; i++) {
        const head = heads[i];
        if (head !== undefined && head.key === best) {
          winner ??= head;
          const step = iterators[i]!.next();
          heads[i] = step.done === true ? undefined : { key: step.value[0], value: step.value[1], committed: undefined };
        }
      }
      if (committedHead !== undefined && committedHead.key === best) {
        winner ??= committedHead;
        committedHead = await nextCommitted();
      }

      if (winner!.value !== null) {
        yield { key: winner!.committed?.key ?? fromInternalKey(best), value: winner!.value };
        if (++emitted >= query.limit) return;
      }
    }
  } finally {
    await cursor.close();
  }
}
