/**
 * Live change feeds of a key set, a range or a prefix, from the store partitions hosted here:
 * committed changes (emitted after each store commit) or uncommitted ones (as the record cache
 * flushes). Events of one partition arrive in the order the store emits them; partitions
 * interleave. A resume Position skips every event at or below it, so a client that reconnects
 * with the last `resumeAfter` it saw gets no duplicates. Changes made while it was away are not
 * replayed (that needs the changelog, which query/ does not read); re-query to catch up.
 */
import { IqgateError } from '../errors.js';
import type { Position } from '../store/position.js';
import type { Bytes, StoreChangeEvent } from '../store/types.js';
import { partitionForKey } from './murmur2.js';
import type { ScanSpec } from './query-types.js';
import type { StateProvider } from './state-provider.js';

export type ChangeSelector = { readonly type: 'keys'; readonly keys: readonly Bytes[] } | ScanSpec;

export interface ChangeStreamRequest {
  readonly store: string;
  readonly selector: ChangeSelector;
  readonly readCommitted: boolean;
  /** Skip events whose position is at or below this one. */
  readonly after?: Position;
  /** Restrict to these partitions (range and prefix selectors). */
  readonly partitions?: readonly number[];
  /** Events buffered for a slow reader before the stream ends with SUBSCRIPTION_OVERFLOW. */
  readonly maxBuffered: number;
}

export interface ChangeEvent {
  readonly key: Bytes;
  /** null for a delete. */
  readonly value: Bytes | null;
  readonly partition: number;
  readonly committed: boolean;
  /** The partition's position after the change's commit (or flush). */
  readonly position: Position;
  /** Every position delivered on this stream so far merged (with `after`): pass it to resume. */
  readonly resumeAfter: Position;
}

/**
 * Subscribes synchronously (no event after this call is missed) and returns the feed.
 * Throws STORE_NOT_FOUND for an unknown store and PARTITION_NOT_FOUND when none of the
 * partitions the selector touches is hosted here.
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
  const hosted = wanted.flatMap((partition) => {
    const local = provider.localPartition(store.name, partition);
    return local === undefined ? [] : [local];
  });
  if (hosted.length === 0) {
    throw new IqgateError('PARTITION_NOT_FOUND', `None of the partitions [${wanted.join(', ')}] of ${store.name} is hosted on this instance.`);
  }
  const matches = matcher(selector, keySet);
  const kind = request.readCommitted ? 'committed' : 'uncommitted';
  const resumeAfter = request.after?.copy();
  let merged = request.after?.copy();

  const buffer: ChangeEvent[] = [];
  let waiting: ((result: IteratorResult<ChangeEvent>) => void) | undefined;
  let failWaiting: ((error: unknown) => void) | undefined;
  let failure: IqgateError | undefined;
  let ended = false;

  const unsubscribes: Array<() => void> = [];
  const listen = (local: (typeof hosted)[number]): (() => void) =>
    local.store.subscribe((event: StoreChangeEvent) => {
      if (ended || event.kind !== kind) return;
      if (resumeAfter !== undefined && resumeAfter.dominates(event.position)) return;
      const position = event.position.copy();
      for (const change of event.changes) {
        if (!matches(change.key)) continue;
        merged = (merged ?? position.copy()).merge(position);
        deliver({
          key: change.key,
          value: change.value,
          partition: local.store.partition,
          committed: event.kind === 'committed',
          position,
          resumeAfter: merged.copy(),
        });
      }
    });
  try {
    for (const local of hosted) unsubscribes.push(listen(local));
  } catch (error) {
    // A partition closing under us: release what was subscribed, or those listeners leak.
    for (const unsubscribe of unsubscribes) unsubscribe();
    throw error;
  }

  const stop = (): void => {
    if (ended) return;
    ended = true;
    for (const unsubscribe of unsubscribes) unsubscribe();
  };

  function deliver(event: ChangeEvent): void {
    if (waiting !== undefined) {
      const resolve = waiting;
      waiting = undefined;
      failWaiting = undefined;
      resolve({ value: event, done: false });
      return;
    }
    if (buffer.length >= request.maxBuffered) {
      failure = new IqgateError('SUBSCRIPTION_OVERFLOW', `More than ${request.maxBuffered} events were waiting for this subscriber.`);
      stop();
      return;
    }
    buffer.push(event);
  }

  const iterator: AsyncIterableIterator<ChangeEvent> = {
    next(): Promise<IteratorResult<ChangeEvent>> {
      const event = buffer.shift();
      if (event !== undefined) return Promise.resolve({ value: event, done: false });
      if (failure !== undefined) {
        const error = failure;
        failure = undefined;
        return Promise.reject(error);
      }
      if (ended) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve, reject) => {
        waiting = resolve;
        failWaiting = reject;
      });
    },
    return(): Promise<IteratorResult<ChangeEvent>> {
      stop();
      buffer.length = 0;
      waiting?.({ value: undefined, done: true });
      waiting = undefined;
      failWaiting = undefined;
      return Promise.resolve({ value: undefined, done: true });
    },
    throw(error?: unknown): Promise<IteratorResult<ChangeEvent>> {
      stop();
      failWaiting?.(error);
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
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

