/**
 * The task manager: turns the group assignment into tasks, routes fetched records to them,
 * runs the processing loop, schedules commits, and opens/closes/recovers tasks — all state
 * changes through the one ControlQueue, none of its I/O on the processing path. It wires the
 * units that do each and owns the instance's lifecycle (RUNNING, STOPPING, FAILED):
 * - TaskAssignment: what a rebalance does to the tasks (task-assignment.ts);
 * - ProcessingLoop: the slices that run buffered records, and back-pressure;
 * - CommitStrategy: how tasks commit (per task, or one transaction for the instance);
 * - TaskOperations: opening, closing and rolling back one task (steps: TaskOpener; after a
 *   failure: TaskRecovery);
 * - StandbyTasks: the standby replicas kept here.
 */
import { IqgateError } from '../errors.js';
import { ControlQueue } from './control-queue.js';
import { InstanceCommits, PerTaskCommits, type CommitHost, type CommitStrategy } from './commit-strategy.js';
import type { ConsumerHandlers, InputRecord, TopicPartition } from './ports.js';
import { FatalTaskError, StreamTask } from './stream-task.js';
import { planSubTopologies, sinkTopicsOf, type SubTopologyPlan } from './sub-topology-plan.js';
import { StandbyTasks, type StandbyTaskView } from './standby-tasks.js';
import { JoinWarmth, tasksWithState, warmUp, type WarmupOutcome } from './join-warmup.js';
import { StoreRegistry } from './store-registry.js';
import { TaskOpener } from './task-opener.js';
import { TaskRecovery } from './task-recovery.js';
import { TaskOperations } from './task-operations.js';
import { fullSlices, ProcessingLoop } from './processing-loop.js';
import { PreparedProducers } from './prepared-producers.js';
import { taskIdFor } from './topic-names.js';
import { TaskAssignment } from './task-assignment.js';
import { MANAGER_TRANSITIONS, type ManagerState, type TaskManagerDeps } from './task-manager-contract.js';
import { performance } from 'node:perf_hooks';

export type { ProcessingPacer } from './processing-loop.js';
export { MANAGER_TRANSITIONS, type ManagerState, type TaskManagerDeps, type TaskManagerEvents, type TaskManagerLogger } from './task-manager-contract.js';

export class TaskManager implements ConsumerHandlers {
  private readonly clock: () => number;
  private readonly sliceClock: () => number;
  private readonly plans: SubTopologyPlan[];
  private readonly planOfTopic = new Map<string, SubTopologyPlan>();
  private readonly sinkTopics: ReadonlyMap<string, string>;
  /** Assigned tasks by id (revoked ones leave this map at once). */
  private readonly tasks = new Map<string, StreamTask>();
  /** What a rebalance does to the tasks. */
  private readonly assignment: TaskAssignment;
  readonly control: ControlQueue;
  /** Runs the tasks' buffered records in slices on the event loop. */
  private readonly processing: ProcessingLoop;
  private commitTimer: NodeJS.Timeout | null = null;
  private lifecycle: ManagerState = 'RUNNING';
  /** Opening, closing and rolling back a task, in the control queue. */
  private readonly ops: TaskOperations;
  /** What follows a failed commit, open or rollback: back-off and re-open. */
  private readonly recovery: TaskRecovery;
  private unsubscribeCommitNeeded: (() => void) | null = null;
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
  /** Standby replicas kept here (numStandbyReplicas > 0 with a placement, or warm joins), else null. */
  private readonly standbys: StandbyTasks | null;
  /** The tasks kept warm for a join (warmUp), until assignments end it. */
  private readonly warmth: JoinWarmth;
  private readonly preparedProducers: PreparedProducers;
  /** Every store partition open here, active and standby, for the query layer. */
  readonly stores = new StoreRegistry();

  constructor(private readonly deps: TaskManagerDeps) {
    this.clock = deps.clock ?? Date.now;
    this.sliceClock = deps.sliceClock ?? deps.clock ?? (() => performance.now());
    const pacer = deps.pacer ?? fullSlices(deps.options.processingSliceMs);
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
      openedUnderCurrentAssignment: (task) => this.ops.openedUnderCurrentAssignment(task),
      reopen: (task) => {
        if (!task.revoked && !this.stopping && this.tasks.get(task.id) === task) this.ops.requestOpen(task);
      },
      fatal: (error) => this.fail(error),
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
      enqueueClose: (task, commit, after) => this.ops.requestClose(task, commit, after),
    };
    this.commits = streamProducer === undefined
      ? new PerTaskCommits(host)
      : new InstanceCommits(host, { producer: streamProducer, sliceClock: this.sliceClock, pacer, admin: deps.ports.admin });
    const opener = new TaskOpener({
      options, ports: deps.ports, engine: deps.engine, logger: deps.logger, clock: this.clock,
      onRestoreProgress: (p) => this.deps.events.onRestoreProgress?.(p),
      ...(this.commits.producerFor === undefined ? {} : { createProducer: () => this.commits.producerFor!() }),
      takeStandbyStores: (taskId) => this.standbys?.takeHandoff(taskId),
      dropStandbyStores: async (taskId) => this.standbys?.dropHandoff(taskId),
    });
    this.ops = new TaskOperations({
      control: this.control, opener, recovery: this.recovery,
      planOf: (task) => this.planOfTopic.get(task.sourcePartitions[0]?.topic ?? ''),
      generation: () => this.assignment.generation,
      stopping: () => this.stopping,
      failed: () => this.failed,
      closeCommits: this.commits.closeCommits,
      scheduleLoop: () => this.scheduleLoop(),
    });
    this.processing = new ProcessingLoop({
      tasks: () => this.tasks,
      consumer: deps.ports.consumer,
      maxBufferedRecordsPerTask: options.maxBufferedRecordsPerTask,
      pacer,
      sliceClock: this.sliceClock,
      halted: () => this.stopping,
      overBudget: () => this.overBudgetAt !== null,
      onRollback: (task) => this.ops.requestRollback(task),
      onError: (error) => this.fail(error),
      onSlice: (durationMs, records) => deps.events.onSlice?.(durationMs, records),
    });
    this.assignment = new TaskAssignment({
      tasks: this.tasks, planOfTopic: this.planOfTopic,
      create: (plan, partition) => this.createTask(plan, partition),
      consumer: deps.ports.consumer, ops: this.ops, recovery: this.recovery, commits: this.commits,
      processing: this.processing, stores: this.stores, logger: deps.logger,
      // The standby's stores go to the active open (TaskOpener takes them): no gap in what queries find.
      releaseStandby: (taskId) => this.standbys?.release(taskId, true),
    });
    this.warmth = new JoinWarmth(this.clock, () => this.preparedProducers.warmupOver());
    this.preparedProducers = new PreparedProducers({
      producers: deps.ports.producers, applicationId: appId, plans: this.plans,
      perTaskTransactions: options.processingGuarantee === 'exactly_once' && !this.commits.instanceTransaction,
    });
    const placement = options.numStandbyReplicas === 0 ? undefined : deps.standbyPlacement;
    const hasState = this.plans.some((plan) => plan.changelogTopics.size > 0);
    this.standbys = placement === undefined && (options.warmupTimeoutMs === 0 || !hasState) ? null : new StandbyTasks({
      plans: this.plans,
      engine: deps.engine,
      admin: deps.ports.admin,
      reader: deps.ports.changelogReader,
      control: this.control,
      logger: deps.logger,
      clock: this.clock,
      pollMs: options.standbyPollMs,
      // While warming up for a join, every task with state; then the placement's (join-warmup.ts).
      wanted: () => this.warmth.wanted() ?? placement?.() ?? [],
      isActive: (taskId) => this.tasks.has(taskId),
      activeOpening: () => this.anyOpening(),
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
    const task = this.assignment.taskOf(tp);
    if (task === undefined || task.revoked || task.state !== 'RUNNING' || this.stopping) return false;
    this.processing.accept(task, records);
    return true;
  }

  readyForMore(): boolean {
    return this.processing.readyForMore();
  }

  maxRecordsPerFetch(): number {
    return this.processing.maxRecordsPerFetch();
  }

  onRebalancing(): void {
    for (const task of this.tasks.values()) if (task.hasUncommitted()) this.requestCommit(task);
  }

  /** Cooperative rebalancing: these partitions go (TaskAssignment.revoke). `lost`: the member was already out of its group. */
  onRevoked(partitions: readonly TopicPartition[], lost: boolean): Promise<void> {
    return this.assignment.revoke(partitions, lost);
  }

  onCrash(error: unknown): void {
    this.fail(new IqgateError('BROKER_UNAVAILABLE', 'the group consumer stopped', { cause: error, retriable: true }));
  }

  onAssignment(assignment: readonly TopicPartition[]): void {
    this.assignment.assign(assignment);
    this.warmth.assigned(assignment.length);
    if (this.warmth.wanted() === null) this.preparedProducers.assigned(assignment);
  }

  /**
   * Before the consumer joins: tails every task with state (`partitionsOfStore`: each store's
   * partition count) as a standby until each is within acceptableRecoveryLag of its changelog's
   * end, or warmupTimeoutMs (join-warmup.ts). Resolves with where it got; never throws.
   */
  async warmUp(partitionsOfStore: ReadonlyMap<string, number>, cancelled: () => boolean): Promise<WarmupOutcome | null> {
    const standbys = this.standbys;
    const { options } = this.deps;
    if (standbys === null || options.warmupTimeoutMs === 0) return null;
    const warming = tasksWithState(this.plans, partitionsOfStore);
    this.warmth.begin(warming);
    this.preparedProducers.warming(warming);
    return warmUp({
      round: () => standbys.catchUp(),
      timeoutMs: options.warmupTimeoutMs,
      acceptableLag: options.acceptableRecoveryLag,
      clock: this.clock,
      cancelled: () => cancelled() || this.stopping,
      pauseMs: options.standbyPollMs,
    });
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

  private anyOpening(): boolean {
    for (const task of this.tasks.values()) if (task.state === 'CREATED' || task.state === 'RESTORING') return true;
    return false;
  }

  private scheduleLoop(): void {
    this.processing.schedule();
  }

  private commitDue(): void {
    if (this.stopping || this.failed) return;
    this.commits.due(this.clock());
  }

  requestCommit(task: StreamTask): void {
    this.commits.request(task);
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
    this.standbys?.pause();
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
    this.standbys?.stop();
    for (const task of this.tasks.values()) void this.ops.requestClose(task, false);
    await this.control.idle();
    this.assignment.clear();
  }

  /**
   * A stop that timed out: no more processing, commits or re-opens; the caller closes the
   * clients and the store engine under whatever is still in flight.
   */
  abandon(): void {
    this.stopScheduling();
    this.moveTo('FAILED');
    this.recovery.clearRetryTimers();
    this.standbys?.stop();
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
