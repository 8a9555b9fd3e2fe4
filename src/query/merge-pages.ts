/**
 * Merges pages of the same scan, read from disjoint sets of partitions (this instance's and
 * each remote owner's), into the page the whole set would have given.
 *
 * Why this is exact: each source page holds the first `size` entries after the cursor in the
 * direction of travel, for its own partitions. The first `size` entries of the union are
 * therefore all among the sources' pages: a source whose page was cut (hasMore) contributes at
 * most `size` entries, all ahead of the ones it left out. So sorting the union by key bytes and
 * keeping `size` is the global page, and more exists beyond it when something was left over or
 * some source was itself cut. Keys are compared as serialized bytes, as mergeSorted does for a
 * local scan, so the order is the stores' order whatever the serde.
 */
import type { Bytes } from '../store/types.js';
import type { PageRequest } from './query-types.js';
import { Buffer } from 'node:buffer';

export interface PageSource<E extends { readonly key: Bytes }> {
  /** In the request's `order`, whatever its direction (as QueryEngine.page returns them). */
  readonly entries: readonly E[];
  /** The source has entries beyond its page in the direction of travel. */
  readonly hasMore: boolean;
}

export function mergePages<E extends { readonly key: Bytes }>(
  sources: ReadonlyArray<PageSource<E>>,
  request: Pick<PageRequest, 'order' | 'direction' | 'size'>,
): PageSource<E> {
  if (sources.length === 1) return sources[0]!;
  const sign = request.order === 'desc' ? -1 : 1;
  // Array.prototype.sort is stable: equal keys (which correct routing never produces) keep
  // the sources' order, as mergeSorted breaks ties by source index.
  const all = sources.flatMap((source) => source.entries).sort((a, b) => sign * Buffer.compare(a.key, b.key));
  const cut = all.length > request.size;
  // Forward keeps the first `size` in `order`; backward the last `size` (those nearest its cursor).
  const entries = !cut ? all : request.direction === 'forward' ? all.slice(0, request.size) : all.slice(all.length - request.size);
  return { entries, hasMore: cut || sources.some((source) => source.hasMore) };
}
