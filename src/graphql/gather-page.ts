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
 * (standbyPages), as a key read's are (gateway-context.ts); an owner that has not answered within
 * forwardHedgeMs is hedged as a key read's owner is (ownerPages).
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
import { groupByHost, isForwarded, notePeer, outlastsHedge, type GatewayContext } from './gateway-context.js';

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
  const scan: PageScan = { context, store, options, request, fingerprint };
  const [here, ...there] = await Promise.all([
    context.engine.page(local, pinned),
    ...[...byOwner].map(([owner, partitions]) => ownerPages(scan, owner, partitions)),
  ]);
  const answered: SourcedPage[] = [[null, here!], ...there.flat()];
  // One hop at most: a forwarded request's failures stand; so do they when the fallback throws
  // (the instance stopping under it, say), and the page is still served and its pin let go.
  const fallback = forwarded ? [] : await standbyPages(scan, answered).catch(() => []);
  if (answered.length === 1 && fallback.length === 0) return unpinIfDone(context, here!);
  const pages = [...answered.map(([, page]) => page), ...fallback];
  const merged = mergePages(pages, request);
  const outcomes = new Map<number, PartitionOutcome>(pages.flatMap((page) => page.partitions.map((o) => [o.partition, o] as const)));
  // A standby's answer replaces its owner's failure; a standby's own failure does not.
  for (const page of fallback) for (const o of page.partitions) if (o.failure !== undefined) outcomes.set(o.partition, failureBefore(pages, o.partition) ?? o);
  // In the order asked for, as a local page reports them.
  const page = { ...here!, entries: merged.entries, hasMore: merged.hasMore, partitions: requested.map((p) => outcomes.get(p)!) };
  return unpinIfDone(context, page);
}

/** A page with who answered it (null: this instance). */
type SourcedPage = readonly [string | null, ForwardedPage];

/** The page being gathered: what every owner and standby is asked for. */
interface PageScan {
  readonly context: GatewayContext;
  readonly store: StoreDescriptor;
  readonly options: QueryOptions;
  readonly request: PageRequest;
  readonly fingerprint: Bytes;
}

/**
 * The page of one owner's partitions. When the owner has not answered within forwardHedgeMs (a
 * silent owner would hold the page for its whole forward budget), and every one of its
 * partitions has a standby to ask (standbySource), the standbys are asked the same page too, and
 * the first of the two answers that serves every partition stands — one or the other whole,
 * never a mix, so no key comes twice; if neither serves them all, the owner's answer stands and
 * the fallback after it (standbyPages) takes over. The forward to the owner runs on either way,
 * so PeerHealth learns whether it answers. Not under requireActive or maxLag.
 */
async function ownerPages(scan: PageScan, owner: string, partitions: readonly number[]): Promise<SourcedPage[]> {
  const { context, store, options } = scan;
  const fromOwner = pageOfPeer(scan, owner, scan.request, partitions).then((page): SourcedPage[] => [[owner, page]]);
  if (options.requireActive === true || options.maxLag !== undefined || !(await outlastsHedge(context, fromOwner))) return fromOwner;
  const sources = hedgeSources(context, store, owner, partitions);
  if (sources === undefined) return fromOwner;
  const fromStandbys = readFromStandbys(scan, sources);
  const whole = (pages: SourcedPage[]): SourcedPage[] => {
    if (pages.some(([, page]) => page.partitions.some((o) => o.failure !== undefined))) throw new Error('not every partition served');
    return pages;
  };
  return Promise.any([fromOwner.then(whole), fromStandbys.then(whole)]).catch(() => fromOwner);
}

/**
 * The standby to ask for each of the owner's partitions, or undefined when one has none (only
 * the owner can answer it: the page waits for the owner anyway) — or when the provider fails
 * to say (an instance stopping under the page): the page, which may hold a pin here, is still
 * gathered and its pin let go.
 */
function hedgeSources(context: GatewayContext, store: StoreDescriptor, owner: string, partitions: readonly number[]): Map<number, StandbySource> | undefined {
  const sources = new Map<number, StandbySource>();
  try {
    for (const p of partitions) {
      const source = standbySource(context, store, p, owner);
      if (source === undefined || source === RESTORING_HERE) return undefined;
      sources.set(p, source);
    }
  } catch {
    return undefined;
  }
  return sources;
}

/** The first page's outcome for `partition` (the owner's, which a failed standby leaves standing). */
function failureBefore(pages: readonly ForwardedPage[], partition: number): PartitionOutcome | undefined {
  for (const page of pages) {
    const outcome = page.partitions.find((o) => o.partition === partition);
    if (outcome !== undefined) return outcome;
  }
  return undefined;
}

/** forwardPage of `request` (the scan's, or its unpinned form), noting in PeerHealth whether the peer answered at all. */
async function pageOfPeer({ context, store, options, fingerprint }: PageScan, url: string, request: PageRequest, partitions: readonly number[]): Promise<ForwardedPage> {
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
 * task not open yet). Each such partition goes to one standby, once (standbySource). These
 * pages are unpinned: the partitions are read at the state each page meets, as every partition
 * read elsewhere is. Under requireActive or maxLag (whose standbys were chosen up front) the
 * owner's failures stand. `pages`: each page with who answered it (null: here).
 */
async function standbyPages(scan: PageScan, pages: readonly SourcedPage[]): Promise<ForwardedPage[]> {
  const { context, store, options } = scan;
  if (options.requireActive === true || options.maxLag !== undefined) return [];
  const sources = new Map<number, StandbySource>();
  for (const [owner, page] of pages) {
    for (const outcome of page.partitions) {
      const reason = outcome.failure?.reason;
      if (reason !== 'FORWARD_FAILED' && reason !== 'NOT_ACTIVE' && reason !== 'NOT_PRESENT') continue;
      const source = standbySource(context, store, outcome.partition, owner);
      // (a page here read the standby here already)
      if (source !== undefined && !(source === STANDBY_HERE && owner === null)) sources.set(outcome.partition, source);
    }
  }
  return (await readFromStandbys(scan, sources)).map(([, page]) => page);
}

const STANDBY_HERE = Symbol('the standby kept here');
const RESTORING_HERE = Symbol('the task restoring here');
/** Where a partition's standby read goes: here, to a task restoring here, or to a standby host's URL. */
type StandbySource = typeof STANDBY_HERE | typeof RESTORING_HERE | string;

/**
 * Who answers a standby read of `partition` instead of `owner` (null: this instance): the
 * standby kept here; else the first standby host that is neither the owner, nor this instance,
 * nor failing just now; else — when the partition has no standby elsewhere at all — a task
 * restoring here, with its committed data flagged as a standby's; else nobody.
 */
function standbySource(context: GatewayContext, store: StoreDescriptor, partition: number, owner: string | null): StandbySource | undefined {
  const local = context.provider.localPartition(store.name, partition);
  if (local !== undefined && !local.active) return STANDBY_HERE;
  const standbys = context.provider.remoteStandbys?.(store.name, partition) ?? [];
  const self = context.provider.selfUrl?.();
  const host = standbys.find((url) => url !== owner && url !== self && context.options.peer.health?.isDown(url) !== true);
  if (host !== undefined) return host;
  return local !== undefined && standbys.length === 0 ? RESTORING_HERE : undefined;
}

/** The same page of `sources`' partitions, unpinned, read here or asked of each standby host at once. */
async function readFromStandbys(scan: PageScan, sources: ReadonlyMap<number, StandbySource>): Promise<SourcedPage[]> {
  const of = (source: StandbySource): number[] => [...sources].filter(([, s]) => s === source).map(([p]) => p);
  const here = [...of(STANDBY_HERE), ...of(RESTORING_HERE)];
  const byHost = groupByHost([...sources.keys()], (p) => {
    const source = sources.get(p);
    return typeof source === 'string' ? source : undefined;
  });
  const { snapshot: _snapshot, ...unpinned } = scan.request;
  const live: PageRequest = { ...unpinned, pin: false };
  return Promise.all([
    ...(here.length === 0 ? [] : [scan.context.engine.page({ ...scan.options, partitions: here, standbyFallback: true, restoringAsStandby: true }, live).then((page): SourcedPage => [null, page])]),
    ...[...byHost].map(async ([host, partitions]): Promise<SourcedPage> => [host, await pageOfPeer(scan, host, live, partitions)]),
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
