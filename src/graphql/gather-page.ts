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
 * The partitions an owner could not serve just now are read in the same page from a standby
 * (standbyPages), as a key read's are (gateway-context.ts).
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
import { groupByHost, isForwarded, notePeer, type GatewayContext } from './gateway-context.js';

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
  const remote = new Set([...byOwner.values()].flat());
  const local = { ...options, partitions: requested.filter((p) => !remote.has(p)), standbyFallback: true };
  const owners = [...byOwner];
  const [here, ...there] = await Promise.all([
    context.engine.page(local, pinned),
    ...owners.map(([owner, partitions]) => pageOfPeer(context, owner, store, options, request, fingerprint, partitions)),
  ]);
  // One hop at most: a forwarded request's failures stand; so do they when the fallback throws
  // (the instance stopping under it, say), and the page is still served and its pin let go.
  const fallback = forwarded ? [] : await standbyPages(context, store, options, request, fingerprint, [[null, here!], ...there.map((page, k) => [owners[k]![0], page] as const)]).catch(() => []);
  if (there.length === 0 && fallback.length === 0) return unpinIfDone(context, here!);
  const pages = [here!, ...there, ...fallback];
  const merged = mergePages(pages, request);
  const outcomes = new Map<number, PartitionOutcome>(pages.flatMap((page) => page.partitions.map((o) => [o.partition, o] as const)));
  // A standby's answer replaces its owner's failure; a standby's own failure does not.
  for (const page of fallback) for (const o of page.partitions) if (o.failure !== undefined) outcomes.set(o.partition, failureBefore(pages, o.partition) ?? o);
  // In the order asked for, as a local page reports them.
  const page = { ...here!, entries: merged.entries, hasMore: merged.hasMore, partitions: requested.map((p) => outcomes.get(p)!) };
  return unpinIfDone(context, page);
}

/** The first page's outcome for `partition` (the owner's, which a failed standby leaves standing). */
function failureBefore(pages: readonly ForwardedPage[], partition: number): PartitionOutcome | undefined {
  for (const page of pages) {
    const outcome = page.partitions.find((o) => o.partition === partition);
    if (outcome !== undefined) return outcome;
  }
  return undefined;
}

/** forwardPage, noting in PeerHealth whether the peer answered at all. */
async function pageOfPeer(
  context: GatewayContext,
  url: string,
  store: StoreDescriptor,
  options: QueryOptions,
  request: PageRequest,
  fingerprint: Bytes,
  partitions: readonly number[],
): Promise<ForwardedPage> {
  const page = await forwardPage(url, store, options, request, fingerprint, partitions, context.options.peer);
  notePeer(context, url, page.partitions.map((p) => p.failure));
  return page;
}

/**
 * The same page of the partitions their owner could not serve just now, asked of a standby
 * (KIP-535), as a key read's fallback does (gateway-context.ts): an owner elsewhere that failed
 * (FORWARD_FAILED), whose task restores (NOT_ACTIVE), or that no longer or not yet hosts the
 * partition (NOT_PRESENT: the map here is a rebalance behind) — and here, a task still restoring
 * after a move (NOT_ACTIVE) or a partition with no owner known (NOT_PRESENT: assigned here, its
 * task not open yet). Each such partition goes to one standby, once: the one kept here, else the
 * first standby host that is neither its owner nor failing just now, else — when the partition
 * has no standby elsewhere at all — a task restoring here answers with its committed data,
 * flagged as a standby's. These pages are
 * unpinned: the partitions are read at the state each page meets, as every partition read
 * elsewhere is. Under requireActive or maxLag (whose standbys were chosen up front) the owner's
 * failures stand. `pages`: each page with its owner (null: here).
 */
async function standbyPages(
  context: GatewayContext,
  store: StoreDescriptor,
  options: QueryOptions,
  request: PageRequest,
  fingerprint: Bytes,
  pages: ReadonlyArray<readonly [string | null, ForwardedPage]>,
): Promise<ForwardedPage[]> {
  if (options.requireActive === true || options.maxLag !== undefined) return [];
  const health = context.options.peer.health;
  const self = context.provider.selfUrl?.();
  const here: number[] = [];
  // partition → the standby host asked for it
  const hosts = new Map<number, string>();
  for (const [owner, page] of pages) {
    for (const outcome of page.partitions) {
      const reason = outcome.failure?.reason;
      if (reason !== 'FORWARD_FAILED' && reason !== 'NOT_ACTIVE' && reason !== 'NOT_PRESENT') continue;
      const p = outcome.partition;
      const local = context.provider.localPartition(store.name, p);
      if (local !== undefined && !local.active) {
        if (owner !== null) here.push(p); // (a page here read the standby here already)
        continue;
      }
      const standbys = context.provider.remoteStandbys?.(store.name, p) ?? [];
      const host = standbys.find((url) => url !== owner && url !== self && health?.isDown(url) !== true);
      if (host !== undefined) hosts.set(p, host);
      else if (local !== undefined && standbys.length === 0) here.push(p); // the task restoring here, with no standby elsewhere
    }
  }
  const byHost = groupByHost([...hosts.keys()], (p) => hosts.get(p));
  const { snapshot: _snapshot, ...unpinned } = request;
  const live: PageRequest = { ...unpinned, pin: false };
  return Promise.all([
    ...(here.length === 0 ? [] : [context.engine.page({ ...options, partitions: here, standbyFallback: true, restoringAsStandby: true }, live)]),
    ...[...byHost].map(([host, partitions]) => pageOfPeer(context, host, store, options, live, fingerprint, partitions)),
  ]);
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
  const owners = new Map<number, string>();
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
    owners.set(partition, owner);
  }
  return groupByHost([...owners.keys()], (p) => owners.get(p));
}
