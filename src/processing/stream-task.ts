/**
 * One task: one partition of one sub-topology (co-partitioned source topics share it). It owns
 * its store partitions (TaskStores), its producer and transaction, its input position, and a
 * small inbox of fetched records. Processing is synchronous (processors and store reads are
 * sync); only the commit awaits I/O, and a task processes on while its commit is in flight (the
 * commit cut the transaction first: TaskCommit.commit).
 *
 * StreamTask is the lifecycle (task-state.ts), what is attached to it, and its inbox; it checks
 * its state and hands the work to the units beside it: TaskProcessor runs records into the open
 * transaction (error policies, rollbacks and replays), TaskCommit takes that transaction into
 * Kafka and the store (the commit protocol, exactly-once v2's cuts and rewinds). Beside them:
 * RecordInbox holds the fetched records, TaskNodeRunner is what the processors see (contexts,
 * typed stores, the current record), TransactionInputs and TransactionOutput hold the records
 * the transaction read and wrote, and changelog-record.ts / dead-letter-record.ts are the
 * formats it writes.
 */
import type { CommitGroup } from '../store/commit-group.js';
import type { TaskStores } from '../store/types.js';
import type { InputRecord, TaskProducer, TopicPartition } from './ports.js';
import { TransactionOutput } from './transaction-output.js';
import { RecordInbox } from './record-inbox.js';
import { TaskProcessor, type TaskProcessorConfig } from './task-processor.js';
import { TaskCommit, type CommitOutcome, type CutContent, type TaskCommitConfig } from './task-commit.js';
import { transition, type TaskState } from './task-state.js';

export { COMMIT_STEPS, type CommitOutcome, type CommitStep } from './task-commit.js';
export { FatalTaskError } from './task-error-policy.js';
export type { TaskLogger } from './task-logger.js';

/** A task's configuration: what its processor and its commit side need (declared there), and its own. */
export interface StreamTaskConfig extends TaskProcessorConfig, TaskCommitConfig {
  /** Repartition topics this task writes as packs (record-pack.ts): topic → partition count. */
  readonly packedTopics?: ReadonlyMap<string, number>;
  /** Its stores were attached (`attached`) or these were detached: the task manager's StoreRegistry follows. */
  readonly onStores?: (task: StreamTask, change: { readonly attached: TaskStores } | { readonly detached: TaskStores }) => void;
}

/**
 * What one task puts into the instance's transaction (exactly-once v2): everything it did up to
 * the cut. Processing goes on after the cut into fresh buffers; the cut is settled by
 * completeCut() once the transaction committed, or abandonCut() when it failed.
 */
export interface TaskCut extends CutContent {
  readonly task: StreamTask;
}

export class StreamTask {
  private currentState: TaskState = 'CREATED';
  readonly id: string;
  readonly partition: number;
  readonly sourcePartitions: readonly TopicPartition[];
  private attachedProducer: TaskProducer | null = null;
  private attachedStores: TaskStores | null = null;
  /** Set once the assignment no longer includes this task: it takes no more records. */
  private isRevoked = false;
  private readonly inbox = new RecordInbox();
  /** Runs records into the open transaction. */
  private readonly processor: TaskProcessor;
  /** Commits the open transaction, and remembers the last commit. */
  private readonly commits: TaskCommit;
  private unsubscribeFlush: (() => void) | null = null;

  constructor(private readonly config: StreamTaskConfig) {
    this.id = config.id;
    this.partition = config.partition;
    this.sourcePartitions = [...config.sourcesByTopic.keys()].map((topic) => ({ topic, partition: config.partition }));
    // changelog topic → store name, for this task's stores (the output learns their ends, the commit counts them).
    const changelogStores = new Map<string, string>();
    for (const [store, topic] of config.changelogTopics) changelogStores.set(topic, store);
    const output = new TransactionOutput(changelogStores, config.partition, config.packedTopics);
    this.processor = new TaskProcessor(config, output, { producer: () => this.producer, stores: () => this.stores });
    this.commits = new TaskCommit(config, this.processor, output, changelogStores);
  }

  /** Where the task is in its lifecycle (task-state.ts); changed only through the methods below. */
  get state(): TaskState {
    return this.currentState;
  }

  get producer(): TaskProducer | null {
    return this.attachedProducer;
  }

  get stores(): TaskStores | null {
    return this.attachedStores;
  }

  /** Next input offset expected per source topic (the consumed position, committed at the next commit). */
  get nextOffsets(): Map<string, number> {
    return this.processor.nextOffsets;
  }

  /** The assignment no longer includes this task (or its member lost it): it takes no more records and is not re-opened. */
  get revoked(): boolean {
    return this.isRevoked;
  }

  /** The task's own commit (exactly-once v1, at-least-once) is in flight; it processes on meanwhile. */
  get committing(): boolean {
    return this.commits.committing;
  }

  get lastCommitAt(): number {
    return this.commits.lastCommitAt;
  }

  /** A processor failed after records of this transaction went out: the transaction must be aborted before the replay. */
  get rollback(): { readonly record: InputRecord; readonly failed: InputRecord; readonly error: unknown } | null {
    return this.processor.rollback;
  }

  /** Leaves the assignment: no more records, no re-open. */
  revoke(): void {
    this.isRevoked = true;
  }

  /** Assigned again after it was lost (onRevoked with `lost`: its member's session ran out). */
  reassign(): void {
    this.isRevoked = false;
  }

  /**
   * Stops being RUNNING at once, holding on to everything: its member lost the assignment, so it
   * must not answer as active any more, but a commit of its may be in flight, which settles
   * before anything is dropped (rollBackAndSuspend, in the control queue after it:
   * TaskOperations.suspendLost). A task that is not RUNNING is left as it is.
   */
  suspend(): void {
    if (this.currentState === 'RUNNING') this.transitionTo('SUSPENDED');
  }

  /**
   * Rolls back to the last commit and waits SUSPENDED: everything uncommitted is dropped, and the
   * producer is handed to the caller to discard (TaskRecovery, a lost assignment).
   */
  rollBackAndSuspend(): TaskProducer | null {
    const producer = this.attachedProducer;
    this.attachedProducer = null;
    this.dropUncommitted();
    if (this.currentState === 'RUNNING' || this.currentState === 'RESTORING') this.transitionTo('SUSPENDED');
    return producer;
  }

  /** Opening (or re-opening after a suspension): its stores restore before it processes. */
  beginRestore(): void {
    this.transitionTo('RESTORING');
  }

  /** Restored and sought to its committed offsets: it takes records now. */
  markRunning(): void {
    this.transitionTo('RUNNING');
  }

  /** Closed for good (its producer and stores detached by the caller): a running or restoring task passes SUSPENDED on the way, as Kafka Streams' tasks do. */
  markClosed(): void {
    if (this.currentState === 'RUNNING' || this.currentState === 'RESTORING') this.transitionTo('SUSPENDED');
    this.transitionTo('CLOSED');
  }

  /** Every state change goes through the transition table (task-state.ts); callers say what they mean instead. */
  private transitionTo(to: TaskState): void {
    this.currentState = transition(this.id, this.currentState, to);
  }

  /** Attaches the opened stores and producer (on open, or again after re-initialisation). */
  attach(producer: TaskProducer, stores: TaskStores): void {
    this.attachedProducer = producer;
    this.attachedStores = stores;
    this.processor.forgetStores();
    this.unsubscribeFlush?.();
    this.unsubscribeFlush = stores.onFlush((changes) => this.processor.onFlushed(changes));
    this.config.onStores?.(this, { attached: stores });
  }

  detach(): { producer: TaskProducer | null; stores: TaskStores | null } {
    const detached = { producer: this.producer, stores: this.stores };
    this.unsubscribeFlush?.();
    this.unsubscribeFlush = null;
    this.attachedProducer = null;
    this.attachedStores = null;
    this.dropUncommitted();
    if (detached.stores !== null) this.config.onStores?.(this, { detached: detached.stores });
    return detached;
  }

  /** Starts processing at the committed input offsets; drops whatever was buffered. */
  startAt(offsets: ReadonlyMap<string, number>, now: number): void {
    this.processor.moveTo(offsets);
    this.commits.startAt(offsets, now);
    this.inbox.clear();
  }

  /**
   * Takes fetched records. Records before the expected offset are dropped: after a rebalance
   * kafkajs re-reads retained partitions from the broker-committed offset (docs/kafkajs-notes.md §2),
   * which is behind our position while a transaction is open.
   */
  enqueue(records: readonly InputRecord[]): void {
    this.inbox.add(records, (topic) => this.nextOffsets.get(topic));
  }

  /**
   * Kafka records waiting to be processed (a pack counts once): what back-pressure bounds, in the
   * unit the consumer fetches. Counting a pack's entries instead paused kafkajs' partitions after
   * every fetch (eight packs make 1,000 entries): bench:processing eos.kafkajs 9k lines/s against
   * 17–22k (docs/engine.md, "Packed repartition topics").
   */
  buffered(): number {
    return this.inbox.size();
  }

  hasUncommitted(): boolean {
    return this.processor.dirty;
  }

  canProcess(): boolean {
    return this.state === 'RUNNING' && !this.revoked && this.rollback === null && this.commits.processingAllowed && this.buffered() > 0;
  }

  uncommittedBytes(): number {
    return this.stores?.uncommittedBytes() ?? 0;
  }

  /**
   * Processes buffered records until `deadline` (ms, from `clock`) or `maxRecords`. Returns the
   * number processed. A processor error under skip/dead-letter rolls the task back to its last
   * commit and replays the transaction's records without the bad one, so nothing of a failed
   * record is ever committed half-way; under `fail` it throws FatalTaskError.
   */
  processSome(maxRecords: number, deadline: number, clock: () => number, shouldStop: () => boolean = () => false): number {
    // Counted in records, a pack's entries each (one pack can be 128 of them): the clock is read
    // after every 16 records, or every pack.
    let processed = 0;
    let sinceClock = 0;
    while (processed < maxRecords && this.inbox.size() > 0 && this.rollback === null && !shouldStop()) {
      const n = this.processor.runRecord(this.inbox.take());
      processed += n;
      sinceClock += n;
      if (sinceClock >= 16) {
        sinceClock = 0;
        if (clock() >= deadline) break;
      }
    }
    this.commits.sendAhead(this.producer);
    this.inbox.compact();
    return processed;
  }

  /**
   * The asynchronous half of a processor error once records of the open transaction have been
   * sent (TaskProcessor.rollbackAndReplay). Throws if the abort fails (the caller then
   * re-initialises the task).
   */
  rollbackAndReplay(): Promise<void> {
    return this.processor.rollbackAndReplay();
  }

  /** Runs the commit protocol once (TaskCommit.commit). Throws on any failure: the caller treats the task as corrupted. */
  commit(clock: () => number): Promise<CommitOutcome> {
    const producer = this.producer;
    const stores = this.stores;
    if (!this.hasUncommitted() || producer === null || stores === null || this.state !== 'RUNNING') {
      return Promise.resolve({ committed: false, records: 0, durationMs: 0 });
    }
    return this.commits.commit(clock, producer, stores);
  }

  /**
   * Exactly-once v2: takes everything processed since the last cut into the instance's
   * transaction (TaskCommit.cut); null when there is nothing to commit.
   */
  cut(): TaskCut | null {
    const stores = this.stores;
    // A revoked task is never cut: its partitions may have gone already (TaskManager.onRevoked),
    // and a cut's offsets would be committed under this member's current generation.
    if (!this.hasUncommitted() || stores === null || this.state !== 'RUNNING' || this.isRevoked) return null;
    return { task: this, ...this.commits.cut(stores) };
  }

  /** The instance's transaction committed: the cut's store writes go to the committed store, in the group's one batch (TaskCommit.completeCut). */
  completeCut(cut: TaskCut, now: number, group?: CommitGroup): Promise<void> {
    return this.commits.completeCut(cut, this.stores, now, group);
  }

  /** The changelog topics of this task's stores. */
  changelogTopics(): Iterable<string> {
    return this.commits.changelogTopics();
  }

  /**
   * Exactly-once v2, after a transaction whose abort the broker confirmed: back to the last
   * commit in memory, and the task stays RUNNING (TaskCommit.rewindToCommitted); the records it
   * processed since go back to the front of its inbox, in order.
   */
  rewindToCommitted(): void {
    this.inbox.requeue(this.commits.rewindToCommitted());
  }

  /** After rewindToCommitted: where the next store commit counts each changelog from (TaskCommit.raiseChangelogFloor). */
  raiseChangelogFloor(endOf: (changelogTopic: string) => number | undefined): void {
    this.commits.raiseChangelogFloor(endOf);
  }

  /** Drops everything since the last commit (stores, pending output, replay list). The Kafka side is the caller's. */
  dropUncommitted(): void {
    this.processor.dropUncommitted();
  }
}
