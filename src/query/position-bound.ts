/**
 * Position bounds (IQv2's PositionBound) and read-your-writes waiting.
 */
import type { Position } from '../store/position.js';
import type { KeyValueStorePartition } from '../store/types.js';

/**
 * Whether a store partition at `position` may answer under `bound`. As Kafka Streams'
 * StoreQueryUtils.isPermitted, only the bound's components for this store partition's own
 * partition number count: a bound merged from the positions of several partitions (say, the
 * position of a first page) can then be handed to every partition. A bounded component the
 * partition has never seen fails the bound.
 */
export function isPermitted(position: Position, bound: Position, partition: number): boolean {
  for (const component of bound.components()) {
    if (component.partition !== partition) continue;
    const seen = position.offset(component.topic, component.partition);
    if (seen === undefined || seen < component.offset) return false;
  }
  return true;
}

/**
 * Resolves true as soon as the partition's committed (or uncommitted) position satisfies the
 * bound, false after `timeoutMs`. Driven by the store's change events rather than polling:
 * every commit and every flush re-checks, so a waiting reader is released in the same tick as
 * the commit that satisfies it. An uncommitted position that advances without a flush is only
 * seen at the next flush or at the deadline (the final check).
 */
export function waitForBound(
  store: KeyValueStorePartition,
  readCommitted: boolean,
  bound: Position,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<boolean> {
  const current = (): Position => (readCommitted ? store.committedPosition() : store.uncommittedPosition());
  const satisfied = (): boolean => isPermitted(current(), bound, store.partition);
  if (satisfied()) return Promise.resolve(true);
  if (timeoutMs <= 0 || signal?.aborted === true) return Promise.resolve(false);
  return new Promise((resolve) => {
    let done = false;
    const finish = (ok: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      unsubscribe();
      signal?.removeEventListener('abort', onAbort);
      resolve(ok);
    };
    const onAbort = (): void => finish(false);
    const unsubscribe = store.subscribe(() => {
      if (satisfied()) finish(true);
    });
    const timer = setTimeout(() => finish(satisfied()), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
