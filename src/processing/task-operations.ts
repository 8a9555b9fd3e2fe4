/**
 * The operations the task manager runs on one task, each in the control queue under the task's
 * id (so one task's operations run in order, and none on the processing path): open, close and
 * the rollback a processor's failure asks for. The steps themselves are TaskOpener's; what
 * follows a failure is TaskRecovery's; when each is asked for is the task manager's.
 */
import type { IqgateError } from '../errors.js';
import type { ControlQueue } from './control-queue.js';
import { discardProducer } from './discard-producer.js';
import { RestoreCancelled } from './restore-task-stores.js';
import type { StreamTask } from './stream-task.js';
import type { SubTopologyPlan } from './sub-topology-plan.js';
import { revokedReason, shutdownReason } from './task-close-reason.js';
import type { TaskOpener } from './task-opener.js';
import type { TaskRecovery } from './task-recovery.js';

export interface TaskOperationsDeps {
  readonly control: ControlQueue;
  readonly opener: TaskOpener;
  readonly recovery: TaskRecovery;
  readonly planOf: (task: StreamTask) => SubTopologyPlan | undefined;
  /** The task manager's assignment count: a task remembers the one it was opened under. */
  readonly generation: () => number;
  /** No new opens (stopping or failed). */
  readonly stopping: () => boolean;
  /** A fatal error: nothing more is committed. */
  readonly failed: () => boolean;
  /** Whether a close may commit the task's last work (the commit strategy's closeCommits). */
  readonly closeCommits: boolean;
  /** A rollback has replayed its records (or failed): processing goes on. */
  readonly scheduleLoop: () => void;
}

export class TaskOperations {
  private readonly openedIn = new Map<StreamTask, number>();
  /**
   * Each task object's number, part of its operations' queue keys: a task revoked and assigned
   * again is a new object under the same id, and its open or close must not coalesce into the
   * old one's still waiting in the queue (it would be dropped: never opened, or never closed).
   */
  private readonly serials = new WeakMap<StreamTask, number>();
  private nextSerial = 0;
  /** Closes waiting in the queue, per task object: a second request shares the first's. */
  private readonly pendingCloses = new WeakMap<StreamTask, Promise<void>>();
  /** Lost tasks (TaskManager.onRevoked with `lost`): what their next opening waits for first. */
  private readonly reopenAfter = new WeakMap<StreamTask, Promise<void>>();

  constructor(private readonly deps: TaskOperationsDeps) {}

  /** Whether the task was opened under the current assignment (then a fence means we are the zombie). */
  openedUnderCurrentAssignment(task: StreamTask): boolean {
    return this.openedIn.get(task) === this.deps.generation();
  }

  /** The task's next open waits for `settled` first (a cycle that may still carry a cut of it). */
  openAfter(task: StreamTask, settled: Promise<void>): void {
    this.reopenAfter.set(task, settled);
  }

  requestOpen(task: StreamTask): void {
    this.deps.control.enqueue({ key: this.keyOf('open', task), group: task.id, run: () => this.open(task) });
  }

  /**
   * Queues a task's close; resolves when it has run, whatever its outcome. `after`: what the close
   * waits for first. A close of the task already waiting in the queue is the one that runs (with
   * its own `commit` and `after`), and both callers wait for it.
   */
  requestClose(task: StreamTask, commit: boolean, after?: Promise<void>): Promise<void> {
    const waiting = this.pendingCloses.get(task);
    if (waiting !== undefined) return waiting;
    // The reason as of now: a stop that begins while the close waits in the queue does not make
    // it a shutdown for the task's store subscribers.
    const reason = this.deps.stopping() ? shutdownReason(task.id, this.deps.failed()) : revokedReason(task.id);
    const closed = new Promise<void>((resolve) => {
      this.deps.control.enqueue({ key: this.keyOf('close', task), group: task.id, run: async () => {
        this.pendingCloses.delete(task);
        try {
          await after;
          await this.close(task, commit, reason);
        } finally {
          resolve();
        }
      } });
    });
    this.pendingCloses.set(task, closed);
    return closed;
  }

  /**
   * A lost assignment (TaskManager.onRevoked with `lost`): the task, revoked already, stops
   * answering as active now (StreamTask.suspend), and rolls back in the queue, after whatever
   * runs for it there. Not at once: a commit of its in flight (its own transaction, exactly-once
   * v1) would otherwise race the rollback — the rollback discarding the producer the commit is
   * using, while the Kafka transaction's outcome (and so what the task has committed) is not
   * known yet. The commit settles first, either way: committed, its store write is whole;
   * failed, TaskRecovery rolls the task back, and this finds nothing left.
   * The same for an open in flight (it gives up once it sees the task revoked, leaving a
   * producer attached that is discarded here) and a rollback's replay.
   */
  suspendLost(task: StreamTask): void {
    task.suspend();
    this.deps.control.enqueue({ key: this.keyOf('suspend', task), group: task.id, run: () => discardProducer(task.rollBackAndSuspend()) });
  }

  requestRollback(task: StreamTask): void {
    this.deps.control.enqueue({
      key: this.keyOf('rollback', task),
      group: task.id,
      run: async () => {
        try {
          await task.rollbackAndReplay();
        } catch (error) {
          await this.deps.recovery.recover(task, error);
        } finally {
          this.deps.scheduleLoop();
        }
      },
    });
  }

  /** `open:0_3#7`: the operation, the task's id (for the queue's logs) and this task object's number. */
  private keyOf(operation: string, task: StreamTask): string {
    let serial = this.serials.get(task);
    if (serial === undefined) this.serials.set(task, (serial = ++this.nextSerial));
    return `${operation}:${task.id}#${serial}`;
  }

  private async open(task: StreamTask): Promise<void> {
    const after = this.reopenAfter.get(task);
    if (after !== undefined) {
      this.reopenAfter.delete(task);
      await after;
    }
    if (task.revoked || this.deps.stopping() || task.state === 'RUNNING' || task.state === 'RESTORING' || task.state === 'CLOSED') return;
    const plan = this.deps.planOf(task);
    if (plan === undefined) throw new TypeError(`no plan for task ${task.id}`);
    task.beginRestore();
    this.openedIn.set(task, this.deps.generation());
    const cancelled = (): boolean => task.revoked || this.deps.stopping();
    try {
      await this.deps.opener.open(task, plan, cancelled);
    } catch (error) {
      if (error instanceof RestoreCancelled || cancelled()) return;
      await this.deps.recovery.recover(task, error);
    }
  }

  /**
   * Closes a task (TaskOpener.close); after a failure, without a last commit. `reason` is what
   * the subscribers of its stores hear (task-close-reason.ts).
   */
  private async close(task: StreamTask, commit: boolean, reason: IqgateError): Promise<void> {
    if (task.state === 'CLOSED') return;
    // With the instance's transaction a close commits nothing (closeCommits false): a task leaves
    // the assignment revoked, and a revoked task is never cut; its last work went out with the
    // cycles before, and what came after is dropped. A graceful stop commits before it closes
    // (TaskManager.commitAll).
    await this.deps.opener.close(task, this.deps.closeCommits && commit && !this.deps.failed(), reason);
    this.openedIn.delete(task);
  }
}
