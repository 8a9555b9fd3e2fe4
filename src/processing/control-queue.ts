/**
 * The control plane's one queue (docs/architecture.md §1, the Druid task-roll lesson): task open/close,
 * commits and restore requests are queued here instead of being run where they are asked for.
 *
 * - Identical requests coalesce: a key already waiting is not queued twice (Druid's fix for
 *   hundreds of duplicate notices queued behind a checkpoint).
 * - Operations of one group (one task) run one at a time, in order; different groups run
 *   concurrently up to `concurrency`. No lock is held across slow I/O: the processing loop
 *   never waits on this queue, it only skips the tasks that are busy in it.
 * - Depth and wait times are measured, because they are what a stalled roll looks like.
 */
export interface ControlOp {
  /** Coalescing key, e.g. `commit:0_3`. */
  readonly key: string;
  /** Ops of one group run sequentially (a task id). */
  readonly group: string;
  readonly run: () => Promise<void>;
}

export interface ControlQueueStats {
  depth: number;
  maxDepth: number;
  coalesced: number;
  completed: number;
  failed: number;
}

export class ControlQueue {
  private readonly pending: Array<ControlOp & { enqueuedAt: number }> = [];
  private readonly pendingKeys = new Set<string>();
  private readonly busyGroups = new Set<string>();
  private running = 0;
  private pumpScheduled = false;
  private idleWaiters: Array<() => void> = [];
  readonly stats: ControlQueueStats = { depth: 0, maxDepth: 0, coalesced: 0, completed: 0, failed: 0 };

  constructor(
    private readonly concurrency: number,
    private readonly onError: (op: ControlOp, error: unknown) => void,
    private readonly clock: () => number = Date.now,
    private readonly onWait?: (waitMs: number, op: ControlOp) => void,
  ) {}

  /** Queues `op` unless an op with the same key is already waiting. Returns false when coalesced. */
  enqueue(op: ControlOp): boolean {
    if (this.pendingKeys.has(op.key)) {
      this.stats.coalesced += 1;
      return false;
    }
    this.pendingKeys.add(op.key);
    this.pending.push({ ...op, enqueuedAt: this.clock() });
    this.stats.depth = this.pending.length;
    this.stats.maxDepth = Math.max(this.stats.maxDepth, this.stats.depth);
    // Never start an operation inside the caller's synchronous code: a commit requested from a
    // store callback in the middle of processing a record must begin after that record (and the
    // processing slice) is done, or it would commit half a record.
    if (!this.pumpScheduled) {
      this.pumpScheduled = true;
      queueMicrotask(() => {
        this.pumpScheduled = false;
        this.pump();
      });
    }
    return true;
  }

  has(key: string): boolean {
    return this.pendingKeys.has(key);
  }

  /** The keys of the operations of `group` still waiting to run, in queue order. */
  pendingIn(group: string): string[] {
    return this.pending.filter((op) => op.group === group).map((op) => op.key);
  }

  depth(): number {
    return this.pending.length;
  }

  /** Resolves when nothing is pending or running. */
  idle(): Promise<void> {
    if (this.pending.length === 0 && this.running === 0 && !this.pumpScheduled) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    for (let i = 0; i < this.pending.length && this.running < this.concurrency; ) {
      const op = this.pending[i];
      if (op === undefined || this.busyGroups.has(op.group)) {
        i += 1;
        continue;
      }
      this.pending.splice(i, 1);
      this.pendingKeys.delete(op.key);
      this.busyGroups.add(op.group);
      this.running += 1;
      this.onWait?.(this.clock() - op.enqueuedAt, op);
      void this.execute(op);
    }
    this.stats.depth = this.pending.length;
    if (this.pending.length === 0 && this.running === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  private async execute(op: ControlOp): Promise<void> {
    try {
      await op.run();
      this.stats.completed += 1;
    } catch (error) {
      this.stats.failed += 1;
      this.onError(op, error);
    } finally {
      this.busyGroups.delete(op.group);
      this.running -= 1;
      this.pump();
    }
  }
}
