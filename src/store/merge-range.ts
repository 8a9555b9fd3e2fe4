/**
 * Range reads over the layers of a view: record-cache dirty entries over the write batch
 * over a batch whose commit is in flight over the committed store. A key's value comes from
 * the highest layer that has it; a tombstone (null) there masks the lower layers, for ranges
 * as for single keys. (Kafka Streams' CachingKeyValueStore merges only cache and store, with
 * MergedSortedCacheKeyValueBytesStoreIterator; KIP-892 adds the transaction buffer the same
 * way. iqgate always merges the cache in, also for ranges.)
 *
 * The merge works chunk by chunk: it is synchronous except when the committed cursor needs
 * its next chunk, and the iterator hands out entries of a ready chunk without an async
 * generator's per-entry machinery (the committed scan is the hot path of range queries).
 */
import { isAboveUpper, isBelowLower, type RangeQuery } from './key-bounds.js';
import { fromInternalKey, toInternalKey, type SortedMap } from './sorted-map.js';
import type { CommittedCursor } from './committed-store.js';
import type { KeyValue } from './types.js';
import { Buffer } from 'node:buffer';

export type MemoryLayer = SortedMap<Buffer | null>;

const OUTPUT_CHUNK = 1000;

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

/** The current entry of one memory layer's iterator. */
interface Head {
  key: string;
  value: Buffer | null;
}

/** Produces the next chunk of output entries, or undefined at the end. */
type ChunkSource = () => Promise<readonly KeyValue[] | undefined>;

/**
 * An async iterator over chunks: entries of a ready chunk come out as already-resolved
 * promises. `onClose` runs exactly once, at the end, on `return()` (early exit of
 * `for await`), or after an error.
 */
class ChunkIterator implements AsyncIterableIterator<KeyValue> {
  private chunk: readonly KeyValue[] = [];
  private index = 0;
  private finished = false;
  private filling: Promise<IteratorResult<KeyValue, undefined>> | undefined;

  constructor(
    private readonly source: ChunkSource,
    private readonly onClose: () => Promise<void>,
  ) {}

  [Symbol.asyncIterator](): AsyncIterableIterator<KeyValue> {
    return this;
  }

  next(): Promise<IteratorResult<KeyValue, undefined>> {
    // A caller may ask again before a fill resolved (the protocol allows it; for await does not).
    if (this.filling !== undefined) return this.filling.then(() => this.next());
    if (this.index < this.chunk.length) return Promise.resolve({ done: false, value: this.chunk[this.index++]! });
    if (this.finished) return Promise.resolve({ done: true, value: undefined });
    const filling = this.fill();
    this.filling = filling;
    void filling.then(
      () => (this.filling = undefined),
      () => (this.filling = undefined),
    );
    return filling;
  }

  private async fill(): Promise<IteratorResult<KeyValue, undefined>> {
    let chunk: readonly KeyValue[] | undefined;
    try {
      chunk = await this.source();
    } catch (error) {
      // return() came while the chunk was read (and closed the cursor under it): done, not an error.
      if (this.finished) return { done: true, value: undefined };
      await this.finish();
      throw error;
    }
    // return() came while the chunk was read: the cursor is closed, nothing more comes out.
    if (this.finished) return { done: true, value: undefined };
    if (chunk === undefined || chunk.length === 0) {
      await this.finish();
      return { done: true, value: undefined };
    }
    this.chunk = chunk;
    this.index = 1;
    return { done: false, value: chunk[0]! };
  }

  private async finish(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    this.chunk = [];
    await this.onClose();
  }

  async return(): Promise<IteratorResult<KeyValue, undefined>> {
    await this.finish();
    return { done: true, value: undefined };
  }
}

/**
 * Merges `layers` (highest priority first) over the committed cursor. The cursor is opened
 * when the first entry is asked for and closed on every exit path (end, early return, error).
 */
export function mergeRange(
  layers: readonly MemoryLayer[],
  openCursor: (query: RangeQuery, firstChunk?: number) => CommittedCursor,
  query: RangeQuery,
): AsyncIterableIterator<KeyValue> {
  let cursor: CommittedCursor | undefined;
  let source: ChunkSource | undefined;
  const start: ChunkSource = () => {
    if (query.limit === 0) return Promise.resolve(undefined);
    const iterators = layers.map((layer) => layerEntries(layer, query));
    const heads = iterators.map(nextHead);
    if (heads.every((head) => head === undefined)) {
      // Nothing in memory within the bounds: the committed chunks are the output, and the
      // committed cursor applies the limit.
      const opened = (cursor = openCursor(query, query.expected));
      source = () => opened.next();
    } else {
      // Tombstones may mask committed entries, so the committed cursor runs unlimited; it is
      // read lazily, and its first chunk is sized for the limit.
      const opened = (cursor = query.limit === Infinity ? openCursor(query, query.expected) : openCursor({ ...query, limit: Infinity }, Math.min(query.expected ?? query.limit, query.limit) + 16));
      source = mergedChunks(iterators, heads, opened, query);
    }
    return source();
  };
  return new ChunkIterator(
    () => (source ?? start)(),
    async () => {
      await cursor?.close();
    },
  );
}

function nextHead(iterator: Iterator<[string, Buffer | null]>): Head | undefined {
  const step = iterator.next();
  return step.done === true ? undefined : { key: step.value[0], value: step.value[1] };
}

function mergedChunks(
  iterators: Array<Iterator<[string, Buffer | null]>>,
  heads: Array<Head | undefined>,
  cursor: CommittedCursor,
  query: RangeQuery,
): ChunkSource {
  const reverse = query.reverse;
  let committedChunk: readonly KeyValue[] | undefined;
  let committedIndex = 0;
  let committedDone = false;
  // The committed head, in variables rather than an object per entry.
  let committedKey: string | undefined;
  let committedEntry: KeyValue | undefined;
  let started = false;
  let remaining = query.limit;

  const nextCommitted = async (): Promise<void> => {
    while (!committedDone && (committedChunk === undefined || committedIndex >= committedChunk.length)) {
      committedChunk = await cursor.next();
      committedIndex = 0;
      if (committedChunk === undefined) committedDone = true;
    }
    if (committedDone) {
      committedKey = committedEntry = undefined;
      return;
    }
    committedEntry = committedChunk![committedIndex++]!;
    committedKey = toInternalKey(committedEntry.key);
  };

  /** Moves layer i on; its Head object is reused (no allocation per entry). */
  const advance = (i: number, head: Head): void => {
    const step = iterators[i]!.next();
    if (step.done === true) {
      heads[i] = undefined;
    } else {
      head.key = step.value[0];
      head.value = step.value[1];
    }
  };

  return async () => {
    if (!started) {
      started = true;
      await nextCommitted();
    }
    const out: KeyValue[] = [];
    while (remaining > 0 && out.length < OUTPUT_CHUNK) {
      // The next key in query order among all heads.
      let best: string | undefined = committedKey;
      for (const head of heads) {
        if (head !== undefined && (best === undefined || (reverse ? head.key > best : head.key < best))) best = head.key;
      }
      if (best === undefined) break;

      // The highest layer holding `best` decides; every layer holding it moves on.
      let found = false;
      let value: Buffer | null = null;
      let committed: KeyValue | undefined;
      for (let i = 0; i < heads.length; i++) {
        const head = heads[i];
        if (head !== undefined && head.key === best) {
          if (!found) {
            found = true;
            value = head.value;
          }
          advance(i, head);
        }
      }
      if (committedKey === best) {
        if (!found) {
          value = committedEntry!.value;
          committed = committedEntry;
        }
        await nextCommitted();
      }
      if (value !== null) {
        out.push(committed ?? { key: fromInternalKey(best), value });
        remaining--;
      }
    }
    return out.length === 0 ? undefined : out;
  };
}
