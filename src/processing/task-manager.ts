/**
 * The task manager: turns the group assignment into tasks, routes fetched records to them,
 * runs the processing loop, schedules commits, and opens/closes/recovers tasks — all state
 * changes through the one ControlQueue, none of its I/O on the processing path.
 *
 * kafkajs rebalances eagerly and offers no awaitable revoke callback (docs/kafkajs-notes.md §1), so:
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
import { discardProducer } from './discard-producer.js';
import { InstanceCommits, PerTaskCommits, type CommitHost, type CommitStrategy } from './commit-strategy.js';
import type { InstanceCommitOutcome } from './instance-committer.js';
import type { ConsumerHandlers, InputRecord, KafkaPorts, TopicPartition } from './ports.js';
import type { ProcessingOptions } from './processing-options.js';
import { RestoreCancelled, type RestoreProgress } from './restore-task-stores.js';
import { FatalTaskError, StreamTask, type CommitOutcome, type CommitStep, type TaskLogger } from './stream-task.js';
import type { Topology } from './topology.js';
import { planSubTopologies, sinkTopicsOf, type SubTopologyPlan } from './sub-topology-plan.js';
import { revokedReason, shutdownReason } from './task-close-reason.js';
import { StandbyTasks, type StandbyTaskView } from './standby-tasks.js';
import { StoreRegistry } from './store-registry.js';
import { TaskOpener } from './task-opener.js';
import { TaskRecovery } from './task-recovery.js';
import { taskIdFor } from './topic-names.js';
import { performance } from 'node:perf_hooks';

export interface TaskManagerLogger extends TaskLogger {
  error(fields: Record<string, unknown>, message: string): void;
  debug(fields: Record<string, unknown>, message: string): void;
}

export interface TaskManagerEvents {
  onCommit?(taskId: string, durationMs: number, records: number, phasesMs?: CommitOutcome['phasesMs']): void;
  /** Exactly-once v2: one commit of the instance's transaction (instead of onCommit per task). */
  onInstanceCommit?(outcome: InstanceCommitOutcome): void;
  onRestoreProgress?(progress: RestoreProgress): void;
  onCommitStep?(step: CommitStep, taskId: string): void;
  /** A processor aborted a task's transaction (ProcessorContext.abortTransaction). */
  onTransactionAborted?(taskId: string, dropped: number, replayed: number): void;
  /** The processing loop's synchronous slices, for the pause figures. */
  onSlice?(durationMs: number, records: number): void;
  onControlWait?(waitMs: number): void;
  /** A non-recoverable error: the runtime stops without committing. */
  onFatal(error: unknown): void;
}

export type ManagerState = 'RUNNING' | 'STOPPING' | 'FAILED';

/** The task manager's own lifecycle (its tasks have theirs: task-state.ts). */
export const MANAGER_TRANSITIONS: Readonly<Record<ManagerState, readonly ManagerState[]>> = {
  RUNNING: ['STOPPING', 'FAILED'],
  STOPPING: ['FAILED'],
  FAILED: [],
};

export interface TaskManagerDeps {
  readonly topology: Topology;
  readonly options: ProcessingOptions;
  readonly ports: KafkaPorts;
  readonly engine: StoreEngine;
  readonly logger: TaskManagerLogger;
  readonly events: TaskManagerEvents;
  readonly clock?: () => number;
  /**
   * The clock of processing's slices and of the pacer's windows (ms, finer than a millisecond:
   * a 3 ms window read from Date.now() ran to 4–6 ms; bench:query:busy). Default: performance.now,
   * or `clock` when one is given (tests' fake clocks).
   */
  readonly sliceClock?: () => number;
  /**
   * When processing may run, asked before each slice and each consumer fetch; default: always,
   * in slices of options.processingSliceMs. The runtime lends part of the event loop to gateway
   * requests while they wait (src/runtime/query-share.ts).
   */
  readonly pacer?: ProcessingPacer;
  /** Partition count of each internal repartition topic (their sinks write packs: options.packRepartition). */
  readonly repartitionPartitions?: ReadonlyMap<string, number>;
  /**
   * The tasks this instance should keep standby replicas of now (standby-placement.ts over the
   * group's owner map); without it, or with options.numStandbyReplicas 0, none.
   */
  readonly standbyPlacement?: () => ReadonlyArray<{ readonly subTopology: number; readonly partition: number }>;
}

/**
 * Records per consumer fetch while the pacer shares the event loop: librdkafka hands 250 over in
 * ~1.2 ms of the main thread (bench:query:busy: 250 kept queries at 0.70× idle and processing at
 * 20–27k records/s; 100 starved processing, 500 made queries wait behind the hand-over). kafkajs
 * takes a finite hint as "fetch small" (its own sizes, src/kafka/group-consumer.ts).
 */
const SHARED_FETCH_RECORDS = 250;

/** Without a pacer: processing never rests, in slices of `sliceMs`. */
function fullSlices(sliceMs: number): ProcessingPacer {
  return { sharing: () => false, budgetMs: () => sliceMs, restMs: () => 1 };
}

/** Paces the processing loop (see TaskManagerDeps.pacer). */
export interface ProcessingPacer {
  /** Whether processing shares the event loop at `now` (the slice clock's ms): its budget is cut into windows. */
  sharing(now: number): boolean;
  /** How long processing may run from `now` (ms, the slice clock's); 0 when it must rest. */
  budgetMs(now: number): number;
  /** How long until processing may run again (ms, ≥ 1), asked when budgetMs() is 0. */
  restMs(now: number): number;
}

export class TaskManager implements ConsumerHandlers {
  private readonly clock: () => number;
  private readonly sliceClock: () => number;
  /** deps.pacer, or processing in full slices of options.processingSliceMs. */
  private readonly pacer: ProcessingPacer;
  private readonly plans: SubTopologyPlan[];
  private readonly planOfTopic = new Map<string, SubTopologyPlan>();
  private readonly sinkTopics: ReadonlyMap<string, string>;
  /** Assigned tasks by id (revoked ones leave this map at once). */
  readonly tasks = new Map<string, StreamTask>();
  private readonly taskOfPartition = new Map<string, StreamTask>();
  private readonly backpressured = new Set<StreamTask>();
  /** Records buffered across tasks, as counted by readyForMore() (cooperative consumers). */
  private bufferedTotal = 0;
  /** Where the next processing slice starts its round over the tasks. */
  private nextTaskIndex = 0;
  readonly control: ControlQueue;
  private loopScheduled = false;
  private commitTimer: NodeJS.Timeout | null = null;
  private lifecycle: ManagerState = 'RUNNING';
  /** The steps of opening and closing a task. */
  private readonly opener: TaskOpener;
  /** What follows a failed commit, open or rollback: back-off and re-open. */
  private readonly recovery: TaskRecovery;
  private unsubscribeCommitNeeded: (() => void) | null = null;
  /** Counts assignments; a task remembers the one it was opened under. */
  private generation = 0;
  private readonly openedIn = new Map<StreamTask, number>();
  /** Lost tasks (onRevoked with `lost`): what their next opening waits for first. */
  private readonly reopenAfter = new WeakMap<StreamTask, Promise<void>>();
  /**
   * KIP-892 back-pressure: set when the store engine reports the process-wide uncommitted bytes
   * past statestore.uncommitted.max.bytes. Processing stops (within the record that crossed it)
   * until commits have freed memory; the engine signals again on the next crossing.
   */
  private overBudgetAt: number | null = null;
  /**
   * How tasks commit, chosen once (commit-strategy.ts): one transaction for the instance that
   * processing does not wait for (exactly-once v2: the ports offer one producer for the instance,
   * with KIP-447 fencing), or a commit per task (per-task transactions on kafkajs, at-least-once).
   */
  private readonly commits: CommitStrategy;
  /** Standby replicas kept here (numStandbyReplicas > 0 with a placement), else null. */
  private readonly standbys: StandbyTasks | null;
  /** Every store partition open here, active and standby, for the query layer. */
  readonly stores = new StoreRegistry();

  constructor(private readonly deps: TaskManagerDeps) {
    this.clock = deps.clock ?? Date.now;
    this.sliceClock = deps.sliceClock ?? deps.clock ?? (() => performance.now());
    this.pacer = deps.pacer ?? fullSlices(deps.options.processingSliceMs);
    const { topology, options } = deps;
    const appId = options.applicationId;
    this.plans = planSubTopologies(topology, appId);
    for (const plan of this.plans) for (const topic of plan.sourceTopics) this.planOfTopic.set(topic, plan);
    this.sinkTopics = sinkTopicsOf(topology, appId);
    this.control = new ControlQueue(options.maxConcurrentControlOps, (op, error) => {
      this.deps.logger.error({ op: op.key, err: error }, 'control operation failed');
    }, this.clock, (waitMs) => deps.events.onControlWait?.(waitMs));
    this.recovery = new TaskRecovery({
      options, ports: deps.ports, logger: deps.logger,
      openedUnderCurrentAssignment: (task) => this.openedIn.get(task) === this.generation,
      reopen: (task) => {
        if (!task.revoked && !this.stopping && this.tasks.get(task.id) === task) this.requestOpen(task);
      },
    });
    const streamProducer = options.processingGuarantee === 'exactly_once' ? deps.ports.streamProducer : undefined;
    const host: CommitHost = {
      tasks: () => this.tasks.values(),
      control: this.control,
      recovery: this.recovery,
      events: deps.events,
      logger: deps.logger,
      clock: this.clock,
      commitIntervalMs: options.commitIntervalMs,
      afterCommit: () => {
        if (this.overBudgetAt !== null && this.deps.engine.uncommittedBytes() < this.overBudgetAt) this.overBudgetAt = null;
        this.scheduleLoop();
      },
      scheduleLoop: () => this.scheduleLoop(),
      failed: () => this.failed,
      enqueueClose: (task, commit, after) => this.enqueueClose(task, commit, after),
    };
    this.commits = streamProducer === undefined
      ? new PerTaskCommits(host)
      : new InstanceCommits(host, { producer: streamProducer, sliceClock: this.sliceClock, pacer: this.pacer, admin: deps.ports.admin });
    this.opener = new TaskOpener({
      options, ports: deps.ports, engine: deps.engine, logger: deps.logger, clock: this.clock,
      onRestoreProgress: (p) => this.deps.events.onRestoreProgress?.(p),
      ...(this.commits.producerFor === undefined ? {} : { createProducer: () => this.commits.producerFor!() }),
    });
    const placement = deps.standbyPlacement;
    this.standbys = options.numStandbyReplicas === 0 || placement === undefined ? null : new StandbyTasks({
      plans: this.plans,
      engine: deps.engine,
      admin: deps.ports.admin,
      reader: deps.ports.changelogReader,
      control: this.control,
      logger: deps.logger,
      clock: this.clock,
      pollMs: options.standbyPollMs,
      wanted: placement,
      isActive: (taskId) => this.tasks.has(taskId),
      registry: this.stores,
    });
  }

  /**
   * RUNNING: tasks open, process and commit. STOPPING: no new records, commits or opens are
   * scheduled (a graceful stop commits and closes what is there). FAILED: a fatal error, or a stop
   * that timed out: nothing more is committed. Illegal transitions throw (MANAGER_TRANSITIONS).
   */
  get state(): ManagerState {
    return this.lifecycle;
  }

  private moveTo(to: ManagerState): void {
    if (this.lifecycle === to) return;
    if (!MANAGER_TRANSITIONS[this.lifecycle].includes(to)) {
      throw new IqgateError('ILLEGAL_STATE_TRANSITION', `task manager: illegal transition ${this.lifecycle} → ${to}`);
    }
    this.lifecycle = to;
  }

  /** No more records, commits or opens are scheduled (stopping or failed). */
  private get stopping(): boolean {
    return this.lifecycle !== 'RUNNING';
  }

  private get failed(): boolean {
    return this.lifecycle === 'FAILED';
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
    this.commits.start();
    this.standbys?.start();
  }

  // ---- consumer callbacks (synchronous, called by the group consumer adapter) ----

  onBatch(tp: TopicPartition, records: readonly InputRecord[]): boolean {
    const task = this.taskOfPartition.get(key(tp));
    if (task === undefined || task.revoked || task.state !== 'RUNNING' || this.stopping) return false;
    task.enqueue(records);
    if (this.deps.ports.consumer.cooperative === true) {
      // Back-pressure through readyForMore(): pausing would make librdkafka drop what it prefetched.
      this.bufferedTotal += records.length;
    } else if (task.buffered() >= this.deps.options.maxBufferedRecordsPerTask && !this.backpressured.has(task)) {
      this.backpressured.add(task);
      this.deps.ports.consumer.pause(task.sourcePartitions);
    }
    this.scheduleLoop();
    return true;
  }

  /**
   * Records buffered across tasks stay under maxBufferedRecordsPerTask per running task. An
   * estimate kept without walking every task per fetch: counted up on arrival, recounted
   * exactly once it says "full".
   */
  readyForMore(): boolean {
    // While the pacer rests, no new records either: handing them over (librdkafka) or decoding
    // the next fetch (kafkajs) is processing too.
    if (this.pacer.budgetMs(this.sliceClock()) <= 0) return false;
    // The eager adapter (kafkajs) has back-pressure by pausing partitions (onBatch), and waits
    // here only a few milliseconds: for it this answers for the pacer alone.
    if (this.deps.ports.consumer.cooperative !== true) return true;
    const limit = this.deps.options.maxBufferedRecordsPerTask * Math.max(1, this.tasks.size);
    if (this.bufferedTotal < limit) return true;
    let total = 0;
    for (const task of this.tasks.values()) total += task.buffered();
    this.bufferedTotal = total;
    return total < limit;
  }

  maxRecordsPerFetch(): number {
    return this.pacer.sharing(this.sliceClock()) ? SHARED_FETCH_RECORDS : Infinity;
  }

  onRebalancing(): void {
    for (const task of this.tasks.values()) if (task.hasUncommitted()) this.requestCommit(task);
  }

  /**
   * Cooperative rebalancing: these partitions go, the others stay and keep processing. Their
   * tasks stop taking records now and close; the consumer gives the partitions up once this
   * resolves. What they processed is committed first (at-least-once, exactly-once v1), or, with
   * the instance's transaction, what the cycles before took of it stays and the rest is dropped
   * (revokeUnderInstanceTransaction).
   *
   * `lost`: the member was already out of the group (its session expired: a broker outage, a
   * frozen process). Nothing can be committed; what the tasks processed since their last commit
   * is dropped and they wait SUSPENDED, stores open — their committed state stays readable, as
   * through a broker outage on kafkajs — until the next assignment re-opens them or closes them.
   */
  async onRevoked(partitions: readonly TopicPartition[], lost: boolean): Promise<void> {
    const revoked: StreamTask[] = [];
    for (const tp of partitions) {
      const task = this.taskOfPartition.get(key(tp));
      if (task === undefined || revoked.includes(task)) continue;
      revoked.push(task);
    }
    if (lost) {
      // The group moved on without us (our session expired: frozen, partitioned away): another
      // member may own these partitions already. What we processed since the last commit is
      // dropped, never committed — the zombie case KIP-447's generation check also guards.
      if (revoked.length > 0) this.deps.logger.warn({ tasks: revoked.map((t) => t.id), fenced: true }, 'partitions lost: this member was out of its group; their uncommitted work is dropped');
      for (const task of revoked) {
        task.revoke(); // takes no records and is not re-opened until assigned again
        this.backpressured.delete(task);
        void discardProducer(task.rollBackAndSuspend());
        // The cycle under way may carry a cut of the task whose offsets it has not sent yet. Opened
        // here again before that cycle ended, the task would read the offsets from before the cut
        // and process its records again.
        const cycleEnded = this.commits.cycleEnded();
        if (cycleEnded !== undefined) this.reopenAfter.set(task, cycleEnded);
      }
      // And those offsets must go out before the member rejoins (librdkafka does once this
      // settles): sent under the generation it rejoins with, KIP-447 would accept them for a
      // partition another member may have read its offsets of already.
      await this.commits.offsetsSettled(revoked);
      return;
    }
    for (const task of revoked) this.forget(task);
    await this.commits.revoke(revoked);
  }

  /** Queues a task's close (closeTask); resolves when it has run, whatever its outcome. `after`: what the close waits for first. */
  private enqueueClose(task: StreamTask, commit: boolean, after?: Promise<void>): Promise<void> {
    // The reason as of now: a stop that begins while the close waits in the queue does not make
    // it a shutdown for the task's store subscribers.
    const reason = this.closeReason(task);
    return new Promise<void>((resolve) => {
      this.control.enqueue({ key: `close:${task.id}`, group: task.id, run: async () => {
        try {
          await after;
          await this.closeTask(task, commit, reason);
        } finally {
          resolve();
        }
      } });
    });
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
      this.forget(task);
      // After the cycle under way (a lost task's cut may be in it): its store write needs the stores.
      void this.enqueueClose(task, true, this.commits.cycleEnded());
    }
    const consumer = this.deps.ports.consumer;
    for (const [id, { plan, partition }] of wanted) {
      // A standby of the task kept here closes first (its close is queued before the open below):
      // the active opens the same stores, caught up to where the standby got.
      this.standbys?.release(id);
      const existing = this.tasks.get(id);
      if (existing !== undefined && existing.revoked) {
        // Lost with its member's session (onRevoked), assigned again: re-open from what is committed.
        existing.reassign();
        consumer.pause(existing.sourcePartitions);
        this.recovery.resetAttempts(existing.id);
        this.requestOpen(existing);
        continue;
      }
      if (existing !== undefined) {
        if (existing.state === 'RUNNING') {
          // Retained: continue from our own position, not the broker-committed one (a
          // cooperative consumer keeps its positions: nothing to do).
          if (!consumer.cooperative) this.seekTo(existing, existing.nextOffsets);
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
      instanceTransaction: this.commits.instanceTransaction,
      ...(options.packRepartition && this.deps.repartitionPartitions ? { packedTopics: this.deps.repartitionPartitions } : {}),
      commitInputOffsets: (offsets) => this.deps.ports.consumer.commitOffsets(offsets),
      ...(this.deps.events.onCommitStep ? { onCommitStep: this.deps.events.onCommitStep } : {}),
      ...(this.deps.events.onTransactionAborted ? { onTransactionAborted: this.deps.events.onTransactionAborted } : {}),
      logger: this.deps.logger,
      onStores: (task, change) => {
        if ('detached' in change) this.stores.unregister(task.id, change.detached);
        // A revoked task keeps its stores until it has closed, but no longer serves them.
        else if (!task.revoked || this.tasks.get(task.id) === task) this.stores.register(task.id, change.attached, { active: true, state: () => task.state });
      },
    });
  }

  // ---- the processing loop ----

  private scheduleLoop(): void {
    if (this.loopScheduled || this.stopping || this.failed) return;
    this.loopScheduled = true;
    setImmediate(() => this.loop());
  }

  /** The pacer said rest: the loop comes back after `ms` (new records do not bring it sooner). */
  private restLoop(ms: number): void {
    this.loopScheduled = true;
    setTimeout(() => this.loop(), ms);
  }

  /**
   * One slice: round-robin over tasks with buffered records until the slice budget is spent,
   * then yield (timers, I/O, queries run between slices). Committing tasks are skipped, not awaited.
   */
  private loop(): void {
    this.loopScheduled = false;
    if (this.stopping || this.failed || this.overBudgetAt !== null) return;
    const started = this.sliceClock();
    const budget = this.pacer.budgetMs(started);
    if (budget <= 0) {
      this.restLoop(this.pacer.restMs(started));
      return;
    }
    const deadline = started + budget;
    let total = 0;
    let more = false;
    try {
      // Round-robin across slices: each slice starts after the task the previous one reached,
      // so a task late in the map is never starved by the ones before it (a slice can end
      // before reaching it: with a backlog, the first tasks alone fill the slice).
      const tasks = [...this.tasks.values()];
      const first = tasks.length === 0 ? 0 : this.nextTaskIndex % tasks.length;
      let progressed = true;
      while (progressed && this.sliceClock() < deadline) {
        progressed = false;
        for (let i = 0; i < tasks.length; i += 1) {
          const index = (first + i) % tasks.length;
          const task = tasks[index]!;
          this.nextTaskIndex = index + 1;
          if (!task.canProcess()) continue;
          const n = task.processSome(200, deadline, this.sliceClock, () => this.overBudgetAt !== null);
          total += n;
          if (task.rollback !== null) this.requestRollback(task);
          if (n > 0) progressed = true;
          if (this.backpressured.has(task) && task.buffered() <= this.deps.options.maxBufferedRecordsPerTask / 2) {
            this.backpressured.delete(task);
            this.deps.ports.consumer.resume(task.sourcePartitions);
          }
          if (this.sliceClock() >= deadline || this.overBudgetAt !== null) break;
        }
        if (this.overBudgetAt !== null) break;
      }
      for (const task of this.tasks.values()) if (task.canProcess()) { more = true; break; }
    } catch (error) {
      this.fail(error);
      return;
    }
    this.deps.events.onSlice?.(this.sliceClock() - started, total);
    if (more) this.scheduleLoop();
  }

  // ---- commits ----

  /** The task leaves the assignment: it takes no more records and is no longer routed to. */
  private forget(task: StreamTask): void {
    task.revoke();
    if (task.stores !== null) this.stores.unregister(task.id, task.stores);
    this.tasks.delete(task.id);
    for (const tp of task.sourcePartitions) this.taskOfPartition.delete(key(tp));
    this.backpressured.delete(task);
  }

  /** Moves the consumer's position of the task's source partitions to `offsets` (topic → offset). */
  private seekTo(task: StreamTask, offsets: ReadonlyMap<string, number>): void {
    for (const tp of task.sourcePartitions) {
      const offset = offsets.get(tp.topic);
      if (offset !== undefined) this.deps.ports.consumer.seek({ ...tp, offset });
    }
  }

  private commitDue(): void {
    if (this.stopping || this.failed) return;
    this.commits.due(this.clock());
  }

  requestCommit(task: StreamTask): void {
    this.commits.request(task);
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
    const after = this.reopenAfter.get(task);
    if (after !== undefined) {
      this.reopenAfter.delete(task);
      await after;
    }
    if (task.revoked || this.stopping || task.state === 'RUNNING' || task.state === 'RESTORING' || task.state === 'CLOSED') return;
    const plan = this.planOfTopic.get(task.sourcePartitions[0]?.topic ?? '');
    if (plan === undefined) throw new TypeError(`no plan for task ${task.id}`);
    task.beginRestore();
    this.openedIn.set(task, this.generation);
    const cancelled = (): boolean => task.revoked || this.stopping;
    try {
      await this.opener.open(task, plan, cancelled);
    } catch (error) {
      if (error instanceof RestoreCancelled || cancelled()) return;
      await this.recovery.recover(task, error);
    }
  }

  /**
   * Closes a task (TaskOpener.close); after a failure, without a last commit. `reason` is what
   * the subscribers of its stores hear (task-close-reason.ts).
   */
  private async closeTask(task: StreamTask, commit: boolean, reason: IqgateError): Promise<void> {
    if (task.state === 'CLOSED') return;
    // With the instance's transaction a close commits nothing: a task leaves the assignment
    // revoked, and a revoked task is never cut (onRevoked); its last work went out with the
    // cycles before, and what came after is dropped. A graceful stop commits before it closes
    // (commitAll).
    await this.opener.close(task, this.commits.closeCommits && commit && !this.failed, reason);
    this.openedIn.delete(task);
  }

  /** A task leaving the assignment: revoked, unless the instance is stopping (a consumer leaving its group revokes all). */
  private closeReason(task: StreamTask): IqgateError {
    return this.stopping ? shutdownReason(task.id, this.failed) : revokedReason(task.id);
  }

  private fail(error: unknown): void {
    if (this.failed) return;
    this.moveTo('FAILED');
    this.deps.logger.error({ err: error }, error instanceof FatalTaskError ? 'processing failed (policy "fail")' : 'task manager failed');
    this.deps.events.onFatal(error);
  }

  /** Stops taking fetched records and scheduling commits (the interval timer, the uncommitted-bytes limit). */
  private stopScheduling(): void {
    if (!this.failed) this.moveTo('STOPPING');
    this.standbys?.stop();
    if (this.commitTimer !== null) clearInterval(this.commitTimer);
    this.unsubscribeCommitNeeded?.();
  }

  /** Commits every task with uncommitted work now, and resolves once that is done (whatever its outcome). */
  async commitNow(): Promise<void> {
    await this.commits.commitNow();
    await this.control.idle();
  }

  /**
   * Graceful: commit what is processed while still in the group, then the caller stops the
   * consumer, then closeAll(). After a failure nothing is committed: tasks are aborted.
   */
  async commitAll(): Promise<void> {
    this.stopScheduling();
    await this.control.idle();
    if (!this.failed) await this.commitNow();
  }

  async closeAll(): Promise<void> {
    this.stopScheduling();
    this.recovery.clearRetryTimers();
    for (const [id, task] of this.tasks) {
      this.control.enqueue({ key: `close:${id}`, group: id, run: () => this.closeTask(task, false, shutdownReason(id, this.failed)) });
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
    this.moveTo('FAILED');
    this.recovery.clearRetryTimers();
  }

  /** What the query layer needs: each local task with its state and stores. */
  localTasks(): StreamTask[] {
    return [...this.tasks.values()];
  }

  /** The standby replicas kept here (none without numStandbyReplicas). */
  standbyTasks(): StandbyTaskView[] {
    return this.standbys?.all() ?? [];
  }
}

function key(tp: TopicPartition): string {
  return `${tp.topic}\u0000${tp.partition}`;
}
