/**
 * Scatter-gather for range and prefix pages across instances (docs/architecture.md §5, Routing): the
 * partitions hosted here are read by the local engine, each other owner is asked for the same
 * page of its partitions (forward-page.ts, one POST per owner, all at once and alongside the
 * local read), and the pages are merged in key-byte order (mergePages), so the client sees
 * the page a single instance hosting every partition would have served.
 *
 * Which partitions go where is decided once, up front, from the provider: a partition is
 * either read here or asked of exactly one owner, never both, so a rebalance in between cannot
 * return a key twice (the owner then answers NOT_PRESENT for a partition it no longer has).
 * A request that was itself forwarded is answered from local partitions only: one hop at most.
 *
 * Pinned listings (docs/architecture.md §5): a client's listing pins the snapshot of the
 * partitions hosted here, which later pages with its cursors read again; the partitions of
 * other owners are read by them at the state each page meets, since a forwarded page never
 * pins (a pin at the owner would need its id in our cursors, and would move away with its
 * partition at the next rebalance anyway). A listing that ends on its first page keeps no pin.
 */
import { mergePages } from '../query/merge-pages.js';
import type { Page, PageRequest, PartitionOutcome, QueryOptions } from '../query/query-types.js';
import type { StoreDescriptor } from '../query/state-provider.js';
import type { Bytes } from '../store/types.js';
import { forwardPage, type ForwardedPage } from './forward-page.js';
import { isForwarded, type GatewayContext } from './gateway-context.js';

export async function gatherPage(
  context: GatewayContext,
  store: StoreDescriptor,
  options: QueryOptions,
  request: PageRequest,
  fingerprint: Bytes,
): Promise<ForwardedPage> {
  const requested = options.partitions ?? Array.from({ length: store.partitions }, (_, i) => i);
  const forwarded = isForwarded(context);
  const byOwner = forwarded ? new Map<string, number[]>() : remotePartitions(context, store, options, requested);
  const pinned: PageRequest = { ...request, pin: !forwarded };
  // Every partition left here is active here, or has no other answer than the standby kept here
  // (no owner known, the owner failed just now, or within maxLag), or this request was forwarded.
  if (byOwner.size === 0) return unpinIfDone(context, await context.engine.page({ ...options, standbyFallback: true }, pinned));
  const remote = new Set([...byOwner.values()].flat());
  const local = { ...options, partitions: requested.filter((p) => !remote.has(p)), standbyFallback: true };
  const [here, ...there] = await Promise.all([
    context.engine.page(local, pinned),
    ...[...byOwner].map(async ([owner, partitions]) => {
      const page = await forwardPage(owner, store, options, request, fingerprint, partitions, context.options.peer);
      if (page.partitions.every((p) => p.failure?.reason === 'FORWARD_FAILED')) context.options.peer.health?.markDown(owner);
      else context.options.peer.health?.markUp(owner);
      return page;
    }),
  ]);
  const pages = [here!, ...there];
  const merged = mergePages(pages, request);
  const outcomes = new Map<number, PartitionOutcome>(pages.flatMap((page) => page.partitions.map((o) => [o.partition, o] as const)));
  // In the order asked for, as a local page reports them.
  const page = { ...here!, entries: merged.entries, hasMore: merged.hasMore, partitions: requested.map((p) => outcomes.get(p)!) };
  return unpinIfDone(context, page);
}

/** A listing whose first page is its only one needs no snapshot: its cursors then name none. */
function unpinIfDone(context: GatewayContext, page: Page): ForwardedPage {
  if (page.snapshot === undefined || !page.pinnedNow || page.hasMore) return page;
  context.engine.releaseSnapshot(page.snapshot);
  const { snapshot: _released, pinnedNow: _pinned, ...rest } = page;
  return rest;
}

/**
 * peer → the requested partitions it is asked for: each partition's owner, for those not active
 * here; a standby (KIP-535) where the owner failed a forward just now (PeerHealth) — the one
 * kept here (the partition stays local), else the first standby host not failing too — or where
 * the caller's maxLag lets the standby kept here answer.
 */
function remotePartitions(context: GatewayContext, store: StoreDescriptor, options: QueryOptions, requested: readonly number[]): Map<string, number[]> {
  const byOwner = new Map<string, number[]>();
  const health = context.options.peer.health;
  const down = (url: string): boolean => health?.isDown(url) === true;
  for (const partition of requested) {
    if (!Number.isInteger(partition) || partition < 0 || partition >= store.partitions) continue; // DOES_NOT_EXIST, locally
    const here = context.provider.localPartition(store.name, partition);
    if (here?.active === true) continue;
    const withinLag = here !== undefined && options.maxLag !== undefined && (here.lag?.offsets ?? 0) <= options.maxLag;
    if (withinLag) continue;
    let owner = context.provider.remoteOwner?.(store.name, partition);
    if (owner !== undefined && down(owner)) {
      if (here !== undefined) continue;
      owner = context.provider.remoteStandbys?.(store.name, partition).find((url) => !down(url)) ?? owner;
    }
    if (owner === undefined) continue; // NOT_PRESENT without an owner, locally
    let list = byOwner.get(owner);
    if (list === undefined) byOwner.set(owner, (list = []));
    list.push(partition);
  }
  return byOwner;
}
