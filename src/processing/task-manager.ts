/**
 * The task manager: turns the group assignment into tasks, routes fetched records to them,
 * runs the processing loop, schedules commits, and opens/closes/recovers tasks — all state
 * changes through the one ControlQueue, none of its I/O on the processing path.
 *
 * kafkajs rebalances eagerly and offers no awaitable revoke callback (KAFKAJS-NOTES §1), so:
 * - on REBALANCING every task with uncommitted work is asked to commit (coalesced);
 * - on the new assignment, revoked tasks stop taking records at once and are closed in the
 *   queue (a last commit is attempted: if the new owner's InitProducerId already fenced us it
 *   fails and the transaction is aborted — either way no record is committed twice);
 * - retained tasks keep their open stores and position (their partitions are sought back to
 *   the in-memory position, since kafkajs re-reads the broker-committed offset);
 * - new tasks are paused synchronously before the next fetch, then opened in the queue:
 *   InitProducerId → open stores → restore the changelog tail → read committed offsets → seek → resume.
 *
 * The steps of opening and closing a task are TaskOpener's; what follows a failure is
 * TaskRecovery's. This file decides when each happens.
 */
import type { StoreEngine } from '../store/types.js';
import { IqgateError } from '../errors.js';
import { ControlQueue } from './control-queue.js';
import type { ConsumerHandlers, InputRecord, KafkaPorts, TopicPartition } from './ports.js';
import type { ProcessingOptions } from './processing-options.js';
import { RestoreCancelled, type RestoreProgress } from './restore-task-stores.js';
import { FatalTaskError, StreamTask, type CommitOutcome, type CommitStep, type TaskLogger } from './stream-task.js';
import type { Topology } from './topology.js';
import { planSubTopologies, sinkTopicsOf, type SubTopologyPlan } from './sub-topology-plan.js';
import { TaskOpener } from './task-opener.js';
import { TaskRecovery } from './task-recovery.js';
import { taskIdFor } from './topic-names.js';

export interface TaskManagerLogger extends TaskLogger {
  error(fields: Record<string, unknown>, message: string): void;
  debug(fields: Record<string, unknown>, message: string): void;
}

export interface TaskManagerEvents {
  onCommit?(taskId: string, durationMs: number, records: number, phasesMs?: CommitOutcome['phasesMs']): void;
  onRestoreProgress?(progress: RestoreProgress): void;
  onCommitStep?(step: CommitStep, taskId: string): void;
  /** The processing loop's synchronous slices, for the pause figures. */
  onSlice?(durationMs: number, records: number): void;
  onControlWait?(waitMs: number): void;
  /** A non-recoverable error: the runtime stops without committing. */
  onFatal(error: unknown): void;
}

export interface TaskManagerDeps {
  readonly topology: Topology;
  readonly options: ProcessingOptions;
  readonly ports: KafkaPorts;
  readonly engine: StoreEngine;
  readonly logger: TaskManagerLogger;
  readonly events: TaskManagerEvents;
  readonly clock?: () => number;
}

export class TaskManager implements ConsumerHandlers {
  private readonly clock: () => number;
  private readonly plans: SubTopologyPlan[];
  private readonly planOfTopic = new Map<string, SubTopologyPlan>();
  private readonly sinkTopics: ReadonlyMap<string, string>;
  /** Assigned tasks by id (revoked ones leave this map at once). */
  readonly tasks = new Map<string, StreamTask>();
  private readonly taskOfPartition = new Map<string, StreamTask>();
  private readonly backpressured = new Set<StreamTask>();
  readonly control: ControlQueue;
  private loopScheduled = false;
  private commitTimer: NodeJS.Timeout | null = null;
  private stopping = false;
  private failed = false;
  /** The steps of opening and closing a task. */
  private readonly opener: TaskOpener;
  /** What follows a failed commit, open or rollback: back-off and re-open. */
  private readonly recovery: TaskRecovery;
  private unsubscribeCommitNeeded: (() => void) | null = null;
  /** Counts assignments; a task remembers the one it was opened under. */
  private generation = 0;
  private readonly openedIn = new Map<StreamTask, number>();
  /**
   * KIP-892 back-pressure: set when the store engine reports the process-wide uncommitted bytes
   * past statestore.uncommitted.max.bytes. Processing stops (within the record that crossed it)
   * until commits have freed memory; the engine signals again on the next crossing.
   */
  private overBudgetAt: number | null = null;

  constructor(private readonly deps: TaskManagerDeps) {
    this.clock = deps.clock ?? Date.now;
    const { topology, options } = deps;
    const appId = options.applicationId;
    this.plans = planSubTopologies(topology, appId);
    for (const plan of this.plans) for (const topic of plan.sourceTopics) this.planOfTopic.set(topic, plan);
    this.sinkTopics = sinkTopicsOf(topology, appId);
    this.control = new ControlQueue(options.maxConcurrentControlOps, (op, error) => {
      this.deps.logger.error({ op: op.key, err: error }, 'control operation failed');
    }, this.clock, (waitMs) => deps.events.onControlWait?.(waitMs));
    this.opener = new TaskOpener({
      options, ports: deps.ports, engine: deps.engine, logger: deps.logger, clock: this.clock,
      onRestoreProgress: (p) => this.deps.events.onRestoreProgress?.(p),
    });
    this.recovery = new TaskRecovery({
      options, ports: deps.ports, logger: deps.logger,
      openedUnderCurrentAssignment: (task) => this.openedIn.get(task) === this.generation,
      reopen: (task) => {
        if (!task.revoked && !this.stopping && this.tasks.get(task.id) === task) this.requestOpen(task);
      },
    });
  }

  /** Failed commit/open attempts of a task since its last commit or new assignment (its back-off grows with them). */
  failedAttempts(taskId: string): number {
    return this.recovery.attempts(taskId);
  }

  /** Every topic the consumer subscribes to (sources, repartition topics included). */
  sourceTopics(): string[] {
    return [...this.planOfTopic.keys()].sort();
  }

  start(): void {
    const interval = Math.max(5, Math.min(50, Math.floor(this.deps.options.commitIntervalMs / 2)));
    this.commitTimer = setInterval(() => this.commitDue(), interval);
    this.commitTimer.unref();
    // KIP-892: past the process-wide uncommitted-bytes limit, commit early.
    this.unsubscribeCommitNeeded = this.deps.engine.onCommitNeeded((bytes) => {
      this.overBudgetAt = bytes;
      for (const task of this.tasks.values()) if (task.hasUncommitted()) this.requestCommit(task);
    });
  }

  // ---- consumer callbacks (synchronous, called by the group consumer adapter) ----

  onBatch(tp: TopicPartition, records: readonly InputRecord[]): boolean {
    const task = this.taskOfPartition.get(key(tp));
    if (task === undefined || task.revoked || task.state !== 'RUNNING' || this.stopping) return false;
    task.enqueue(records);
    if (task.buffered() >= this.deps.options.maxBufferedRecordsPerTask && !this.backpressured.has(task)) {
      this.backpressured.add(task);
      this.deps.ports.consumer.pause(task.sourcePartitions);
    }
    this.scheduleLoop();
    return true;
  }

  onRebalancing(): void {
    for (const task of this.tasks.values()) if (task.hasUncommitted()) this.requestCommit(task);
  }

  onCrash(error: unknown): void {
    this.fail(new IqgateError('BROKER_UNAVAILABLE', 'the group consumer stopped', { cause: error, retriable: true }));
  }

  onAssignment(assignment: readonly TopicPartition[]): void {
    this.generation += 1;
    const wanted = new Map<string, { plan: SubTopologyPlan; partition: number }>();
    for (const tp of assignment) {
      const plan = this.planOfTopic.get(tp.topic);
      if (plan !== undefined) wanted.set(taskIdFor(plan.id, tp.partition), { plan, partition: tp.partition });
    }
    for (const [id, task] of [...this.tasks]) {
      if (wanted.has(id)) continue;
      task.revoked = true;
      this.tasks.delete(id);
      for (const tp of task.sourcePartitions) this.taskOfPartition.delete(key(tp));
      this.backpressured.delete(task);
      this.control.enqueue({ key: `close:${id}`, group: id, run: () => this.closeTask(task, true) });
    }
    const consumer = this.deps.ports.consumer;
    for (const [id, { plan, partition }] of wanted) {
      const existing = this.tasks.get(id);
      if (existing !== undefined) {
        if (existing.state === 'RUNNING') {
          // Retained: continue from our own position, not the broker-committed one.
          for (const tp of existing.sourcePartitions) {
            const offset = existing.nextOffsets.get(tp.topic);
            if (offset !== undefined) consumer.seek({ ...tp, offset });
          }
          if (this.backpressured.has(existing)) consumer.pause(existing.sourcePartitions);
        } else {
          consumer.pause(existing.sourcePartitions);
          if (existing.state === 'SUSPENDED') {
            // Waiting to be re-opened (fenced and waiting for this rebalance, or failed while the
            // broker was away and now the group is back): now, and backing off from the start,
            // not after the back-off a long outage built up (up to startupRetryMaxMs).
            this.recovery.resetAttempts(existing.id);
            this.requestOpen(existing);
          }
        }
        continue;
      }
      const task = this.createTask(plan, partition);
      this.tasks.set(id, task);
      for (const tp of task.sourcePartitions) this.taskOfPartition.set(key(tp), task);
      consumer.pause(task.sourcePartitions); // before the next fetch: nothing is read until the task is open
      this.requestOpen(task);
    }
    this.deps.logger.info({ tasks: [...this.tasks.keys()].length, assigned: assignment.length }, 'assignment applied');
  }

  private createTask(plan: SubTopologyPlan, partition: number): StreamTask {
    const { options } = this.deps;
    return new StreamTask({
      id: taskIdFor(plan.id, partition),
      partition,
      topology: this.deps.topology,
      sourcesByTopic: plan.sourcesByTopic,
      sinkTopics: this.sinkTopics,
      changelogTopics: plan.changelogTopics,
      exactlyOnce: options.processingGuarantee === 'exactly_once',
      deserializationErrors: options.deserializationErrors,
      processingErrors: options.processingErrors,
      deadLetterTopic: options.deadLetterTopic,
      eagerSendRecords: options.sendAheadRecords,
      commitInputOffsets: (offsets) => this.deps.ports.consumer.commitOffsets(offsets),
      ...(this.deps.events.onCommitStep ? { onCommitStep: this.deps.events.onCommitStep } : {}),
      logger: this.deps.logger,
    });
  }

  // ---- the processing loop ----

  private scheduleLoop(): void {
    if (this.loopScheduled || this.stopping || this.failed) return;
    this.loopScheduled = true;
    setImmediate(() => this.loop());
  }

  /**
   * One slice: round-robin over tasks with buffered records until the slice budget is spent,
   * then yield (timers, I/O, queries run between slices). Committing tasks are skipped, not awaited.
   */
  private loop(): void {
    this.loopScheduled = false;
    if (this.stopping || this.failed || this.overBudgetAt !== null) return;
    const started = this.clock();
    const deadline = started + this.deps.options.processingSliceMs;
    let total = 0;
    let more = false;
    try {
      let progressed = true;
      while (progressed && this.clock() < deadline) {
        progressed = false;
        for (const task of this.tasks.values()) {
          if (!task.canProcess()) continue;
          const n = task.processSome(200, deadline, this.clock, () => this.overBudgetAt !== null);
          total += n;
          if (task.rollback !== null) this.requestRollback(task);
          if (n > 0) progressed = true;
          if (this.backpressured.has(task) && task.buffered() <= this.deps.options.maxBufferedRecordsPerTask / 2) {
            this.backpressured.delete(task);
            this.deps.ports.consumer.resume(task.sourcePartitions);
          }
          if (this.clock() >= deadline || this.overBudgetAt !== null) break;
        }
        if (this.overBudgetAt !== null) break;
      }
      for (const task of this.tasks.values()) if (task.canProcess()) { more = true; break; }
    } catch (error) {
      this.fail(error);
      return;
    }
    this.deps.events.onSlice?.(this.clock() - started, total);
    if (more) this.scheduleLoop();
  }

  // ---- commits ----

  private commitDue(): void {
    if (this.stopping || this.failed) return;
    const now = this.clock();
    const interval = this.deps.options.commitIntervalMs;
    for (const task of this.tasks.values()) {
      if (task.state === 'RUNNING' && !task.committing && task.hasUncommitted() && now - task.lastCommitAt >= interval) this.requestCommit(task);
    }
  }

  requestCommit(task: StreamTask): void {
    this.control.enqueue({ key: `commit:${task.id}`, group: task.id, run: () => this.commitTask(task) });
  }

  private async commitTask(task: StreamTask): Promise<void> {
    if (task.state !== 'RUNNING' || !task.hasUncommitted() || this.failed) return;
    try {
      const outcome = await task.commit(this.clock);
      if (outcome.committed) {
        this.recovery.resetAttempts(task.id);
        this.deps.events.onCommit?.(task.id, outcome.durationMs, outcome.records, outcome.phasesMs);
      }
    } catch (error) {
      await this.recovery.recover(task, error);
    } finally {
      if (this.overBudgetAt !== null && this.deps.engine.uncommittedBytes() < this.overBudgetAt) this.overBudgetAt = null;
      this.scheduleLoop();
    }
  }

  private requestRollback(task: StreamTask): void {
    this.control.enqueue({
      key: `rollback:${task.id}`,
      group: task.id,
      run: async () => {
        try {
          await task.rollbackAndReplay();
        } catch (error) {
          await this.recovery.recover(task, error);
        } finally {
          this.scheduleLoop();
        }
      },
    });
  }

  // ---- open / close ----

  private requestOpen(task: StreamTask): void {
    this.control.enqueue({ key: `open:${task.id}`, group: task.id, run: () => this.openTask(task) });
  }

  private async openTask(task: StreamTask): Promise<void> {
    if (task.revoked || this.stopping || task.state === 'RUNNING' || task.state === 'RESTORING' || task.state === 'CLOSED') return;
    const plan = this.planOfTopic.get(task.sourcePartitions[0]?.topic ?? '');
    if (plan === undefined) throw new TypeError(`no plan for task ${task.id}`);
    task.transitionTo('RESTORING');
    this.openedIn.set(task, this.generation);
    const cancelled = (): boolean => task.revoked || this.stopping;
    try {
      await this.opener.open(task, plan, cancelled);
    } catch (error) {
      if (error instanceof RestoreCancelled || cancelled()) return;
      await this.recovery.recover(task, error);
    }
  }

  /** Closes a task (TaskOpener.close); after a failure, without a last commit. */
  private async closeTask(task: StreamTask, commit: boolean): Promise<void> {
    if (task.state === 'CLOSED') return;
    await this.opener.close(task, commit && !this.failed);
    this.openedIn.delete(task);
  }

  private fail(error: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.deps.logger.error({ err: error }, error instanceof FatalTaskError ? 'processing failed (policy "fail")' : 'task manager failed');
    this.deps.events.onFatal(error);
  }

  /** Stops taking fetched records and scheduling commits (the interval timer, the uncommitted-bytes limit). */
  private stopScheduling(): void {
    this.stopping = true;
    if (this.commitTimer !== null) clearInterval(this.commitTimer);
    this.unsubscribeCommitNeeded?.();
  }

  /**
   * Graceful: commit what is processed while still in the group, then the caller stops the
   * consumer, then closeAll(). After a failure nothing is committed: tasks are aborted.
   */
  async commitAll(): Promise<void> {
    this.stopScheduling();
    await this.control.idle();
    if (!this.failed) {
      for (const task of this.tasks.values()) {
        if (task.hasUncommitted()) this.control.enqueue({ key: `commit:${task.id}`, group: task.id, run: () => this.commitTask(task) });
      }
      await this.control.idle();
    }
  }

  async closeAll(): Promise<void> {
    this.stopScheduling();
    this.recovery.clearRetryTimers();
    for (const [id, task] of this.tasks) {
      this.control.enqueue({ key: `close:${id}`, group: id, run: () => this.closeTask(task, false) });
    }
    await this.control.idle();
    this.tasks.clear();
    this.taskOfPartition.clear();
  }

  /**
   * A stop that timed out: no more processing, commits or re-opens; the caller closes the
   * clients and the store engine under whatever is still in flight.
   */
  abandon(): void {
    this.stopScheduling();
    this.failed = true;
    this.recovery.clearRetryTimers();
  }

  /** What the query layer needs: each local task with its state and stores. */
  localTasks(): StreamTask[] {
    return [...this.tasks.values()];
  }
}

function key(tp: TopicPartition): string {
  return `${tp.topic}\u0000${tp.partition}`;
}
