/**
 * One task: one partition of one sub-topology (co-partitioned source topics share it). It owns
 * its store partitions (TaskStores), its producer and transaction, its input position, and a
 * small inbox of fetched records. Processing is synchronous (processors and store reads are
 * sync); only the commit awaits I/O, and while a task commits, it alone stops processing.
 *
 * Commit protocol (docs/architecture.md §4), exactly-once:
 *   1. flush the record cache → write batch; changelog + sink records go out in the transaction;
 *   2. the input offsets are added to the transaction; 3. the Kafka transaction commits;
 *   4. one atomic store commit of the write batch, the changelog offsets and the Position.
 * A crash before 3 aborts the transaction (the next InitProducerId does it) and leaves the store
 * untouched; a crash between 3 and 4 leaves the stored changelog offset behind, and restore
 * replays the committed tail. Neither path wipes a store.
 *
 * Beside it: RecordInbox holds the fetched records, TaskNodeRunner is what the processors see
 * (contexts, typed stores, the current record), TransactionOutput holds the transaction's
 * records, and changelog-record.ts / dead-letter-record.ts are the formats it writes.
 */
import type { CapturedCommit, FlushedChange, RecordSource, TaskStores } from '../store/types.js';
import { IqgateError, type ErrorCode } from '../errors.js';
import { toChangelogRecord } from './changelog-record.js';
import { deadLetterRecord } from './dead-letter-record.js';
import type { InputRecord, OutputRecord, TaskProducer, TopicPartition, TopicPartitionOffset } from './ports.js';
import { TransactionOutput } from './transaction-output.js';
import type { ErrorPolicy } from './processing-options.js';
import { RecordInbox } from './record-inbox.js';
import { TaskNodeRunner, type SourceRun } from './task-node-runner.js';
import type { Topology } from './topology.js';
import { entryOf, isPack, unpackRecord, type PackedEntry } from './record-pack.js';
import { transition, type TaskState } from './task-state.js';

/** The points of the commit protocol, in order; a crash hook can stop the process at each. */
export const COMMIT_STEPS = ['after-flush', 'after-send', 'after-send-offsets', 'after-kafka-commit', 'after-store-commit'] as const;
export type CommitStep = (typeof COMMIT_STEPS)[number];

export interface TaskLogger {
  warn(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  debug(fields: Record<string, unknown>, message: string): void;
}

export interface StreamTaskConfig {
  readonly id: string;
  readonly partition: number;
  readonly topology: Topology;
  /** Source node names of this task's sub-topology, by resolved topic name. */
  readonly sourcesByTopic: ReadonlyMap<string, readonly string[]>;
  /** Resolved topic of each sink node. */
  readonly sinkTopics: ReadonlyMap<string, string>;
  /** store name → changelog topic, for this task's stores. */
  readonly changelogTopics: ReadonlyMap<string, string>;
  readonly exactlyOnce: boolean;
  readonly deserializationErrors: ErrorPolicy;
  readonly processingErrors: ErrorPolicy;
  readonly deadLetterTopic: string;
  /** At-least-once: the plain consumer offset commit. */
  readonly commitInputOffsets: (offsets: readonly TopicPartitionOffset[]) => Promise<void>;
  readonly onCommitStep?: (step: CommitStep, taskId: string) => void;
  /** A processor aborted the task's transaction (abortTransaction): `dropped` records asked, `replayed` were processed again. */
  readonly onTransactionAborted?: (taskId: string, dropped: number, replayed: number) => void;
  /**
   * Output records buffered before they are sent ahead of the commit (inside the open
   * transaction), so a commit only sends the remainder and the produce requests stay small.
   */
  readonly eagerSendRecords?: number;
  /**
   * Exactly-once v2: the task's work goes into the instance's one transaction through cut();
   * nothing is sent ahead (a processor error then rolls back in memory, never in Kafka).
   */
  readonly instanceTransaction?: boolean;
  /** Repartition topics this task writes as packs (record-pack.ts): topic → partition count. */
  readonly packedTopics?: ReadonlyMap<string, number>;
  readonly logger: TaskLogger;
  /** Its stores were attached (`attached`) or these were detached: the task manager's StoreRegistry follows. */
  readonly onStores?: (task: StreamTask, change: { readonly attached: TaskStores } | { readonly detached: TaskStores }) => void;
}

/**
 * What one task puts into the instance's transaction (exactly-once v2): everything it did up to
 * the cut. Processing goes on after the cut into fresh buffers; the cut is settled by
 * completeCut() once the transaction committed, or abandonCut() when it failed.
 */
export interface TaskCut {
  readonly task: StreamTask;
  /** Input records processed in the cut. */
  readonly records: number;
  readonly output: readonly OutputRecord[];
  readonly offsets: readonly TopicPartitionOffset[];
  readonly store: CapturedCommit;
}

/** A record that the `fail` policy turns into a runtime failure. */
export class FatalTaskError extends IqgateError {}

export interface CommitOutcome {
  readonly committed: boolean;
  readonly records: number;
  readonly durationMs: number;
  /** Time in each phase: waiting for sends, adding offsets, committing in Kafka, committing the store. */
  readonly phasesMs?: { readonly send: number; readonly offsets: number; readonly kafkaCommit: number; readonly storeCommit: number };
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
  private isCommitting = false;
  private lastCommit = 0;
  /** Next input offset expected per source topic (the consumed position, committed at the next commit). */
  readonly nextOffsets = new Map<string, number>();
  /** The input position of the last commit (or of the open): where a rolled-back task resumes. */
  private readonly committedOffsets = new Map<string, number>();
  /**
   * Changelog ends read after an aborted transaction (store name → offset): its records and
   * marker moved the true end by an amount only the broker knows, so the next store commit
   * counts from here (rewindToCommitted).
   */
  private changelogFloor: Record<string, number> = {};

  private readonly inbox = new RecordInbox();
  /** Records processed in the open transaction, kept to replay them after a processor error. */
  private txnRecords: InputRecord[] = [];
  /**
   * Exactly-once v2: the input records of this task's cut in the instance's transaction, kept
   * until that transaction commits (completeCut) — a confirmed abort processes them again from
   * memory (rewindToCommitted) instead of seeking the consumer back and fetching them anew.
   */
  private cutInputs: InputRecord[] = [];
  /** Input records those are, a pack's entries each (the commit's record count). */
  private txnRecordCount = 0;
  /** Records skipped after a processor error in this transaction, with their dead letter to re-send on replay. */
  private readonly skipOffsets = new Map<string, OutputRecord | null>();
  private readonly output: TransactionOutput;
  /** changelog topic → store name, for this task's stores. */
  private readonly changelogStores = new Map<string, string>();
  /** Runs the topology's nodes for this task, with the processor contexts and typed stores. */
  private readonly nodes: TaskNodeRunner;
  /** Each input topic's source nodes with their children's runs, built at its first record (sourcesOf). */
  private readonly sourceRuns = new Map<string, readonly SourceRun[]>();
  /** The last topic a record came from, and its source nodes. */
  private lastSources: { readonly topic: string | null; readonly runs: readonly SourceRun[] } = { topic: null, runs: [] };
  private dirty = false;
  /** A processor failed after records of this transaction went out: the transaction must be aborted before the replay. */
  private pendingRollback: { record: InputRecord; failed: InputRecord; error: unknown } | null = null;
  /** Processors asked to abort the open transaction (ProcessorContext.abortTransaction): settled at the commit point. */
  private abortRequests: Array<{ readonly source: RecordSource; readonly reason: string }> = [];
  private unsubscribeFlush: (() => void) | null = null;

  constructor(private readonly config: StreamTaskConfig) {
    this.id = config.id;
    this.partition = config.partition;
    this.sourcePartitions = [...config.sourcesByTopic.keys()].map((topic) => ({ topic, partition: config.partition }));
    const storeOfChangelog = new Map<string, string>();
    for (const [store, topic] of config.changelogTopics) storeOfChangelog.set(topic, store);
    for (const [store, topic] of config.changelogTopics) this.changelogStores.set(topic, store);
    this.output = new TransactionOutput(storeOfChangelog, config.partition, config.packedTopics);
    this.nodes = new TaskNodeRunner({
      taskId: config.id,
      topology: config.topology,
      sinkTopics: config.sinkTopics,
      sink: (topic, key, value, keySerde, valueSerde, timestamp) => this.output.pushSink(topic, key, value, keySerde, valueSerde, timestamp),
      stores: () => this.stores,
      requestAbort: (source, reason) => this.abortRequests.push({ source, reason }),
    });
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

  /** The assignment no longer includes this task (or its member lost it): it takes no more records and is not re-opened. */
  get revoked(): boolean {
    return this.isRevoked;
  }

  /** Exactly-once v1: the task's own commit is in flight (it processes nothing meanwhile). */
  get committing(): boolean {
    return this.isCommitting;
  }

  get lastCommitAt(): number {
    return this.lastCommit;
  }

  /** A processor failed after records of this transaction went out: the transaction must be aborted before the replay. */
  get rollback(): { readonly record: InputRecord; readonly failed: InputRecord; readonly error: unknown } | null {
    return this.pendingRollback;
  }

  /** Leaves the assignment: no more records, no re-open. */
  revoke(): void {
    this.isRevoked = true;
  }

  /** Assigned again after it was lost (exactly-once v2, onRevoked with `lost`). */
  reassign(): void {
    this.isRevoked = false;
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
    this.nodes.forgetStores();
    this.unsubscribeFlush?.();
    this.unsubscribeFlush = stores.onFlush((changes) => this.onFlushed(changes));
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
    this.nextOffsets.clear();
    this.committedOffsets.clear();
    for (const [topic, offset] of offsets) {
      this.nextOffsets.set(topic, offset);
      this.committedOffsets.set(topic, offset);
    }
    this.inbox.clear();
    this.cutInputs = [];
    this.lastCommit = now;
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
    return this.dirty;
  }

  canProcess(): boolean {
    return this.state === 'RUNNING' && !this.committing && !this.revoked && this.rollback === null && this.buffered() > 0;
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
      const n = this.runRecord(this.inbox.take());
      processed += n;
      sinceClock += n;
      if (sinceClock >= 16) {
        sinceClock = 0;
        if (clock() >= deadline) break;
      }
    }
    if (this.config.instanceTransaction !== true && this.output.buffered() >= (this.config.eagerSendRecords ?? 1000) && this.rollback === null && this.producer !== null) {
      this.output.sendAhead(this.producer);
    }
    this.inbox.compact();
    return processed;
  }

  /** Processes one fetched record; returns how many input records it held (a pack's entries; 0 while its rollback waits). */
  private runRecord(record: InputRecord): number {
    // A processor error rolls the transaction back and replays it with the failed record (or
    // pack entry) skipped; a pack is then processed again, so a later entry may fail in turn.
    let records: number;
    for (;;) {
      try {
        records = this.processRecord(record);
        break;
      } catch (thrown) {
        if (thrown instanceof FatalTaskError) throw thrown;
        const { failed, error } = thrown instanceof EntryFailure ? thrown : { failed: record, error: thrown };
        if (this.output.sentInTxn && this.config.processingErrors !== 'fail') {
          // Records of this transaction are already in Kafka: abort it first (async, rollbackAndReplay).
          this.pendingRollback = { record, failed, error };
          return 0;
        }
        this.rollBackWithout(failed, error);
        if (failed === record) {
          // A skip now: re-sends its dead letter. Kept (as skipped) so a later rollback replays
          // the skip and its dead letter.
          records = this.processRecord(record);
          break;
        }
      }
    }
    this.txnRecords.push(record);
    this.txnRecordCount += records;
    this.nextOffsets.set(record.topic, record.offset + 1);
    this.dirty = true;
    return records;
  }

  /** Runs a fetched record through its source nodes; returns how many input records it held (a pack's entries). */
  private processRecord(record: InputRecord): number {
    let records = 1;
    for (const source of this.sourcesOf(record.topic)) {
      if (source.node.internal && isPack(record)) {
        let entries: PackedEntry[];
        try {
          entries = unpackRecord(record);
        } catch (error) {
          this.onDeserializationError(record, error);
          return records;
        }
        records = entries.length;
        for (const entry of entries) {
          try {
            this.processSource(source, entry);
          } catch (error) {
            if (error instanceof FatalTaskError) throw error;
            throw new EntryFailure(entry, error);
          }
        }
      } else {
        this.processSource(source, record);
      }
    }
    return records;
  }

  /**
   * The source nodes of `topic`, with their children's runs. A task reads one or two topics: the
   * last one is kept, so a record's topic is compared, not hashed (the Kafka client gives each
   * record a topic string of its own).
   */
  private sourcesOf(topic: string): readonly SourceRun[] {
    if (topic === this.lastSources.topic) return this.lastSources.runs;
    let runs = this.sourceRuns.get(topic);
    if (runs === undefined) {
      runs = this.nodes.sources(this.config.sourcesByTopic.get(topic) ?? []);
      this.sourceRuns.set(topic, runs);
    }
    this.lastSources = { topic, runs };
    return runs;
  }

  private processSource(run: SourceRun, record: InputRecord): void {
    const source = run.node;
    // Only while replaying after a processor error (a key string per record costs on the hot path).
    if (this.skipOffsets.size > 0) {
      const skipKey = recordKey(record);
      if (this.skipOffsets.has(skipKey)) {
        const deadLetter = this.skipOffsets.get(skipKey);
        if (deadLetter != null) this.output.push(deadLetter); // the replayed transaction must carry it again
        return;
      }
    }
    let key: unknown;
    let value: unknown;
    try {
      key = record.key === null ? null : source.keySerde.deserialize(record.key);
      // The key's own Buffer as the value (a pack entry whose value has the key's bytes), through
      // the same serde: the same value, decoded once — for a primitive; an object is decoded
      // again, so that key and value are never one object a processor could change through both.
      value = record.value === null ? null
        : record.value === record.key && source.valueSerde === source.keySerde && (typeof key !== 'object' || key === null) ? key
          : source.valueSerde.deserialize(record.value);
    } catch (error) {
      this.onDeserializationError(record, error);
      return;
    }
    this.nodes.runSource(run, record, source.keySerde, key, value);
  }

  private onDeserializationError(record: InputRecord, error: unknown): void {
    const policy = this.config.deserializationErrors;
    const fields = { taskId: this.id, topic: record.topic, partition: record.partition, offset: record.offset, ...entryField(record), policy, err: error };
    if (policy === 'fail') {
      throw new FatalTaskError('DECODE_FAILED', `task ${this.id}: cannot deserialize ${record.topic}/${record.partition}@${record.offset}`, { cause: error, details: fields });
    }
    this.config.logger.warn(fields, 'undecodable record skipped');
    if (policy === 'dead-letter') this.output.push(deadLetterRecord(this.config.deadLetterTopic, record, 'DECODE_FAILED', error));
  }

  /**
   * A processor failed on `failed` (a record, or an entry of a pack): everything since the last
   * commit is rolled back and the transaction's records are replayed without it. Under `fail`
   * it throws FatalTaskError instead.
   */
  private rollBackWithout(failed: InputRecord, error: unknown): void {
    const policy = this.config.processingErrors;
    const fields = { taskId: this.id, topic: failed.topic, partition: failed.partition, offset: failed.offset, ...entryField(failed), policy, err: error };
    if (policy === 'fail') {
      throw new FatalTaskError('PROCESSING_FAILED', `task ${this.id}: processor failed on ${failed.topic}/${failed.partition}@${failed.offset}`, { cause: error, details: fields });
    }
    this.config.logger.warn(fields, 'processor failed: rolling back the transaction and replaying without the record');
    const replay = this.txnRecords;
    const skipped = [...this.skipOffsets];
    this.dropUncommitted();
    for (const [key, deadLetter] of skipped) this.skipOffsets.set(key, deadLetter);
    this.skipOffsets.set(recordKey(failed), policy === 'dead-letter' ? deadLetterRecord(this.config.deadLetterTopic, failed, 'PROCESSING_FAILED', error) : null);
    for (const r of replay) this.runRecord(r);
  }

  /**
   * The asynchronous half of a processor error once records of the open transaction have been
   * sent: abort the Kafka transaction, then roll back and replay as the synchronous path does.
   * Throws if the abort fails (the caller then re-initialises the task).
   */
  async rollbackAndReplay(): Promise<void> {
    const pending = this.rollback;
    if (pending === null) return;
    await this.output.settle();
    await this.producer?.abort();
    this.output.reset();
    this.pendingRollback = null;
    this.rollBackWithout(pending.failed, pending.error);
    this.runRecord(pending.record);
  }

  /**
   * Dirty entries leaving the record cache: to the changelog (with the source record in the
   * headers, so restore rebuilds the Position) and downstream to the store's subscribers, as
   * Kafka Streams' CachingKeyValueStore forwards on flush/evict.
   */
  private onFlushed(changes: readonly FlushedChange[]): void {
    for (const change of changes) {
      const topic = this.config.changelogTopics.get(change.storeName);
      if (topic !== undefined) this.output.push(toChangelogRecord(topic, this.partition, change));
      this.nodes.forwardChange(change);
    }
  }

  /** Flushes until downstream writes caused by forwarded changes are flushed too. */
  private flushAll(): void {
    const stores = this.stores;
    if (stores === null) return;
    for (let round = 0; round < 16; round += 1) {
      const before = this.output.pushed;
      stores.flush();
      if (this.output.pushed === before) return;
    }
  }

  /** Runs the commit protocol once. Throws on any failure: the caller treats the task as corrupted. */
  async commit(clock: () => number): Promise<CommitOutcome> {
    const started = clock();
    const producer = this.producer;
    const stores = this.stores;
    if (!this.dirty || producer === null || stores === null || this.state !== 'RUNNING') {
      return { committed: false, records: 0, durationMs: 0 };
    }
    // A processor failed after records of this transaction went out, and its rollback (queued
    // behind this commit) has not run: settle it first, or the commit would carry the half of a
    // pack processed before the failure and the rollback would then apply it again.
    if (this.pendingRollback !== null) await this.rollbackAndReplay();
    const step = (s: CommitStep): void => this.config.onCommitStep?.(s, this.id);
    this.isCommitting = true;
    try {
      this.flushAll();
      while (this.abortRequests.length > 0) {
        // Records of the doomed transaction may be in Kafka already (sent ahead): abort it there first.
        if (this.output.sentInTxn) {
          await this.output.settle();
          await producer.abort();
        }
        this.abortAndReplay();
        this.flushAll();
      }
      const records = this.txnRecordCount;
      step('after-flush');
      await this.output.drain(producer);
      step('after-send');
      const sent = clock();
      const changelogOffsets = this.output.changelogOffsets(stores.changelogOffsets());
      const offsets = [...this.nextOffsets].map(([topic, offset]) => ({ topic, partition: this.partition, offset }));
      let offsetsAdded = sent;
      if (this.config.exactlyOnce) {
        await producer.sendOffsets(offsets);
        step('after-send-offsets');
        offsetsAdded = clock();
        await producer.commit();
      } else {
        await this.config.commitInputOffsets(offsets);
      }
      step('after-kafka-commit');
      const kafkaCommitted = clock();
      await stores.commit(changelogOffsets);
      step('after-store-commit');
      const storeCommitted = clock();
      this.forgetTxnRecords();
      this.skipOffsets.clear();
      this.output.reset();
      this.dirty = false;
      this.lastCommit = clock();
      return {
        committed: true,
        records,
        durationMs: storeCommitted - started,
        phasesMs: { send: sent - started, offsets: offsetsAdded - sent, kafkaCommit: kafkaCommitted - offsetsAdded, storeCommit: storeCommitted - kafkaCommitted },
      };
    } finally {
      this.isCommitting = false;
    }
  }

  /**
   * Exactly-once v2: takes everything processed since the last cut into the instance's
   * transaction — flushes the caches (changelog records join the output), captures the store
   * writes and the input position — and starts afresh; null when there is nothing to commit.
   * Synchronous, so the cut is one instant of the task's processing.
   */
  cut(): TaskCut | null {
    const stores = this.stores;
    // A revoked task is never cut: its partitions may have gone already (TaskManager.onRevoked),
    // and a cut's offsets would be committed under this member's current generation.
    if (!this.dirty || stores === null || this.state !== 'RUNNING' || this.isRevoked) return null;
    this.flushAll();
    // Nothing of the task is in the instance's transaction before its cut: an abort is in memory.
    while (this.abortRequests.length > 0) {
      this.abortAndReplay();
      this.flushAll();
    }
    const cut: TaskCut = {
      task: this,
      records: this.txnRecordCount,
      output: this.output.take(),
      offsets: [...this.nextOffsets].map(([topic, offset]) => ({ topic, partition: this.partition, offset })),
      store: stores.capture(),
    };
    this.cutInputs = this.txnRecords;
    this.forgetTxnRecords();
    this.skipOffsets.clear();
    this.dirty = false;
    return cut;
  }

  /**
   * The instance's transaction committed: the cut's store writes go to the committed store,
   * with each changelog's new end (KIP-1035: where restore starts next time). The end is
   * counted, not reported per record (one JavaScript callback per record is the largest cost of
   * a Node Kafka client): only this task writes its changelog partition, so a committed
   * transaction that wrote n records to it moved its end by n plus one commit marker. Starting
   * from the end that restore read, the count is exact; a zombie's aborted writes in between
   * only make the true end larger, so the stored offset is then a lower bound, and restore
   * from a lower bound re-applies, in order, records the store already holds — same state.
   */
  async completeCut(cut: TaskCut, now: number): Promise<void> {
    this.cutInputs = [];
    const stores = this.stores;
    if (stores === null) {
      cut.store.abandon();
      return;
    }
    const written = new Map<string, number>();
    for (const record of cut.output) {
      if (record.partition === this.partition && this.changelogStores.has(record.topic)) written.set(record.topic, (written.get(record.topic) ?? 0) + 1);
    }
    const offsets: Record<string, number> = { ...stores.changelogOffsets() };
    for (const [store, floor] of Object.entries(this.changelogFloor)) offsets[store] = Math.max(offsets[store] ?? 0, floor);
    this.changelogFloor = {};
    for (const [topic, count] of written) {
      const store = this.changelogStores.get(topic)!;
      offsets[store] = (offsets[store] ?? 0) + count + 1;
    }
    await cut.store.write(offsets);
    for (const o of cut.offsets) this.committedOffsets.set(o.topic, o.offset);
    this.lastCommit = now;
  }

  /** The changelog topics of this task's stores. */
  changelogTopics(): Iterable<string> {
    return this.changelogStores.keys();
  }

  /**
   * Exactly-once v2, after a transaction whose abort the broker confirmed: back to the last
   * commit in memory, and the task stays RUNNING. Everything processed since is dropped (its
   * stores hold exactly the committed state: the aborted cut was abandoned, so nothing needs
   * restoring), and the records it processed since — those of the aborted cut, then those after
   * it — go back to the front of its inbox, in order: they are processed again from memory, with
   * no seek and no fetch, and the input position is the committed one again. What the consumer
   * delivers next follows on from the inbox as before.
   */
  rewindToCommitted(): void {
    const again = [...this.cutInputs, ...this.txnRecords];
    const waiting = this.pendingRollback?.record;
    if (waiting !== undefined) again.push(waiting);
    this.cutInputs = [];
    this.dropUncommitted();
    this.nextOffsets.clear();
    for (const [topic, offset] of this.committedOffsets) this.nextOffsets.set(topic, offset);
    this.inbox.requeue(again);
  }

  /**
   * After rewindToCommitted: `endOf(topic)` (this partition's read_committed end of each of its
   * changelog topics, read after the abort and before the next transaction commits) is where the
   * next store commit counts from. At most the true end, so counting on from it stays exact or
   * below (see completeCut).
   */
  raiseChangelogFloor(endOf: (changelogTopic: string) => number | undefined): void {
    for (const [topic, store] of this.changelogStores) {
      const end = endOf(topic);
      if (end !== undefined) this.changelogFloor[store] = Math.max(this.changelogFloor[store] ?? 0, end);
    }
  }

  /**
   * The commit point of a transaction a processor asked to abort (ProcessorContext
   * abortTransaction): everything since the last commit is dropped — the store's uncommitted
   * layers hold exactly this transaction's writes, so they return to the last commit — and the
   * transaction's records are processed again, in order, without the ones that asked (consumed
   * without effect, as the `skip` policy leaves a failed record). Records skipped before stay
   * skipped, with their dead letters. A replayed record may ask again; the caller repeats until
   * none does (each round drops at least one more record). The Kafka side is the caller's.
   */
  private abortAndReplay(): void {
    const requests = this.abortRequests;
    const replay = this.txnRecords;
    const skipped = [...this.skipOffsets];
    this.dropUncommitted();
    for (const [key, deadLetter] of skipped) this.skipOffsets.set(key, deadLetter);
    const dropped = new Set(requests.map(({ source }) => recordKey(source)));
    for (const key of dropped) this.skipOffsets.set(key, null);
    // Deliberate, so no error object (nor its stack) per abort: the code and the reasons.
    const code: ErrorCode = 'TRANSACTION_ABORTED';
    this.config.logger.info({
      taskId: this.id,
      code,
      reasons: requests.map((r) => `${r.source.topic}/${r.source.partition}@${r.source.offset}${entryOf(r.source) === undefined ? '' : `#${String(entryOf(r.source))}`}: ${r.reason}`),
      dropped: dropped.size,
      replayed: replay.length - dropped.size,
    }, 'transaction aborted by a processor: rolled back, its other records replayed');
    this.config.onTransactionAborted?.(this.id, dropped.size, replay.length - dropped.size);
    for (const record of replay) this.runRecord(record);
  }

  private forgetTxnRecords(): void {
    this.txnRecords = [];
    this.txnRecordCount = 0;
  }

  /** Drops everything since the last commit (stores, pending output, replay list). The Kafka side is the caller's. */
  dropUncommitted(): void {
    this.pendingRollback = null;
    this.stores?.abort();
    this.abortRequests = [];
    this.forgetTxnRecords();
    this.skipOffsets.clear();
    this.output.reset();
    this.dirty = false;
  }
}

/** A processor failed on one entry of a pack: which one, and why. */
class EntryFailure {
  constructor(readonly failed: PackedEntry, readonly error: unknown) {}
}

/** What a skip is keyed by: topic and offset, and the entry of a pack. */
function recordKey(record: RecordSource): string {
  const entry = entryOf(record);
  return entry === undefined ? `${record.topic}:${record.offset}` : `${record.topic}:${record.offset}:${entry}`;
}

function entryField(record: RecordSource): { entry?: number } {
  const entry = entryOf(record);
  return entry === undefined ? {} : { entry };
}
