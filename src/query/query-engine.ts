/**
 * The IQv2 engine: runs key, multi-key, range and prefix queries against the store partitions
 * hosted here and answers per partition, as Kafka Streams' KafkaStreams#query does, with the
 * Position each partition was served at or a typed failure. Request-level problems (unknown
 * store, instance not running) throw IqgateErrors.
 *
 * Every partition is read through one ReadView (one consistent point in time). A query first
 * settles every partition's admission (hosted? active? up to the bound, waiting if allowed),
 * then takes the views of all admitted partitions in one synchronous step, so a multi-partition
 * read is as close to one instant as the store allows.
 *
 * A listing's first page may keep its views as the listing's snapshot (pinned-snapshots.ts):
 * later pages whose cursor names it read those views again instead of new ones.
 */
import { IqgateError, isIqgateError } from '../errors.js';
import type { Position } from '../store/position.js';
import type { Bytes, KeyValue, KeyValueStorePartition, Order, ReadView } from '../store/types.js';
import { mergeSorted } from './merge-sorted.js';
import { scanBounds, startsWith } from './scan-bounds.js';
import { partitionForKey } from '../murmur2.js';
import { isPermitted, waitForBound } from './position-bound.js';
import { scanFingerprint } from './cursor.js';
import { DEFAULT_CURSOR_SNAPSHOT_TTL_MS, DEFAULT_MAX_PINNED_SNAPSHOTS, PinnedSnapshots, type Pin, type PinnedPartition } from './pinned-snapshots.js';
import {
  FAILURE_REASONS,
  type KeyLookup,
  type MergedEntry,
  type MultiKeyResult,
  type Page,
  type PageRequest,
  type PartitionFailure,
  type PartitionOutcome,
  type QueryOptions,
  type QueryType,
  type ReplicaLag,
} from './query-types.js';
import { isServing, type LocalStorePartition, type StateProvider, type StoreDescriptor } from './state-provider.js';
import { performance } from 'node:perf_hooks';

type Admission =
  | { readonly ok: true; readonly partition: number; readonly local: LocalStorePartition; readonly info: string[] }
  | { readonly ok: false; readonly partition: number; readonly failure: PartitionFailure; readonly info: string[] };

interface Opened {
  readonly partition: number;
  readonly view: ReadView;
  readonly info: string[];
  /** Who answers: a standby (with its lag) or the active task; absent for a view of a pinned snapshot. */
  readonly served?: Served;
  /** The store partition the view was taken from; absent for a view of the listing's pinned snapshot. */
  readonly store?: KeyValueStorePartition;
}

interface Served {
  readonly standby?: boolean;
  readonly lag?: ReplicaLag;
  readonly servedBy?: string;
}

type OpenedOrFailed = Opened | { partition: number; failure: PartitionFailure; info: string[] };

export interface QueryEngineOptions {
  /**
   * Sees every partition read failure in full before clients get the masked
   * STORE_EXCEPTION reason (the storage driver's text never leaves the server): log it here.
   */
  readonly onPartitionError?: (error: unknown, context: { readonly partition: number }) => void;
  /** How long a listing's snapshot is held after its first page, in ms; 0: listings are never pinned. Default 30 000. */
  readonly cursorSnapshotTtlMs?: number;
  /** Listing snapshots held at most; the oldest goes first. Default 1000. */
  readonly maxPinnedSnapshots?: number;
  /** The pins' clock in ms (monotonic), for tests. Default performance.now. */
  readonly now?: () => number;
}

export class QueryEngine {
  private readonly pins: PinnedSnapshots;

  constructor(
    private readonly provider: StateProvider,
    private readonly options: QueryEngineOptions = {},
  ) {
    this.pins = new PinnedSnapshots({
      ttlMs: options.cursorSnapshotTtlMs ?? DEFAULT_CURSOR_SNAPSHOT_TTL_MS,
      maxPinned: options.maxPinnedSnapshots ?? DEFAULT_MAX_PINNED_SNAPSHOTS,
      ...(options.now === undefined ? {} : { now: options.now }),
    });
  }

  /** Listing snapshots held now (the iqgate_pinned_snapshots gauge). */
  pinnedSnapshots(): number {
    return this.pins.size;
  }

  /** Lets a listing's snapshot go (one that `page` pinned for a listing that turned out to end there). */
  releaseSnapshot(id: Bytes): void {
    this.pins.releaseId(id);
  }

  /** Releases every pinned snapshot and pins no more; the engine still answers unpinned reads. */
  close(): Promise<void> {
    return this.pins.close();
  }

  /** The store's descriptor; throws NOT_STARTED or STORE_NOT_FOUND. */
  store(name: string): StoreDescriptor {
    const state = this.provider.instanceState();
    if (!isServing(state)) {
      throw new IqgateError('NOT_STARTED', `The instance is ${state}; queries are served once it is RUNNING.`, { retriable: true });
    }
    const store = this.provider.store(name);
    if (store === undefined) throw new IqgateError('STORE_NOT_FOUND', `No store named "${name}".`, { details: { store: name } });
    return store;
  }

  /** The partition a key lives in, by Kafka's default partitioner. */
  partitionOf(store: StoreDescriptor, key: Bytes): number {
    return partitionForKey(key, store.partitions);
  }

  /** Looks up keys; each touches only its own partition, all keys of a partition in one getMany. */
  async getMany(options: QueryOptions, keys: readonly Bytes[]): Promise<MultiKeyResult> {
    const store = this.store(options.store);
    const routed = keys.map((key) => this.partitionOf(store, key));
    const byPartition = new Map<number, number[]>();
    routed.forEach((partition, index) => {
      if (options.partitions !== undefined && !options.partitions.includes(partition)) return;
      let list = byPartition.get(partition);
      if (list === undefined) byPartition.set(partition, (list = []));
      list.push(index);
    });
    const admissions = await this.admitAll(store, options, [...byPartition.keys()], 'key');
    const opened = this.openAll(options, admissions);
    const lookups: Array<KeyLookup | undefined> = new Array(keys.length);
    const outcomes: PartitionOutcome[] = [];
    const excluded: PartitionFailure = { reason: 'NOT_PRESENT', message: 'The partition was excluded by the partitions argument.' };

    await Promise.all(
      opened.map(async (entry) => {
        const indexes = byPartition.get(entry.partition)!;
        if ('failure' in entry) {
          outcomes.push(outcome(entry.partition, options, entry.info, undefined, entry.failure));
          for (const i of indexes) lookups[i] = { key: keys[i]!, partition: entry.partition, failure: entry.failure };
          return;
        }
        const started = performance.now();
        try {
          const values = await entry.view.getMany(indexes.map((i) => keys[i]!));
          entry.info.push(`getMany of ${indexes.length} key(s) in ${elapsed(started)}`);
          indexes.forEach((i, j) => {
            const value = values[j];
            lookups[i] = value === undefined ? { key: keys[i]!, partition: entry.partition } : { key: keys[i]!, partition: entry.partition, value };
          });
          outcomes.push(outcome(entry.partition, options, entry.info, entry.view.position, undefined, entry.served));
        } catch (error) {
          const failure = this.storeException(error, entry.partition);
          for (const i of indexes) lookups[i] = { key: keys[i]!, partition: entry.partition, failure };
          outcomes.push(outcome(entry.partition, options, entry.info, undefined, failure));
        } finally {
          await entry.view.close();
        }
      }),
    );
    keys.forEach((key, i) => {
      lookups[i] ??= { key, partition: routed[i]!, failure: excluded };
    });
    outcomes.sort((a, b) => a.partition - b.partition);
    return { lookups: lookups as KeyLookup[], partitions: outcomes };
  }

  /**
   * One page of a range or prefix scan, merged across partitions in key-byte order. With
   * `request.snapshot`, the partitions the snapshot holds are read from it (the others as
   * usual); with `request.pin` and no snapshot, the page's views become the listing's snapshot.
   */
  async page(options: QueryOptions, request: PageRequest): Promise<Page> {
    const store = this.store(options.store);
    const partitions = options.partitions ?? Array.from({ length: store.partitions }, (_, i) => i);
    if (request.snapshot !== undefined && !this.pins.pinnedHere(request.snapshot)) {
      // Pinned by another instance (or an earlier run of this one): read at the current state, as
      // an unpinned listing is, and keep naming that snapshot, so the listing's pages that go back
      // to the instance holding it read it again (docs/architecture.md §5, Pinned pages).
      const { snapshot, pin: _pin, ...unpinned } = request;
      const page = await this.readPage(store, options, unpinned, partitions, undefined);
      return { ...page, snapshot, pinnedNow: false };
    }
    const pin = request.snapshot === undefined ? undefined : this.acquirePin(store, options, request, partitions);
    try {
      return await this.readPage(store, options, request, partitions, pin);
    } finally {
      if (pin !== undefined) this.pins.done(pin);
    }
  }

  private async readPage(store: StoreDescriptor, options: QueryOptions, request: PageRequest, partitions: readonly number[], pin: Pin | undefined): Promise<Page> {
    const live = pin === undefined ? partitions : partitions.filter((p) => !pin.partitions.has(p));
    const admissions = await this.admitAll(store, options, live, request.scan.type);
    const openedLive = this.openAll(options, admissions);
    // In the order asked for: each partition from the snapshot, or the next live one.
    let next = 0;
    const opened = pin === undefined ? openedLive : partitions.map((p) => {
      const pinned = pin.partitions.get(p);
      return pinned === undefined ? openedLive[next++]! : this.openPinned(options, p, pinned.view);
    });
    // Reading backward means iterating against the requested order, then reversing the page.
    const iterationOrder: Order = request.direction === 'forward' ? request.order : request.order === 'asc' ? 'desc' : 'asc';
    const bounds = scanBounds(request.scan, iterationOrder, request.cursorKey);
    const failures = new Map<number, PartitionFailure>();
    const views = opened.filter((entry): entry is Opened => !('failure' in entry));
    const liveViews = views.filter((entry) => entry.store !== undefined);
    const iterators: Array<AsyncIterableIterator<KeyValue>> = [];
    const entries: MergedEntry[] = [];
    let hasMore = false;
    let read = false;
    const started = performance.now();
    try {
      if (bounds !== 'empty') {
        // Over many partitions a page takes about its size divided among them: each partition's
        // first read from LevelDB is sized so (its later reads grow), not for the whole page —
        // a page of 100 over 32 partitions read 3,264 entries to hand out 100 (audit, 2026-12-06).
        const expected = views.length > 1 ? Math.ceil(request.size / views.length) + 2 : undefined;
        const sources = views.map((entry) => {
          const iterator = entry.view.range({ ...bounds.range, order: iterationOrder, limit: request.size + 2, ...(expected === undefined ? {} : { expected }) });
          iterators.push(iterator);
          const tagged = tag(iterator, entry.partition);
          return { iterator: tagged, onError: (error: unknown) => failures.set(entry.partition, this.storeException(error, entry.partition)) };
        });
        const keep = (kv: MergedEntry): boolean =>
          (bounds.exclude === undefined || !kv.key.equals(bounds.exclude)) && (bounds.prefix === undefined || startsWith(kv.key, bounds.prefix));
        for await (const entry of mergeSorted(sources, (e) => e.key, iterationOrder === 'desc')) {
          if (!keep(entry)) continue;
          if (entries.length === request.size) {
            hasMore = true;
            break;
          }
          entries.push(entry);
        }
      }
      read = true;
    } finally {
      await Promise.all(iterators.map((it) => it.return?.()));
      // A pinned snapshot's views stay open for the listing's next pages; the live ones close
      // unless they become its snapshot now.
      if (!read) await Promise.all(liveViews.map((entry) => entry.view.close()));
    }
    let snapshot = pin?.id;
    let pinnedNow = false;
    // A page of none (first: 0) has no cursor to name a snapshot: nothing to keep for it.
    if (pin === undefined && request.pin === true && this.pins.enabled && request.size > 0) {
      snapshot = this.pinViews(store, options, request, liveViews, failures);
      pinnedNow = snapshot !== undefined;
    } else {
      await Promise.all(liveViews.map((entry) => entry.view.close()));
    }
    if (request.direction === 'backward') entries.reverse();
    const outcomes = opened.map((entry) => {
      if ('failure' in entry) return outcome(entry.partition, options, entry.info, undefined, entry.failure);
      const failure = failures.get(entry.partition);
      entry.info.push(`merged scan ${failure === undefined ? 'completed' : 'failed'} in ${elapsed(started)}`);
      return outcome(entry.partition, options, entry.info, failure === undefined ? entry.view.position : undefined, failure, entry.served);
    });
    return { entries, hasMore, partitions: outcomes, ...(snapshot === undefined ? {} : { snapshot, pinnedNow }) };
  }

  /** Hands the views of the partitions that read well to the pins; the rest close. */
  private pinViews(store: StoreDescriptor, options: QueryOptions, request: PageRequest, views: readonly Opened[], failures: ReadonlyMap<number, PartitionFailure>): Bytes | undefined {
    const held = new Map<number, PinnedPartition>();
    for (const entry of views) {
      if (failures.has(entry.partition) || held.has(entry.partition)) void entry.view.close().catch(() => {});
      else held.set(entry.partition, { store: entry.store!, view: entry.view });
    }
    return this.pins.pin(scanFingerprint(store.name, request.scan, request.order), options.readCommitted, held);
  }

  /**
   * The pin the cursor names, held for this read: STALE_CURSOR when it is gone (or one of the
   * requested partitions it holds closed or moved since), INVALID_CURSOR when it belongs to
   * another listing or isolation level.
   */
  private acquirePin(store: StoreDescriptor, options: QueryOptions, request: PageRequest, partitions: readonly number[]): Pin {
    const pin = this.pins.acquire(request.snapshot!);
    if (pin === undefined) {
      throw new IqgateError(
        'STALE_CURSOR',
        'The snapshot this listing was read from is no longer held here (it expired or was evicted); start the listing again without a cursor.',
      );
    }
    try {
      if (!pin.fingerprint.equals(scanFingerprint(store.name, request.scan, request.order))) {
        throw new IqgateError('INVALID_CURSOR', 'The cursor names the snapshot of another listing.');
      }
      if (pin.readCommitted !== options.readCommitted) {
        throw new IqgateError('INVALID_CURSOR', `The cursor's listing reads the ${pin.readCommitted ? 'committed' : 'uncommitted'} view: pass readCommitted: ${pin.readCommitted}.`);
      }
      for (const [partition, pinned] of pin.partitions) {
        if (!partitions.includes(partition) || this.hostedStore(store.name, partition) === pinned.store) continue;
        this.pins.releaseId(pin.id);
        throw new IqgateError('STALE_CURSOR', `Partition ${partition} of ${store.name} closed or moved since the listing began; start the listing again without a cursor.`, {
          details: { store: store.name, partition },
        });
      }
    } catch (error) {
      this.pins.done(pin);
      throw error;
    }
    return pin;
  }

  /** The store partition hosted here now, if any (a closed task's is not). */
  private hostedStore(storeName: string, partition: number): KeyValueStorePartition | undefined {
    try {
      return this.provider.localPartition(storeName, partition)?.store;
    } catch {
      return undefined;
    }
  }

  /** A pinned view, unless it cannot satisfy the bound: a snapshot does not move, so it never waits. */
  private openPinned(options: QueryOptions, partition: number, view: ReadView): OpenedOrFailed {
    const info = [`${options.readCommitted ? 'committed' : 'uncommitted'} view of the listing's pinned snapshot`];
    if (options.positionBound !== undefined && !isPermitted(view.position, options.positionBound, partition)) {
      return { partition, info, failure: { reason: 'NOT_UP_TO_BOUND', message: `The listing's snapshot of partition ${partition} is below the position bound (a pinned page does not wait).` } };
    }
    return { partition, view, info };
  }

  /** Settles which partitions may answer: the checks of IQv2, then the (possibly waiting) bound. */
  private admitAll(store: StoreDescriptor, options: QueryOptions, partitions: readonly number[], type: QueryType): Promise<Admission[]> {
    return Promise.all(partitions.map((partition) => this.admit(store, options, partition, type)));
  }

  private async admit(store: StoreDescriptor, options: QueryOptions, partition: number, type: QueryType): Promise<Admission> {
    const info: string[] = [];
    const fail = (reason: PartitionFailure['reason'], message: string): Admission => ({ ok: false, partition, failure: { reason, message }, info });
    if (!Number.isInteger(partition) || partition < 0 || partition >= store.partitions) {
      return fail('DOES_NOT_EXIST', `Store ${store.name} has partitions 0..${store.partitions - 1}.`);
    }
    const local = this.provider.localPartition(store.name, partition);
    if (local === undefined || !local.active) {
      // Not active here: the owner answers, or a standby (KIP-535) — this one first when the
      // caller bounds the lag and it is within the bound, or when the owner cannot answer.
      const owner = this.provider.remoteOwner?.(store.name, partition);
      const lagOk = local?.lag === undefined || options.maxLag === undefined || local.lag.offsets <= options.maxLag;
      const serveHere = local !== undefined && lagOk && (options.maxLag !== undefined || options.standbyFallback === true || owner === undefined);
      if (local === undefined || !serveHere) {
        const standbys = this.provider.remoteStandbys?.(store.name, partition) ?? [];
        const elsewhere = { ...(standbys.length === 0 ? {} : { standbys }), ...(local !== undefined && lagOk ? { standbyHere: true } : {}) };
        if (owner !== undefined) {
          return { ok: false, partition, failure: { reason: 'NOT_PRESENT', message: `Partition ${partition} of ${store.name} is hosted by ${owner}.`, owner, ...elsewhere }, info };
        }
        if (local !== undefined) {
          return { ok: false, partition, failure: { reason: 'NOT_UP_TO_BOUND', message: `The standby of partition ${partition} here is ${local.lag!.offsets} changelog offsets behind, more than maxLag ${options.maxLag!}.`, ...elsewhere }, info };
        }
        return { ok: false, partition, failure: { reason: 'NOT_PRESENT', message: `Partition ${partition} of ${store.name} is not hosted on this instance.`, ...elsewhere }, info };
      }
    }
    if (type !== 'key' && type !== 'range' && type !== 'prefix') return fail('UNKNOWN_QUERY_TYPE', `Unsupported query type ${String(type)}.`);
    if (options.requireActive && !local.active) return fail('NOT_ACTIVE', `Partition ${partition} is a standby here.`);
    // RESTORING (catching up) and SUSPENDED (e.g. rolled back while the broker is away) tasks keep
    // their stores open with the last committed state: served on request, as IQv2's stale stores.
    const staleState = local.taskState === 'RESTORING' || local.taskState === 'SUSPENDED';
    // An active task still restoring (just moved here, say from the standby kept here) holds
    // committed data, as that standby did: when the owner cannot answer otherwise and no standby
    // elsewhere exists (restoringAsStandby, the gateway's fallback only: a forwarded read or a
    // page still fails NOT_ACTIVE, so its caller turns to a caught-up standby) it answers as a
    // standby would, saying so — not under maxLag, as its lag is not known.
    const restoringMayServe = local.active && local.taskState === 'RESTORING' && !options.requireActive && options.maxLag === undefined;
    const restoringAsStandby = restoringMayServe && options.restoringAsStandby === true;
    if (local.taskState !== 'RUNNING' && !(staleState && options.allowStale) && !restoringAsStandby) {
      // Its standbys elsewhere may answer; with none, its own committed data (restoringAsStandby).
      const standbys = local.active ? this.provider.remoteStandbys?.(store.name, partition) ?? [] : [];
      const here = restoringMayServe && standbys.length === 0;
      const message = `Task ${local.taskId} is ${local.taskState}${staleState ? ' (pass allowStale to read its committed data)' : ''}.`;
      return { ok: false, partition, failure: { reason: 'NOT_ACTIVE', message, ...(standbys.length === 0 ? {} : { standbys }), ...(here ? { standbyHere: true } : {}) }, info };
    }
    if (options.positionBound !== undefined) {
      const started = performance.now();
      const reached = await waitForBound(local.store, options.readCommitted, options.positionBound, options.boundTimeoutMs, options.signal);
      info.push(`position bound ${reached ? 'reached' : 'not reached'} after ${elapsed(started)}`);
      if (!reached) {
        return fail('NOT_UP_TO_BOUND', `Partition ${partition} did not reach the position bound within ${options.boundTimeoutMs} ms.`);
      }
    }
    return { ok: true, partition, local: restoringAsStandby ? { ...local, active: false } : local, info };
  }

  /**
   * A partition's read failed. The message goes to clients, so only a deliberate IqgateError's
   * message passes (STORE_CLOSED: "read view is closed"); STORE_EXCEPTION carries the storage
   * driver's text (file paths, LevelDB internals) and anything else is a bug: both get the
   * reason's generic description, and the full error goes to onPartitionError.
   */
  private storeException(error: unknown, partition: number): PartitionFailure {
    const deliberate = isIqgateError(error) && error.code !== 'STORE_EXCEPTION';
    if (!deliberate) this.options.onPartitionError?.(error, { partition });
    return { reason: 'STORE_EXCEPTION', message: deliberate ? error.message : FAILURE_REASONS.STORE_EXCEPTION };
  }

  /** Takes every admitted partition's view in one synchronous step. */
  private openAll(options: QueryOptions, admissions: readonly Admission[]): OpenedOrFailed[] {
    return admissions.map((admission) => {
      if (!admission.ok) return admission;
      let view: ReadView;
      try {
        view = admission.local.store.view({ readCommitted: options.readCommitted });
      } catch (error) {
        return { partition: admission.partition, failure: this.storeException(error, admission.partition), info: admission.info };
      }
      // The position can fall back after the wait: an abort drops the uncommitted position.
      if (options.positionBound !== undefined && !isPermitted(view.position, options.positionBound, admission.partition)) {
        void view.close();
        return {
          partition: admission.partition,
          failure: { reason: 'NOT_UP_TO_BOUND', message: `Partition ${admission.partition} fell back below the position bound.` },
          info: admission.info,
        };
      }
      const { local } = admission;
      admission.info.push(`${options.readCommitted ? 'committed' : 'uncommitted'} view of ${local.active ? 'task' : 'the standby of task'} ${local.taskId}`);
      const self = this.provider.selfUrl?.();
      const served: Served = {
        ...(local.active ? {} : { standby: true, ...(local.lag === undefined ? {} : { lag: local.lag }) }),
        ...(self === undefined ? {} : { servedBy: self }),
      };
      return { partition: admission.partition, view, info: admission.info, served, store: local.store };
    });
  }
}

async function* tag(iterator: AsyncIterableIterator<KeyValue>, partition: number): AsyncGenerator<MergedEntry> {
  for await (const kv of iterator) yield { key: kv.key, value: kv.value, partition };
}

function outcome(partition: number, options: QueryOptions, info: string[], position?: Position, failure?: PartitionFailure, served?: Served): PartitionOutcome {
  return {
    partition,
    ...served,
    ...(position === undefined ? {} : { position }),
    ...(failure === undefined ? {} : { failure }),
    ...(options.executionInfo ? { executionInfo: info } : {}),
  };
}

function elapsed(started: number): string {
  return `${(performance.now() - started).toFixed(3)} ms`;
}
