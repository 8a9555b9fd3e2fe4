/**
 * The initial entries of a change stream opened with `initial`: the current state of the
 * selected keys, range or prefix, read from one ReadView per partition. The views are taken in
 * one synchronous tick, the same tick in which the stream subscribes to the partitions, so
 * every change is either in a view or arrives as a live event (views are consistent
 * snapshots; no store event can run between two synchronous calls).
 *
 * Partitions are read one after another in ascending partition number, each in key-byte order
 * through the view's lazy iterators (a key set through one getMany): a large range is never
 * held in memory. Each view is closed as soon as its entries are read, and every view at the
 * latest by `close()`.
 *
 * The last entry of a partition is marked (one entry of lookahead): only with it may the
 * partition's snapshot position join a stream's `resumeAfter`, so a client that goes away in
 * the middle of a partition's entries and resumes with the last `resumeAfter` it got has that
 * partition replayed again, instead of skipping its remaining entries as "already seen".
 */
import type { Position } from '../store/position.js';
import type { Bytes, KeyValueStorePartition, ReadView } from '../store/types.js';
import { partitionForKey } from '../murmur2.js';
import type { ScanSpec } from './query-types.js';
import { Buffer } from 'node:buffer';

/** What the initial entries cover: each partition's requested keys (distinct, in key-byte order), or a scan. */
export type InitialScope = { readonly type: 'keys'; readonly keys: ReadonlyMap<number, readonly Bytes[]> } | ScanSpec;

export interface InitialEntry {
  readonly key: Bytes;
  /** null: a requested key that is absent (keys scope only). */
  readonly value: Bytes | null;
  readonly partition: number;
  /** The position of the partition's view. */
  readonly position: Position;
  /** The partition's last initial entry. */
  readonly last: boolean;
}

/** The keys scope of a key set: each key once, grouped by partition, in key-byte order. */
export function keysScope(keys: readonly Bytes[], partitions: number): InitialScope {
  const distinct = new Map(keys.map((key) => [key.toString('hex'), key]));
  const byPartition = new Map<number, Bytes[]>();
  for (const key of [...distinct.values()].sort(Buffer.compare)) {
    const partition = partitionForKey(key, partitions);
    const list = byPartition.get(partition);
    if (list === undefined) byPartition.set(partition, [key]);
    else list.push(key);
  }
  return { type: 'keys', keys: byPartition };
}

type Pull = () => Promise<{ readonly key: Bytes; readonly value: Bytes | null } | undefined>;

/**
 * Takes a view of every partition synchronously (call it in the tick the stream subscribes).
 * With `after`, a partition whose view position `after` dominates has not moved since: its
 * view is closed unread. Throws what `view()` throws, having closed the views already taken.
 */
export function takeInitialSnapshot(
  partitions: readonly KeyValueStorePartition[],
  scope: InitialScope,
  options: { readonly readCommitted: boolean; readonly after?: Position },
): InitialSnapshot {
  const views: ReadView[] = [];
  try {
    for (const partition of [...partitions].sort((a, b) => a.partition - b.partition)) {
      views.push(partition.view({ readCommitted: options.readCommitted }));
    }
  } catch (error) {
    // Nobody will read these: release them, and report a failure to close to the process.
    for (const view of views) void view.close().catch((closeError: unknown) => process.emitWarning(asError(closeError)));
    throw error;
  }
  const moved = (view: ReadView): boolean => options.after === undefined || !options.after.dominates(view.position);
  return new InitialSnapshot(views.filter(moved), views.filter((view) => !moved(view)), scope);
}

export class InitialSnapshot {
  /** The view position of each replayed partition: live events it dominates are in the snapshot already. */
  readonly positions: ReadonlyMap<number, Position>;
  private index = 0;
  private pull: Pull | undefined;
  private iterator: AsyncIterator<unknown> | undefined;
  private lookahead: Awaited<ReturnType<Pull>>;
  /** The read or close in flight: close() waits for it before closing the views under it. */
  private busy: Promise<unknown> | undefined;
  private closing: Promise<void> | undefined;
  private skippedClosed = false;

  constructor(
    /** The views to list, in ascending partition number. */
    private readonly replayed: readonly ReadView[],
    /** The views of partitions that did not move since `after`: closed unread. */
    private readonly skipped: readonly ReadView[],
    private readonly scope: InitialScope,
  ) {
    this.positions = new Map(replayed.map((view) => [view.partition, view.position]));
  }

  /** The next initial entry, or undefined when every partition has been read (or close() was called). */
  async next(): Promise<InitialEntry | undefined> {
    if (!this.skippedClosed) {
      this.skippedClosed = true;
      await this.track(Promise.all(this.skipped.map((view) => view.close())));
    }
    while (this.closing === undefined && this.index < this.replayed.length) {
      const view = this.replayed[this.index]!;
      this.pull ??= this.open(view);
      const entry = this.lookahead ?? (await this.track(this.pull()));
      if (this.closing !== undefined) return undefined;
      if (entry === undefined) {
        await this.finishPartition(view);
        continue;
      }
      this.lookahead = await this.track(this.pull());
      if (this.closing !== undefined) return undefined;
      const last = this.lookahead === undefined;
      if (last) await this.finishPartition(view);
      return { key: entry.key, value: entry.value, partition: view.partition, position: view.position, last };
    }
    return undefined;
  }

  /** Closes every view (and the open iterator); later next() calls return undefined. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      // A read in flight finishes first: closing a view under its own getMany or chunk read
      // would turn a clean end into a STORE_CLOSED error for no reason.
      await this.busy?.catch(() => undefined);
      try {
        await this.iterator?.return?.();
      } finally {
        // Closing twice is harmless (ReadView's contract): every view, whatever was listed.
        await Promise.all([...this.replayed, ...this.skipped].map((view) => view.close()));
      }
    })();
    return this.closing;
  }

  private open(view: ReadView): Pull {
    if (this.scope.type === 'keys') {
      const keys = this.scope.keys.get(view.partition) ?? [];
      let values: Array<Bytes | undefined> | undefined;
      let i = 0;
      return async () => {
        values ??= await view.getMany(keys);
        if (i >= keys.length) return undefined;
        const key = keys[i]!;
        return { key, value: values[i++] ?? null };
      };
    }
    const scope = this.scope;
    const iterator =
      scope.type === 'prefix'
        ? view.prefix(scope.prefix)
        : view.range({ ...(scope.from === undefined ? {} : { from: scope.from }), ...(scope.to === undefined ? {} : { to: scope.to }) });
    this.iterator = iterator;
    return async () => {
      const step = await iterator.next();
      return step.done === true ? undefined : step.value;
    };
  }

  private async finishPartition(view: ReadView): Promise<void> {
    // The iterator ran to its end, which released its cursor; the view goes now, not at close().
    this.pull = undefined;
    this.iterator = undefined;
    this.lookahead = undefined;
    this.index++;
    await this.track(view.close());
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.busy = promise;
    return promise;
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
