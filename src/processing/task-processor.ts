/**
 * A task's record processing: runs one fetched record at a time through its source nodes into
 * the open transaction, applies the error policies (task-error-policy.ts), rolls the transaction
 * back and replays it without a failed record, and settles the aborts processors ask for at the
 * commit point. It keeps the task's input position and what a replay needs (TransactionInputs:
 * the transaction's records and skips). Everything it does stays uncommitted until the task's
 * commit side (TaskCommit) cuts it; dropUncommitted() returns it to the last cut (a cut whose
 * commit is in flight stays in the store's committing layer until it lands or fails).
 *
 * Separate from StreamTask so that the task shows its lifecycle, and from TaskCommit so that the
 * commit protocol does not hide among the error paths. TaskNodeRunner is what the processors see.
 */
import type { FlushedChange, RecordSource, TaskStores } from '../store/types.js';
import type { ErrorCode } from '../errors.js';
import { toChangelogRecord } from './changelog-record.js';
import type { InputRecord, OutputRecord, TaskProducer } from './ports.js';
import type { TransactionOutput } from './transaction-output.js';
import { applyErrorPolicy, FatalTaskError, type TaskErrorPolicyConfig } from './task-error-policy.js';
import { TaskNodeRunner, type SourceRun } from './task-node-runner.js';
import { recordKey, TransactionInputs } from './transaction-inputs.js';
import type { Topology } from './topology.js';
import { entryOf, isPack, unpackRecord, type PackedEntry } from './record-pack.js';

/** What record processing needs of the task's configuration (StreamTaskConfig). */
export interface TaskProcessorConfig extends TaskErrorPolicyConfig {
  readonly partition: number;
  readonly topology: Topology;
  /** Source node names of this task's sub-topology, by resolved topic name. */
  readonly sourcesByTopic: ReadonlyMap<string, readonly string[]>;
  /** Resolved topic of each sink node. */
  readonly sinkTopics: ReadonlyMap<string, string>;
  /** store name → changelog topic, for this task's stores. */
  readonly changelogTopics: ReadonlyMap<string, string>;
  /** A processor aborted the task's transaction (abortTransaction): `dropped` records asked, `replayed` were processed again. */
  readonly onTransactionAborted?: (taskId: string, dropped: number, replayed: number) => void;
}

/** The task's producer and stores as they are attached now (null while none are). */
export interface TaskAttachment {
  readonly producer: () => TaskProducer | null;
  readonly stores: () => TaskStores | null;
}

export class TaskProcessor {
  /** Next input offset expected per source topic (the consumed position, committed at the next commit). */
  readonly nextOffsets = new Map<string, number>();
  /** The open transaction's input records and skips, to replay it after a rollback. */
  private readonly inputs = new TransactionInputs();
  /** Runs the topology's nodes for this task, with the processor contexts and typed stores. */
  private readonly nodes: TaskNodeRunner;
  /** Each input topic's source nodes with their children's runs, built at its first record (sourcesOf). */
  private readonly sourceRuns = new Map<string, readonly SourceRun[]>();
  /** The last topic a record came from, and its source nodes. */
  private lastSources: { readonly topic: string | null; readonly runs: readonly SourceRun[] } = { topic: null, runs: [] };
  private isDirty = false;
  /** A processor failed after records of this transaction went out: the transaction must be aborted before the replay. */
  private pendingRollback: { record: InputRecord; failed: InputRecord; error: unknown } | null = null;
  /** Processors asked to abort the open transaction (ProcessorContext.abortTransaction): settled at the commit point. */
  private abortRequests: Array<{ readonly source: RecordSource; readonly reason: string }> = [];
  /**
   * A change of this task's failed downstream while another task's write (or a read) had the
   * shared record cache flush it: the flush stopped part way, so the stores hold writes whose
   * changelog records and downstream output never came. Settled at this task's next record or
   * commit point (settleTorn); nothing of the task commits before.
   */
  private torn: FlushFailure | null = null;

  constructor(
    private readonly config: TaskProcessorConfig,
    private readonly output: TransactionOutput,
    private readonly attached: TaskAttachment,
  ) {
    this.nodes = new TaskNodeRunner({
      taskId: config.id,
      topology: config.topology,
      sinkTopics: config.sinkTopics,
      sink: (topic, key, value, keySerde, valueSerde, timestamp) => this.output.pushSink(topic, key, value, keySerde, valueSerde, timestamp),
      stores: attached.stores,
      requestAbort: (source, reason) => this.abortRequests.push({ source, reason }),
    });
  }

  /** Records were processed since the last commit (or cut). */
  get dirty(): boolean {
    return this.isDirty;
  }

  /** Input records processed in the open transaction, a pack's entries each. */
  get records(): number {
    return this.inputs.size;
  }

  /** A processor failed after records of this transaction went out: the transaction must be aborted before the replay. */
  get rollback(): { readonly record: InputRecord; readonly failed: InputRecord; readonly error: unknown } | null {
    return this.pendingRollback;
  }

  /** A processor asked to abort the open transaction: abortAndReplay() at the commit point. */
  get abortRequested(): boolean {
    return this.abortRequests.length > 0;
  }

  /** The task's stores were (re)attached: the typed stores built so far are of the old ones. */
  forgetStores(): void {
    this.nodes.forgetStores();
  }

  /** The input position is `offsets` from now on (the committed one, at an open or a rewind). */
  moveTo(offsets: ReadonlyMap<string, number>): void {
    this.nextOffsets.clear();
    for (const [topic, offset] of offsets) this.nextOffsets.set(topic, offset);
  }

  /** Processes one fetched record; returns how many input records it held (a pack's entries; 0 while its rollback waits). */
  runRecord(record: InputRecord): number {
    const outer = working;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- whose work runs now (asWorking's closure would cost every record)
    working = this;
    try {
      if (this.torn !== null) this.settleTorn();
      return this.runOwnRecord(record);
    } finally {
      working = outer;
    }
  }

  private runOwnRecord(record: InputRecord): number {
    // A processor error rolls the transaction back and replays it with the failed record (or
    // pack entry) skipped; a pack is then processed again, so a later entry may fail in turn.
    let records: number;
    for (;;) {
      try {
        records = this.processRecord(record);
        break;
      } catch (thrown) {
        if (thrown instanceof FatalTaskError) throw thrown;
        const { failed, error } = thrown instanceof EntryFailure ? thrown : thrown instanceof FlushFailure ? { failed: this.culprit(thrown.source, record), error: thrown.error } : { failed: record, error: thrown };
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
    this.inputs.add(record, records);
    this.nextOffsets.set(record.topic, record.offset + 1);
    this.isDirty = true;
    return records;
  }

  /**
   * The input record whose write a flushed change carried (the change failed downstream): the
   * current one, or one processed earlier in the open transaction; else the current one (a
   * pack's entry is not told apart from its pack here).
   */
  private culprit(source: RecordSource, current: InputRecord): InputRecord {
    return recordKey(current) === recordKey(source) ? current : this.processedRecord(source) ?? current;
  }

  /** The record of the open transaction that `source` names, if it is one. */
  private processedRecord(source: RecordSource): InputRecord | undefined {
    const key = recordKey(source);
    return this.inputs.records.find((r) => recordKey(r) === key);
  }

  /**
   * A torn flush (see `torn`) before `next` or the commit point: the transaction is rolled back
   * and replayed without the record whose change failed, as a processor error of that record
   * would be (its policy: skip, dead letter, or fail). Records of the transaction already in
   * Kafka (sent ahead) need the Kafka abort first: left to the commit, which then fails.
   */
  private settleTorn(): void {
    const torn = this.torn;
    if (torn === null || this.output.sentInTxn) return;
    this.torn = null;
    const failed = this.processedRecord(torn.source);
    if (failed !== undefined) this.rollBackWithout(failed, torn.error);
    else this.dropAndReplay(); // its record is not in the transaction (a pack's entry, say): replayed whole
  }

  /** Rolls the open transaction back and processes its records again, skipping none. */
  private dropAndReplay(): void {
    for (const r of this.dropKeepingSkips([])) this.runOwnRecord(r);
  }

  /** True when a torn flush still waits to be settled: the task must not commit (see `torn`). */
  get tornFlush(): unknown {
    return this.torn?.error;
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
    const skipped = this.inputs.skipOf(record);
    if (skipped !== undefined) {
      if (skipped !== null) this.output.push(skipped); // the replayed transaction must carry its dead letter again
      return;
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
    const deadLetter = applyErrorPolicy(this.config, 'DECODE_FAILED', record, error);
    if (deadLetter !== null) this.output.push(deadLetter);
  }

  /**
   * A processor failed on `failed` (a record, or an entry of a pack): everything since the last
   * commit is rolled back and the transaction's records are replayed without it. Under `fail`
   * it throws FatalTaskError instead.
   */
  private rollBackWithout(failed: InputRecord, error: unknown): void {
    const deadLetter = applyErrorPolicy(this.config, 'PROCESSING_FAILED', failed, error);
    const replay = this.dropKeepingSkips([[recordKey(failed), deadLetter]]);
    for (const r of replay) this.runOwnRecord(r);
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
    await this.attached.producer()?.abort();
    this.output.reset();
    this.pendingRollback = null;
    this.rollBackWithout(pending.failed, pending.error);
    this.runRecord(pending.record);
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
  abortAndReplay(): void {
    const requests = this.abortRequests;
    const dropped = new Set(requests.map(({ source }) => recordKey(source)));
    const replay = this.dropKeepingSkips([...dropped].map((key) => [key, null] as const));
    // Deliberate, so no error object (nor its stack) per abort: the code and the reasons.
    const code: ErrorCode = 'TRANSACTION_ABORTED';
    this.config.logger.info({
      taskId: this.config.id,
      code,
      reasons: requests.map((r) => `${r.source.topic}/${r.source.partition}@${r.source.offset}${entryOf(r.source) === undefined ? '' : `#${String(entryOf(r.source))}`}: ${r.reason}`),
      dropped: dropped.size,
      replayed: replay.length - dropped.size,
    }, 'transaction aborted by a processor: rolled back, its other records replayed');
    this.config.onTransactionAborted?.(this.config.id, dropped.size, replay.length - dropped.size);
    for (const record of replay) this.runRecord(record);
  }

  /**
   * Drops everything since the last commit but the records skipped in it (with their dead
   * letters), adds `skips`, and returns the transaction's records, to be processed again.
   */
  private dropKeepingSkips(skips: Iterable<readonly [string, OutputRecord | null]>): readonly InputRecord[] {
    const replay = this.inputs.restart(skips);
    this.dropAllButInputs();
    return replay;
  }

  /**
   * Dirty entries leaving the record cache: to the changelog (with the source record in the
   * headers, so restore rebuilds the Position) and downstream to the store's subscribers, as
   * Kafka Streams' CachingKeyValueStore forwards on flush/evict.
   */
  onFlushed(changes: readonly FlushedChange[]): void {
    for (const change of changes) {
      const topic = this.config.changelogTopics.get(change.storeName);
      if (topic !== undefined) this.output.push(toChangelogRecord(topic, this.config.partition, change));
      try {
        this.nodes.forwardChange(change);
      } catch (error) {
        if (error instanceof FatalTaskError) throw error;
        const failure = new FlushFailure(change.source, error);
        // Flushed by this task's own work: its record's catch (or the commit point) rolls back.
        if (working === this) throw failure;
        // By another task's write or a read (the record cache is shared): not theirs to handle.
        this.torn ??= failure;
        return;
      }
    }
  }

  /**
   * Flushes until downstream writes caused by forwarded changes are flushed too. A change that
   * fails downstream rolls the transaction back without the record that wrote it (its policy),
   * and the flush starts again; so does a torn flush waiting (see `torn`).
   */
  flushAll(): void {
    asWorking(this, () => {
      for (;;) {
        if (this.torn !== null) this.settleTorn();
        try {
          this.flushRounds();
          return;
        } catch (thrown) {
          if (!(thrown instanceof FlushFailure) || this.output.sentInTxn) throw thrown instanceof FlushFailure ? thrown.error : thrown;
          const failed = this.processedRecord(thrown.source);
          if (failed === undefined) throw thrown.error;
          this.rollBackWithout(failed, thrown.error);
        }
      }
    });
  }

  private flushRounds(): void {
    const stores = this.attached.stores();
    if (stores === null) return;
    for (let round = 0; round < 16; round += 1) {
      const before = this.output.pushed;
      stores.flush();
      if (this.output.pushed === before) return;
    }
  }

  /**
   * The open transaction went into a commit (or a cut): forgets its records and skips, and
   * returns the records (a cut keeps them until the instance's transaction commits).
   */
  closeTransaction(): InputRecord[] {
    this.isDirty = false;
    return this.inputs.clear();
  }

  /** The records processed since the last commit, and the one whose rollback waits: what a rewind processes again. */
  uncommittedInputs(): InputRecord[] {
    const inputs = [...this.inputs.records];
    const waiting = this.pendingRollback?.record;
    if (waiting !== undefined) inputs.push(waiting);
    return inputs;
  }

  /** Drops everything since the last cut (stores, pending output, replay list). The Kafka side is the caller's. */
  dropUncommitted(): void {
    this.inputs.clear();
    this.dropAllButInputs();
  }

  /** dropUncommitted() but for the transaction's inputs, which the caller settles. */
  private dropAllButInputs(): void {
    this.pendingRollback = null;
    this.torn = null; // the writes it tore are dropped with the rest
    this.attached.stores()?.abort();
    this.abortRequests = [];
    this.output.reset();
    this.isDirty = false;
  }
}

/** The task whose record or flush runs now (nested: a rollback's replay): a flush of another's cache is not its own. */
let working: TaskProcessor | undefined;

function asWorking<T>(processor: TaskProcessor, run: () => T): T {
  const outer = working;
  working = processor;
  try {
    return run();
  } finally {
    working = outer;
  }
}

/** A change flushed from the record cache failed downstream: the input record whose write it carried, and why. */
class FlushFailure {
  constructor(readonly source: RecordSource, readonly error: unknown) {}
}

/** A processor failed on one entry of a pack: which one, and why. */
class EntryFailure {
  constructor(readonly failed: PackedEntry, readonly error: unknown) {}
}
