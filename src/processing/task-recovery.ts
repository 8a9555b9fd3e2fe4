/**
 * What becomes of a task after a failed commit, open or rollback: everything uncommitted is
 * dropped, its producer discarded, the task SUSPENDED with its partitions paused, and it is
 * re-opened after a back-off. Separate from the TaskManager, which decides when tasks open,
 * commit and close: this holds the failure counts, the retry timers and the rule that tells a
 * zombie from the rightful owner after a fence.
 */
import { isIqgateError } from '../errors.js';
import { discardProducer } from './discard-producer.js';
import type { KafkaPorts } from './ports.js';
import type { ProcessingOptions } from './processing-options.js';
import type { StreamTask, TaskLogger } from './stream-task.js';
import { FatalTaskError } from './task-error-policy.js';

export interface TaskRecoveryDeps {
  readonly options: ProcessingOptions;
  readonly ports: KafkaPorts;
  readonly logger: TaskLogger;
  /** Whether the task was opened under the current assignment (then a fence means we are the zombie). */
  readonly openedUnderCurrentAssignment: (task: StreamTask) => boolean;
  /** Called when a task's back-off has passed: re-open it if it is still ours. */
  readonly reopen: (task: StreamTask) => void;
  /** A commit failed because a record's processing failed under the `fail` policy: the manager fails, as processing does. */
  readonly fatal: (error: FatalTaskError) => void;
}

export class TaskRecovery {
  /** Failed attempts per task since its last successful commit: the back-off grows with them. */
  private readonly failures = new Map<string, number>();
  /** Re-open timers of failed tasks (recover), cleared on close so none outlives the manager. */
  private readonly retryTimers = new Set<NodeJS.Timeout>();

  constructor(private readonly deps: TaskRecoveryDeps) {}

  /**
   * A commit went through, or a new assignment changed the situation (the group is back after a
   * broker outage, or the rebalance a fenced task waited for came): the task's next failure backs
   * off from the start again.
   */
  resetAttempts(taskId: string): void {
    this.failures.delete(taskId);
  }

  /** Failed attempts since the task's last commit (or new assignment). */
  attempts(taskId: string): number {
    return this.failures.get(taskId) ?? 0;
  }

  /**
   * A failed commit has an unknown outcome (docs/kafkajs-notes.md §5 "When fenced"): drop everything
   * uncommitted, discard the producer, and reopen the task — a new InitProducerId settles the
   * transaction, then restore replays whatever it committed and offsets are read again.
   * A fenced task waits for the rebalance that is surely coming before it takes the partition back,
   * so that a thawed zombie does not fence the new owner in turn.
   */
  async recover(task: StreamTask, error: unknown, options: { readonly logged?: boolean } = {}): Promise<void> {
    // A replay at the commit point (a rollback, a flushed change failing downstream) met a record
    // whose policy is `fail`: re-opening would meet it again, for ever.
    if (error instanceof FatalTaskError) {
      this.deps.fatal(error);
      return;
    }
    const fenced = isIqgateError(error, 'PRODUCER_FENCED');
    const attempts = (this.failures.get(task.id) ?? 0) + 1;
    this.failures.set(task.id, attempts);
    if (task.revoked && fenced) {
      // The rebalance took the task away while its commit was in flight (eager, kafkajs), and the
      // new owner's InitProducerId fenced it. What it carried is processed again there, from the
      // offsets committed before it. The re-open below runs only if the task was assigned here
      // again. Any other failure of a revoked task's commit is a warning, as before.
      this.deps.logger.info({ taskId: task.id, err: error, fenced }, 'commit of a revoked task fenced (expected at an eager rebalance: its new owner took over); rolled back');
    } else {
      // `logged`: the caller said it once for many tasks (a failed instance transaction).
      const log = options.logged === true ? this.deps.logger.info.bind(this.deps.logger) : this.deps.logger.warn.bind(this.deps.logger);
      log({ taskId: task.id, err: error, fenced, attempts }, 'commit failed: task rolled back and will be re-initialised');
    }
    const producer = task.rollBackAndSuspend();
    this.deps.ports.consumer.pause(task.sourcePartitions);
    await discardProducer(producer);
    // Fenced under the assignment we opened with: we are probably a zombie that has not noticed
    // the rebalance yet, so wait for it. Fenced after a newer assignment gave us the task again:
    // the fence came from the owner in between, and we own the task now.
    const zombie = fenced && this.deps.openedUnderCurrentAssignment(task);
    const delay = zombie ? this.deps.options.fencedRetryMs : Math.min(this.deps.options.startupRetryMaxMs, 100 * 2 ** Math.min(attempts, 8));
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      this.deps.reopen(task);
    }, delay);
    timer.unref();
    this.retryTimers.add(timer);
  }

  clearRetryTimers(): void {
    for (const timer of this.retryTimers) clearTimeout(timer);
    this.retryTimers.clear();
  }
}
