/**
 * Live change feeds of a key set, a range or a prefix, from the store partitions hosted here.
 * Each feed follows one read view (StoreChangeEvent):
 * - committed: the changes of each store commit, after it completed;
 * - uncommitted: every change of what an uncommitted read returns — each write as it lands in
 *   the record cache, and each rollback (abort, failed commit, rewind, close) as one event per
 *   dropped key with the value now visible (the committed value, or null when absent), at the
 *   Position the store went back to. Applying the events in order gives what an uncommitted
 *   read of the selection returns.
 * Events of one partition arrive in the order the store emits them; partitions interleave. On a
 * committed feed a resume Position skips every event at or below it, so a client that
 * reconnects with the last `resumeAfter` it saw gets no duplicates.
 *
 * Without `initial`, changes made while no stream was open are not replayed (that needs the
 * changelog, which query/ does not read). With `initial`, the stream first lists the current
 * state (initial-snapshot.ts), read from views taken in the same tick as the store listeners,
 * so nothing falls between the state and the live events: every partition's initial entries,
 * then the live events (those buffered meanwhile first). On a committed feed, a live event
 * whose position the partition's view already dominates is in the view and is skipped; a change
 * in flight while the views were taken may still arrive once more, with the value the view held
 * or a newer one. With `after` as well, only the partitions whose view position `after` does
 * not dominate (something changed since) are listed again: that makes a resume gap-free.
 *
 * `resumeAfter` only ever covers events delivered to the consumer: a partition's view position
 * joins it with the partition's last initial entry, a live event's position when the event is
 * handed out (not when it is buffered behind initial entries still to come).
 *
 * Uncommitted Positions move backwards at a rollback, and the reprocessing that follows writes
 * at offsets already seen, so on an uncommitted feed a Position proves nothing about what the
 * client holds: the store emits its uncommitted events synchronously, at the write, and the
 * stream subscribes in the tick it takes its views, so every live event is a change made after
 * the views and none is skipped; and with `after` and `initial`, every partition is listed again
 * (a rolled-back partition's view position may be below `after` while its state differs from
 * what the client saw). `after` only seeds `resumeAfter` there.
 *
 * The stream never goes silent for good: when one of its partitions closes here (a rebalance
 * moved it away, the instance stops), it hands out the partition's events up to the close and
 * then ends, rejecting with the closer's code — PARTITION_REVOKED or STORE_CLOSED, retriable,
 * with the store, the partition and `resumeAfter` in its details — so that the client resumes
 * with the partition's owner (`after` + `initial` makes that gap-free). The whole stream ends,
 * not only that partition's part: a feed with a hole in it would read as complete. A task
 * re-opened after a failed commit keeps its stores, and its feeds carry on through it.
 */
import { IqgateError } from '../errors.js';
import { Position } from '../store/position.js';
import type { Bytes, StoreChangeEvent } from '../store/types.js';
import { keysScope, takeInitialSnapshot, type InitialSnapshot } from './initial-snapshot.js';
import { partitionForKey } from '../murmur2.js';
import type { ScanSpec } from './query-types.js';
import type { LocalStorePartition, StateProvider } from './state-provider.js';
import { Buffer } from 'node:buffer';

export type ChangeSelector = { readonly type: 'keys'; readonly keys: readonly Bytes[] } | ScanSpec;

export interface ChangeStreamRequest {
  readonly store: string;
  readonly selector: ChangeSelector;
  readonly readCommitted: boolean;
  /** Skip events whose position is at or below this one. */
  readonly after?: Position;
  /** Start with the current state of the selection (see the module comment). Default false. */
  readonly initial?: boolean;
  /** Restrict to these partitions (range and prefix selectors). */
  readonly partitions?: readonly number[];
  /**
   * Live events buffered for a slow reader (also while the initial entries are listed) before
   * the stream ends with SUBSCRIPTION_OVERFLOW.
   */
  readonly maxBuffered: number;
}

export interface ChangeEvent {
  readonly key: Bytes;
  /** null for a delete, or for a requested key that is absent from the initial state. */
  readonly value: Bytes | null;
  readonly partition: number;
  readonly committed: boolean;
  /** True for an entry of the initial state, false for a live change. */
  readonly initial: boolean;
  /**
   * The partition's position after the change's commit (uncommitted: after the write; for a
   * rollback, the position it went back to); for an initial entry, its view's.
   */
  readonly position: Position;
  /** Every position delivered on this stream so far merged (with `after`): pass it to resume. */
  readonly resumeAfter: Position;
}

/** A change waiting to be handed out; its resumeAfter is computed then. */
interface Pending {
  readonly key: Bytes;
  /** Mutable on an uncommitted feed: a newer change of the key replaces a buffered one. */
  value: Bytes | null;
  readonly partition: number;
  position: Position;
  /**
   * The last change of its store event that the selector takes: only then does the event's
   * position join resumeAfter. Every change of one commit shares the commit's position, so a
   * client resuming after the first of them would skip the rest (audit, 2026-12-06); resuming
   * after a part of an event gets the whole event again.
   */
  last: boolean;
}

/** How often a stream asks a provider without onPartitionHosted whether a partition of its selector that was not hosted here has opened. */
const HOSTED_CHECK_MS = 200;

/**
 * Subscribes (and takes the initial views) synchronously: no event after this call is missed.
 * Throws STORE_NOT_FOUND for an unknown store and PARTITION_NOT_FOUND when none of the
 * partitions the selector touches is hosted here; ends with PARTITION_ASSIGNED once one that
 * was not hosted here when it subscribed opens here.
 */
export function openChangeStream(provider: StateProvider, request: ChangeStreamRequest): AsyncIterableIterator<ChangeEvent> {
  const store = provider.store(request.store);
  if (store === undefined) throw new IqgateError('STORE_NOT_FOUND', `No store named "${request.store}".`, { details: { store: request.store } });
  const selector = request.selector;
  const keySet = selector.type === 'keys' ? new Set(selector.keys.map((k) => k.toString('hex'))) : undefined;
  // Each partition once: subscribing to one twice would deliver each of its changes twice.
  const wanted = [
    ...new Set(
      selector.type === 'keys'
        ? selector.keys.map((key) => partitionForKey(key, store.partitions))
        : (request.partitions ?? Array.from({ length: store.partitions }, (_, i) => i)),
    ),
  ];
  // Those hosted here, and those of the store that are not (yet): see `missing` below.
  const hosted: Array<LocalStorePartition['store']> = [];
  const missing: number[] = [];
  for (const partition of wanted) {
    const local = provider.localPartition(store.name, partition);
    if (local !== undefined) hosted.push(local.store);
    else if (Number.isInteger(partition) && partition >= 0 && partition < store.partitions) missing.push(partition);
  }
  if (hosted.length === 0) {
    throw new IqgateError('PARTITION_NOT_FOUND', `None of the partitions [${wanted.join(', ')}] of ${store.name} is hosted on this instance.`);
  }
  const matches = matcher(selector, keySet);
  const kind = request.readCommitted ? 'committed' : 'uncommitted';
  // Positions filter committed feeds only (see the module comment).
  const after = request.readCommitted ? request.after?.copy() : undefined;
  let merged = request.after?.copy();
  let snapshot: InitialSnapshot | undefined;

  const live: Pending[] = [];
  /**
   * Uncommitted feeds: the buffered change of each partition and key. A newer change of a key
   * whose change still waits replaces its value and Position in place (the record cache dedupes
   * a key's writes the same way), so a slow reader gets every key's latest value, not each
   * write, and the buffer bound counts keys waiting. Committed feeds buffer every change.
   */
  const byKey = request.readCommitted ? undefined : new Map<string, Pending>();
  const slotOf = (change: Pending): string => `${change.partition}:${change.key.toString('latin1')}`;
  let waiting: ((result: IteratorResult<ChangeEvent>) => void) | undefined;
  let failWaiting: ((error: unknown) => void) | undefined;
  /** How the stream ends once its buffered events are out; built then (a close's resumeAfter covers them). */
  let failure: (() => unknown) | undefined;
  let ended = false;
  let listing = request.initial === true;
  let closing: Promise<void> = Promise.resolve();

  const unsubscribes: Array<() => void> = [];
  const listen = (partition: (typeof hosted)[number]): (() => void) =>
    partition.subscribe(
      (event: StoreChangeEvent) => {
        if (ended) return;
        if (after !== undefined && after.dominates(event.position)) return;
        // Already in the partition's initial view (an uncommitted view holds the dirty cache
        // entries a later flush emits; a committed one may hold a commit not yet completed).
        const viewed = request.readCommitted ? snapshot?.positions.get(partition.partition) : undefined;
        if (viewed !== undefined && viewed.dominates(event.position)) return;
        const position = event.position.copy();
        const taken = event.changes.filter((change) => matches(change.key));
        taken.forEach((change, i) => deliver({ key: change.key, value: change.value, partition: partition.partition, position, last: i === taken.length - 1 }));
      },
      { kind, onClose: (reason) => endWith(() => closedError(reason, partition.partition)) },
    );
  // Partitions of the selector not hosted here when it subscribed (a task still opening after a
  // start or a rebalance, or another instance's): once one opens here, the stream ends
  // (PARTITION_ASSIGNED, retriable) so that the client subscribes again and gets it too — a
  // feed silently missing a partition would read as complete. The provider says when one opens
  // (onPartitionHosted); one without that is asked every HOSTED_CHECK_MS.
  let stopWatching = (): void => undefined;
  if (missing.length > 0) {
    const opened = (partition: number): void => {
      endWith(() => new IqgateError('PARTITION_ASSIGNED', `The subscription ended: partition ${partition} of ${store.name} opened on this instance after it subscribed; subscribe again to include it.`, {
        retriable: true,
        details: { store: store.name, partition, ...(merged === undefined ? {} : { resumeAfter: merged.toJSON() }) },
      }));
    };
    if (provider.onPartitionHosted !== undefined) {
      const awaited = new Set(missing);
      // Told while the opening task registers its stores: the stream ends after that call returns.
      stopWatching = provider.onPartitionHosted((storeName, partition) => {
        if (storeName === store.name && awaited.has(partition)) setImmediate(() => opened(partition));
      });
    } else {
      const check = setInterval(() => {
        const partition = missing.find((p) => provider.localPartition(store.name, p) !== undefined);
        if (partition !== undefined) opened(partition);
      }, HOSTED_CHECK_MS);
      check.unref();
      stopWatching = () => clearInterval(check);
    }
  }
  try {
    for (const partition of hosted) unsubscribes.push(listen(partition));
    if (request.initial === true) {
      snapshot = takeInitialSnapshot(hosted, selector.type === 'keys' ? keysScope(selector.keys, store.partitions) : selector, {
        readCommitted: request.readCommitted,
        ...(after === undefined ? {} : { after }),
      });
    }
  } catch (error) {
    // A partition closing under us: release what was subscribed, or those listeners leak.
    stopWatching();
    for (const unsubscribe of unsubscribes) unsubscribe();
    throw error;
  }

  /** Hands out a change; `joins`: its position becomes part of resumeAfter. */
  const toEvent = (change: Pending, initial: boolean, joins: boolean): ChangeEvent => {
    if (joins) merged = (merged ?? change.position.copy()).merge(change.position);
    return {
      key: change.key,
      value: change.value,
      partition: change.partition,
      committed: request.readCommitted,
      initial,
      position: change.position,
      resumeAfter: merged?.copy() ?? Position.empty(),
    };
  };

  /** The error a partition's close ends the stream with: the closer's code, with where to resume. */
  const closedError = (reason: IqgateError, partition: number): IqgateError =>
    new IqgateError(reason.code, `The subscription ended: partition ${partition} of ${store.name} closed on this instance (${reason.message}).`, {
      cause: reason,
      retriable: reason.retriable,
      details: { ...reason.details, store: store.name, partition, ...(merged === undefined ? {} : { resumeAfter: merged.toJSON() }) },
    });

  const stop = (): void => {
    if (ended) return;
    ended = true;
    stopWatching();
    for (const unsubscribe of unsubscribes) unsubscribe();
    // Live events behind an unfinished initial listing would read as if the listing were complete.
    if (listing) {
      live.length = 0;
      byKey?.clear();
    }
    if (snapshot !== undefined) closing = snapshot.close().catch((error: unknown) => process.emitWarning(asError(error)));
  };

  /**
   * Ends the stream with `error` once what was buffered is handed out; a reader already
   * waiting (nothing buffered) gets it now.
   */
  function endWith(error: () => IqgateError): void {
    if (ended) return;
    failure = error;
    stop();
    const reject = failWaiting;
    if (reject === undefined) return;
    waiting = undefined;
    failWaiting = undefined;
    failure = undefined;
    void closing.then(() => reject(error()));
  }

  function deliver(change: Pending): void {
    if (waiting !== undefined) {
      const resolve = waiting;
      waiting = undefined;
      failWaiting = undefined;
      resolve({ value: toEvent(change, false, change.last), done: false });
      return;
    }
    const slot = byKey === undefined ? undefined : slotOf(change);
    if (slot !== undefined) {
      const waitingChange = byKey!.get(slot);
      if (waitingChange !== undefined) {
        waitingChange.value = change.value;
        waitingChange.position = change.position;
        waitingChange.last = change.last;
        return;
      }
    }
    if (live.length >= request.maxBuffered) {
      failure = () => new IqgateError('SUBSCRIPTION_OVERFLOW', `More than ${request.maxBuffered} events were waiting for this subscriber.`, {
        details: { store: request.store, ...(merged === undefined ? {} : { resumeAfter: merged.toJSON() }) },
      });
      stop();
      return;
    }
    live.push(change);
    if (slot !== undefined) byKey!.set(slot, change);
  }

  async function pull(): Promise<IteratorResult<ChangeEvent>> {
    if (listing && !ended) {
      try {
        const entry = await snapshot!.next();
        if (entry !== undefined && !ended) return { value: toEvent(entry, true, entry.last), done: false };
        if (entry === undefined) listing = false;
      } catch (error) {
        if (!ended) {
          failure = () => error;
          stop();
        }
      }
    }
    const change = live.shift();
    if (change !== undefined && byKey !== undefined) byKey.delete(slotOf(change));
    if (change !== undefined) return { value: toEvent(change, false, change.last), done: false };
    if (failure !== undefined) {
      const error = failure();
      failure = undefined;
      await closing;
      throw error;
    }
    if (ended) return { value: undefined, done: true };
    return new Promise((resolve, reject) => {
      waiting = resolve;
      failWaiting = reject;
    });
  }

  // One pull at a time: the initial listing reads its views sequentially.
  let queue: Promise<unknown> = Promise.resolve();
  const iterator: AsyncIterableIterator<ChangeEvent> = {
    next(): Promise<IteratorResult<ChangeEvent>> {
      const result = queue.then(pull);
      queue = result.catch(() => undefined);
      return result;
    },
    async return(): Promise<IteratorResult<ChangeEvent>> {
      stop();
      live.length = 0;
      byKey?.clear();
      waiting?.({ value: undefined, done: true });
      waiting = undefined;
      failWaiting = undefined;
      await closing;
      return { value: undefined, done: true };
    },
    async throw(error?: unknown): Promise<IteratorResult<ChangeEvent>> {
      stop();
      failWaiting?.(error);
      await closing;
      throw asError(error);
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}

function matcher(selector: ChangeSelector, keySet: Set<string> | undefined): (key: Bytes) => boolean {
  if (selector.type === 'keys') return (key) => keySet!.has(key.toString('hex'));
  if (selector.type === 'prefix') {
    const prefix = selector.prefix;
    return (key) => key.length >= prefix.length && key.subarray(0, prefix.length).equals(prefix);
  }
  const { from, to } = selector;
  return (key) => (from === undefined || Buffer.compare(key, from) >= 0) && (to === undefined || Buffer.compare(key, to) <= 0);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
