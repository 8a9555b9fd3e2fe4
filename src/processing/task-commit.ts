/**
 * A task's commit side: takes the open transaction its TaskProcessor filled into Kafka and the
 * store, and keeps what the task last committed (its input position, each changelog's floor
 * after an abort, the records of a cut still in the instance's transaction).
 *
 * Commit protocol (docs/architecture.md §4), exactly-once:
 *   1. flush the record cache → write batch; changelog + sink records go out in the transaction;
 *   2. the input offsets are added to the transaction; 3. the Kafka transaction commits;
 *   4. one atomic store commit of the write batch, the changelog offsets and the Position.
 * A crash before 3 aborts the transaction (the next InitProducerId does it) and leaves the store
 * untouched; a crash between 3 and 4 leaves the stored changelog offset behind, and restore
 * replays the committed tail. Neither path wipes a store. Exactly-once v2 runs the same steps for
 * every task in the instance's one transaction: cut(), then completeCut() (instance-committer.ts).
 *
 * StreamTask checks its lifecycle (RUNNING, attached, not revoked) before it calls in here.
 */
import { IqgateError } from '../errors.js';
import type { CommitGroup } from '../store/commit-group.js';
import type { CapturedCommit, TaskStores } from '../store/types.js';
import type { InputRecord, OutputRecord, TaskProducer, TopicPartitionOffset } from './ports.js';
import type { TaskProcessor } from './task-processor.js';
import type { TransactionOutput } from './transaction-output.js';

/** The points of the commit protocol, in order; a crash hook can stop the process at each. */
export const COMMIT_STEPS = ['after-flush', 'after-send', 'after-send-offsets', 'after-kafka-commit', 'after-store-commit'] as const;
export type CommitStep = (typeof COMMIT_STEPS)[number];

/** What the commit side needs of the task's configuration (StreamTaskConfig). */
export interface TaskCommitConfig {
  readonly id: string;
  readonly partition: number;
  readonly exactlyOnce: boolean;
  /** At-least-once: the plain consumer offset commit. */
  readonly commitInputOffsets: (offsets: readonly TopicPartitionOffset[]) => Promise<void>;
  readonly onCommitStep?: (step: CommitStep, taskId: string) => void;
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
}

export interface CommitOutcome {
  readonly committed: boolean;
  readonly records: number;
  readonly durationMs: number;
  /** Time in each phase: waiting for sends, adding offsets, committing in Kafka, committing the store. */
  readonly phasesMs?: { readonly send: number; readonly offsets: number; readonly kafkaCommit: number; readonly storeCommit: number };
}

/** What a cut holds (TaskCut, which also names its task). */
export interface CutContent {
  /** Input records processed in the cut. */
  readonly records: number;
  readonly output: readonly OutputRecord[];
  readonly offsets: readonly TopicPartitionOffset[];
  readonly store: CapturedCommit;
}

export class TaskCommit {
  private isCommitting = false;
  /** A commit has started and not cut its transaction yet (it may be awaiting an abort): the task processes nothing until it has. */
  private beforeCut = false;
  private lastCommit = 0;
  /** The input position of the last commit (or of the open): where a rolled-back task resumes. */
  private readonly committedOffsets = new Map<string, number>();
  /**
   * Changelog ends read after an aborted transaction (store name → offset): its records and
   * marker moved the true end by an amount only the broker knows, so the next store commit
   * counts from here (rewindToCommitted).
   */
  private changelogFloor: Record<string, number> = {};
  /**
   * Exactly-once v2: the input records of this task's cut in the instance's transaction, kept
   * until that transaction commits (completeCut) — a confirmed abort processes them again from
   * memory (rewindToCommitted) instead of seeking the consumer back and fetching them anew.
   */
  private cutInputs: InputRecord[] = [];

  constructor(
    private readonly config: TaskCommitConfig,
    private readonly processor: TaskProcessor,
    private readonly output: TransactionOutput,
    /** changelog topic → store name, for this task's stores. */
    private readonly changelogStores: ReadonlyMap<string, string>,
  ) {}

  /**
   * The task's own commit (exactly-once v1, at-least-once) is in flight. The task processes on
   * meanwhile, into the next transaction, whose output is held until this commit has ended.
   */
  get committing(): boolean {
    return this.isCommitting;
  }

  /** The task may process: no commit of its is between its start and its cut. */
  get processingAllowed(): boolean {
    return !this.beforeCut;
  }

  get lastCommitAt(): number {
    return this.lastCommit;
  }

  /** The task starts at `offsets`, its committed input position, at `now`. */
  startAt(offsets: ReadonlyMap<string, number>, now: number): void {
    this.committedOffsets.clear();
    for (const [topic, offset] of offsets) this.committedOffsets.set(topic, offset);
    this.cutInputs = [];
    this.lastCommit = now;
  }

  /**
   * Sends the buffered output ahead of the commit once it holds `eagerSendRecords` — never into
   * the instance's transaction, and not while the previous transaction commits (one transaction
   * at a time per producer: the next one's records wait for it).
   */
  sendAhead(producer: TaskProducer | null): void {
    if (this.config.instanceTransaction !== true && !this.isCommitting && this.output.buffered() >= (this.config.eagerSendRecords ?? 1000) && this.processor.rollback === null && producer !== null) {
      this.output.sendAhead(producer);
    }
  }

  /**
   * Runs the commit protocol once. Throws on any failure: the caller treats the task as
   * corrupted (it rolls back to its last commit and re-opens, dropping what it processed since).
   *
   * The transaction is cut at the start, synchronously, as exactly-once v2 cuts (cut()): its
   * output sealed, its store writes captured (readable as the store's `committing` layer until
   * they land), its input position taken. The task processes on while the rest runs, into the
   * next transaction; before, it stood still for the whole commit — 520–590 ms at the median
   * with 200 kafkajs tasks (bench:scale), a pause longer than the 0.5 s an issue asked of a rebalance.
   */
  async commit(clock: () => number, producer: TaskProducer, stores: TaskStores): Promise<CommitOutcome> {
    const started = clock();
    // A processor failed after records of this transaction went out, and its rollback (queued
    // behind this commit) has not run: settle it first, or the commit would carry the half of a
    // pack processed before the failure and the rollback would then apply it again.
    if (this.processor.rollback !== null) await this.processor.rollbackAndReplay();
    const step = (s: CommitStep): void => this.config.onCommitStep?.(s, this.config.id);
    this.isCommitting = true;
    this.beforeCut = true;
    let captured: CapturedCommit | null = null;
    try {
      this.processor.flushAll();
      while (this.processor.abortRequested) {
        // Records of the doomed transaction may be in Kafka already (sent ahead): abort it there first.
        if (this.output.sentInTxn) {
          await this.output.settle();
          await producer.abort();
        }
        this.processor.abortAndReplay();
        this.processor.flushAll();
      }
      // The cut: one synchronous step, so it is one instant of the task's processing. The
      // capture first: it flushes what is still dirty, whose changelog records must join the
      // sealed output, not the next transaction's.
      const records = this.processor.records;
      const offsets = this.inputOffsets();
      captured = stores.capture();
      this.refuseTorn();
      const output = this.output.seal(producer);
      this.processor.closeTransaction();
      this.beforeCut = false;
      step('after-flush');
      await output.drained();
      step('after-send');
      const sent = clock();
      const changelogOffsets = output.changelogOffsets(stores.changelogOffsets());
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
      const written = captured;
      captured = null; // settled by its write, whatever the outcome
      await written.write(changelogOffsets);
      step('after-store-commit');
      const storeCommitted = clock();
      for (const o of offsets) this.committedOffsets.set(o.topic, o.offset);
      this.lastCommit = clock();
      return {
        committed: true,
        records,
        durationMs: storeCommitted - started,
        phasesMs: { send: sent - started, offsets: offsetsAdded - sent, kafkaCommit: kafkaCommitted - offsetsAdded, storeCommit: storeCommitted - kafkaCommitted },
      };
    } catch (error) {
      captured?.abandon();
      throw error;
    } finally {
      this.isCommitting = false;
      this.beforeCut = false;
    }
  }

  /**
   * Exactly-once v2: takes everything processed since the last cut into the instance's
   * transaction — flushes the caches (changelog records join the output), captures the store
   * writes and the input position — and starts afresh. Synchronous, so the cut is one instant of
   * the task's processing.
   */
  cut(stores: TaskStores): CutContent {
    this.processor.flushAll();
    // Nothing of the task is in the instance's transaction before its cut: an abort is in memory.
    while (this.processor.abortRequested) {
      this.processor.abortAndReplay();
      this.processor.flushAll();
    }
    const store = stores.capture();
    try {
      this.refuseTorn();
    } catch (error) {
      store.abandon();
      throw error;
    }
    const cut: CutContent = {
      records: this.processor.records,
      output: this.output.take(),
      offsets: this.inputOffsets(),
      store,
    };
    this.cutInputs = this.processor.closeTransaction();
    return cut;
  }

  /**
   * A flush tore the task's transaction (a change failed downstream while another task's write
   * flushed it, and the rollback could not run here: records already in Kafka), or the capture's
   * own flush did: nothing of it may commit. The caller rolls the task back.
   */
  private refuseTorn(): void {
    const torn = this.processor.tornFlush;
    if (torn !== undefined) throw new IqgateError('PROCESSING_FAILED', `task ${this.config.id}: a change flushed from the record cache failed downstream; the transaction is rolled back`, { cause: torn });
  }

  /** The input position to commit: the next offset of each source topic on this task's partition. */
  private inputOffsets(): TopicPartitionOffset[] {
    return [...this.processor.nextOffsets].map(([topic, offset]) => ({ topic, partition: this.config.partition, offset }));
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
  async completeCut(cut: CutContent, stores: TaskStores | null, now: number, group?: CommitGroup): Promise<void> {
    this.cutInputs = [];
    if (stores === null) {
      cut.store.abandon();
      return;
    }
    const written = new Map<string, number>();
    for (const record of cut.output) {
      if (record.partition === this.config.partition && this.changelogStores.has(record.topic)) written.set(record.topic, (written.get(record.topic) ?? 0) + 1);
    }
    const offsets: Record<string, number> = { ...stores.changelogOffsets() };
    for (const [store, floor] of Object.entries(this.changelogFloor)) offsets[store] = Math.max(offsets[store] ?? 0, floor);
    this.changelogFloor = {};
    for (const [topic, count] of written) {
      const store = this.changelogStores.get(topic)!;
      offsets[store] = (offsets[store] ?? 0) + count + 1;
    }
    // Synchronously from the call (the group is sealed right after the cycle hands out its cuts).
    await cut.store.write(offsets, group);
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
   * it — are returned, in order, for the task to put back at the front of its inbox: they are
   * processed again from memory, with no seek and no fetch, and the input position is the
   * committed one again. What the consumer delivers next follows on from the inbox as before.
   */
  rewindToCommitted(): InputRecord[] {
    const again = [...this.cutInputs, ...this.processor.uncommittedInputs()];
    this.cutInputs = [];
    this.processor.dropUncommitted();
    this.processor.moveTo(this.committedOffsets);
    return again;
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
}
