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
 * bound, false after `timeoutMs`, or as it stands when the partition closes under the wait.
 * Driven by the store's change events of that view rather than polling: a committed wait
 * re-checks at every commit, an uncommitted one at every write and rollback, so a waiting
 * reader is released in the same tick as the change that satisfies it.
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
    // Only the events of the view the bound is about (uncommitted ones cost the write path), and
    // a partition that closes under the wait (revoked, shutting down) answers at once: its
    // Position cannot move any more on this instance.
    const unsubscribe = store.subscribe(() => {
      if (satisfied()) finish(true);
    }, { kind: readCommitted ? 'committed' : 'uncommitted', onClose: () => finish(satisfied()) });
    const timer = setTimeout(() => finish(satisfied()), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
