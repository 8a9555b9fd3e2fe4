/**
 * Exactly-once v2 (KIP-447): every task of the instance commits in ONE Kafka transaction of
 * ONE producer, as a Kafka Streams stream thread does, and processing never waits for it.
 *
 * A commit cycle:
 *   1. cut every task with uncommitted work (synchronous: caches flushed, store writes
 *      captured, input positions taken, output handed over — TaskCut);
 *   2. produce the cuts' output into the open transaction; 3. add all input offsets with the
 *      consumer's group metadata; 4. commit the Kafka transaction;
 *   5. write every task's captured batch, changelog offsets and Position to the store in one
 *      atomic batch for all of them (the changelog offsets counted, StreamTask.completeCut).
 * Between 1 and 5 the tasks go on processing into fresh write batches and output buffers: the
 * captured batches stay readable as the store's `committing` layer, and the output waits in
 * memory for the next transaction (nothing can be produced into a transaction that is
 * committing). The next cycle starts once this one is done; requests meanwhile coalesce into it.
 *
 * A crash anywhere before 4 aborts the transaction (the restarted instance's InitProducerId
 * does it) and leaves every store untouched; between 4 and 5 the stored changelog offsets are
 * behind and restore replays the committed tail: no wipe, no duplicate, no loss — the same
 * argument as the per-task protocol (task-commit.ts), with one transaction instead of N.
 *
 * A failed cycle whose abort is known (the broker confirmed it, or the client had ruled the
 * transaction abort-only: a record timed out or was refused) rewinds the tasks of the cut in
 * memory (onRewound): they stay RUNNING. Otherwise (fenced by a newer generation, a broker gone,
 * the commit perhaps reached) the outcome is unknown: the tasks of the cut are rolled back to
 * their last commit and re-opened by the caller (onFailed). Either way the producer is
 * initialised again before anything else is produced.
 * Tasks that were not in the cut keep their state: their output since waits for the next
 * transaction.
 */
import { CommitGroup } from '../store/commit-group.js';
import type { StreamProducerPort, TopicPartitionOffset } from './ports.js';
import type { CommitStep, StreamTask, TaskCut, TaskLogger } from './stream-task.js';
import type { ProcessingPacer } from './processing-loop.js';

export interface InstanceCommitOutcome {
  readonly tasks: number;
  /** The ids of the tasks the cycle committed. */
  readonly taskIds: readonly string[];
  readonly records: number;
  readonly durationMs: number;
  readonly phasesMs: { readonly send: number; readonly offsets: number; readonly kafkaCommit: number; readonly storeCommit: number };
}

export interface InstanceCommitterDeps {
  readonly producer: StreamProducerPort;
  /** The tasks that may have uncommitted work (the assigned ones). */
  readonly tasks: () => Iterable<StreamTask>;
  readonly clock: () => number;
  /** The clock of the pacer's windows and of the cycle's slices (TaskManagerDeps.sliceClock). */
  readonly sliceClock: () => number;
  /** The task manager's pacer (TaskManagerDeps.pacer): the cycle's slices follow its windows. */
  readonly pacer: ProcessingPacer;
  readonly logger: TaskLogger;
  readonly onCommit?: (outcome: InstanceCommitOutcome) => void;
  readonly onCommitStep?: (step: CommitStep, taskId: string) => void;
  /** The cycle failed with an unknown outcome: roll these tasks back and re-open them (TaskRecovery). */
  readonly onFailed: (tasks: readonly StreamTask[], error: unknown) => Promise<void>;
  /** The cycle's transaction was aborted for sure: rewind these tasks to their last commit (StreamTask.rewindToCommitted). */
  readonly onRewound: (tasks: readonly StreamTask[], error: unknown) => Promise<void>;
  /** True once the instance failed or gave up a stop that timed out: clients and stores may be closed under a cycle. */
  readonly abandoned?: () => boolean;
}

/** Longest synchronous stretch of a commit cycle (cutting tasks, producing their output) before it yields, unless a pacer says less. */
const SLICE_MS = 5;
/** Records handed to the producer in one call. */
const PRODUCE_CHUNK = 500;

/** The cycle under way, as revocations see it (offsetsSettled, cycleEnded). */
class CycleInFlight {
  /** The tasks it has cut so far. */
  readonly cut = new Set<StreamTask>();
  readonly ended: Promise<void>;
  readonly offsetsSent: Promise<void>;
  private resolveEnded!: () => void;
  private resolveOffsets!: () => void;

  constructor() {
    this.ended = new Promise((resolve) => { this.resolveEnded = resolve; });
    this.offsetsSent = new Promise((resolve) => { this.resolveOffsets = resolve; });
  }

  /** Its offsets are the transaction's (acknowledged), or will never be sent (it failed first). */
  offsetsDone(): void {
    this.resolveOffsets();
  }

  end(): void {
    this.resolveOffsets();
    this.resolveEnded();
  }
}

function yieldToIo(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

interface Waiter {
  resolve(): void;
}

export class InstanceCommitter {
  private running = false;
  /** Callers waiting for a cycle that starts after their request. */
  private waiting: Waiter[] = [];
  private needsInit = true;
  private initializing: Promise<void> | null = null;
  /** When the last cycle started (for the commit interval). */
  lastCycleAt = 0;
  /** The cycle under way: the tasks it has cut, `ended` when it is over, `offsetsSent` once it can add no more input offsets to its transaction. */
  private current: CycleInFlight | null = null;

  constructor(private readonly deps: InstanceCommitterDeps) {}

  get committing(): boolean {
    return this.running;
  }

  /**
   * Resolves once no offsets of `tasks` can be added to a transaction any more: at once when the
   * cycle under way has cut none of them (or none runs), otherwise when it has sent its offsets
   * (the broker acknowledged them as the transaction's) or ended without. For revoked tasks:
   * they are never cut again (StreamTask.cut), so later cycles carry none of their offsets.
   */
  offsetsSettled(tasks: readonly StreamTask[]): Promise<void> {
    const current = this.current;
    return current !== null && tasks.some((task) => current.cut.has(task)) ? current.offsetsSent : Promise.resolve();
  }

  /** Resolves once the cycle under way, if any, has ended (its store writes included). */
  cycleEnded(): Promise<void> {
    return this.current?.ended ?? Promise.resolve();
  }

  /**
   * InitProducerId, once before the first task opens and again after a failed cycle; opening
   * tasks await it (it fences the instance's previous incarnation and settles its transaction
   * before any committed offset is read). Concurrent callers share one attempt.
   */
  ready(): Promise<void> {
    if (!this.needsInit) return Promise.resolve();
    this.initializing ??= (async () => {
      try {
        await this.deps.producer.init();
        this.needsInit = false;
      } finally {
        this.initializing = null;
      }
    })();
    return this.initializing;
  }

  /**
   * Commits every task with uncommitted work (the assigned ones: a task that left the assignment is
   * revoked and never cut).
   * Resolves once a cycle that started after this call has finished, whatever its outcome:
   * failures are handed to onFailed, never thrown here.
   */
  request(): Promise<void> {
    const done = new Promise<void>((resolve) => this.waiting.push({ resolve }));
    if (!this.running) void this.drive();
    return done;
  }

  private async drive(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length > 0) {
        const served = this.waiting;
        this.waiting = [];
        const current = new CycleInFlight();
        this.current = current;
        try {
          await this.cycle(current);
        } catch (error) {
          // cycle() hands failures to onFailed; anything here is a bug in a callback — unless the
          // instance was abandoned (a stop that timed out closes stores and clients under the
          // cycle; what it did not finish is aborted or restored, docs/engine.md).
          if (this.deps.abandoned?.() === true) this.deps.logger.info({ err: error }, 'commit cycle ended by the abandoned stop');
          else this.deps.logger.warn({ err: error }, 'commit cycle failed unexpectedly');
        } finally {
          // Revocations and re-openings wait for this, whatever happened above.
          this.current = null;
          current.end();
        }
        for (const waiter of served) waiter.resolve();
      }
    } finally {
      this.running = false;
    }
  }

  /** Where the cycle's next synchronous stretch ends: SLICE_MS at most, less if the pacer says so. */
  private sliceEnd(): number {
    const now = this.deps.sliceClock();
    return now + Math.min(SLICE_MS, this.deps.pacer.budgetMs(now));
  }

  /**
   * Yields to I/O and, while the pacer shares the event loop with waiting queries and rests,
   * waits for processing's next window; then the end of the next stretch.
   */
  private async nextSlice(): Promise<number> {
    const { sliceClock, pacer } = this.deps;
    await yieldToIo();
    for (let now = sliceClock(); pacer.budgetMs(now) <= 0; now = sliceClock()) await new Promise((resolve) => setTimeout(resolve, pacer.restMs(now)));
    return this.sliceEnd();
  }

  private async cycle(current: CycleInFlight): Promise<void> {
    const { producer, clock } = this.deps;
    const dirty = [...this.deps.tasks()].filter((task) => task.state === 'RUNNING' && task.hasUncommitted());
    if (dirty.length === 0) return;
    if (this.needsInit) {
      try {
        await this.ready();
      } catch (error) {
        // The broker may be away: the work stays uncommitted (back-pressure bounds it) and the
        // next cycle tries again.
        this.deps.logger.warn({ err: error }, 'the instance producer could not be initialised; commits wait');
        return;
      }
    }
    const started = clock();
    this.lastCycleAt = started;
    const cuts: TaskCut[] = [];
    const stepOf = (s: CommitStep, cut: TaskCut): void => this.deps.onCommitStep?.(s, cut.task.id);
    const step = (s: CommitStep): void => {
      for (const cut of cuts) stepOf(s, cut);
    };
    let sent = started;
    let offsetsAdded = started;
    // The task being cut: a cut that throws (its replay under the `fail` policy, say) leaves it
    // out of `cuts`, and it must roll back with the others all the same.
    let cutting: StreamTask | null = null;
    try {
      // Task by task, in slices of at most SLICE_MS: each cut is one instant of its own task
      // (its state, output and position together), so tasks need not be cut in the same
      // instant, and processing and queries run in between instead of waiting for the whole
      // instance's flush and produce.
      const offsets: TopicPartitionOffset[] = [];
      let sliceEnd = this.sliceEnd();
      for (const task of dirty) {
        cutting = task;
        const cut = task.cut();
        cutting = null;
        if (cut === null) continue;
        cuts.push(cut);
        current.cut.add(task);
        stepOf('after-flush', cut);
        for (let from = 0; from < cut.output.length; from += PRODUCE_CHUNK) {
          producer.produce(cut.output.length <= PRODUCE_CHUNK ? cut.output : cut.output.slice(from, from + PRODUCE_CHUNK));
          if (this.deps.sliceClock() >= sliceEnd) sliceEnd = await this.nextSlice();
        }
        for (const offset of cut.offsets) offsets.push(offset);
        stepOf('after-send', cut);
      }
      if (cuts.length === 0) return;
      sent = clock();
      await producer.sendOffsets(offsets);
      current.offsetsDone();
      step('after-send-offsets');
      offsetsAdded = clock();
      await producer.commit();
    } catch (error) {
      // Nothing more of this transaction's offsets goes out: what was added, the abort below or
      // the coordinator's timeout ends (the next owner's require_stable read waits for that).
      current.offsetsDone();
      for (const cut of cuts) cut.store.abandon();
      const tasks = cuts.map((cut) => cut.task);
      if (cutting !== null && !tasks.includes(cutting)) tasks.push(cutting);
      // A transaction the broker confirms aborted (typically offsets refused during a rebalance:
      // a stale generation) has a known outcome: the tasks rewind in memory and go on. Otherwise
      // (fenced, broker away, timed out) the outcome is unknown: they are rolled back and
      // re-opened — a new InitProducerId settles the transaction, restore replays whatever it
      // committed — and the producer is initialised again first.
      if (await producer.abortAfterFailure()) {
        // The producer is initialised again before the next transaction (a fresh client,
        // InitProducerId): librdkafka keeps its sequence numbers after some aborts, and the next
        // transaction then fails (test/integration/kafka/rdkafka-transaction-failures.test.ts);
        // and an abort confirmed by the failure's own verdict may still be settling. Until that
        // init succeeds, cycles wait and the tasks keep processing (ready() in the next cycle).
        this.needsInit = true;
        this.deps.logger.info({ err: error, tasks: tasks.length }, 'transaction aborted; its tasks rewind to their last commit and go on');
        await this.deps.onRewound(tasks, error);
        return;
      }
      this.needsInit = true;
      this.deps.logger.warn({ err: error, tasks: tasks.length }, 'commit failed with an unknown outcome: its tasks are rolled back and re-opened');
      // At once, not at the next cycle or task opening: InitProducerId settles the transaction,
      // and the next owner of a partition this instance gave up while it was in flight waits for
      // that (require_stable) — until the transaction times out, if nothing here initialises.
      this.ready().catch((initError: unknown) => {
        // The next cycle tries again, once a task has work; until then the transaction times out.
        this.deps.logger.warn({ err: initError }, 'initialising the instance producer after a commit with an unknown outcome failed; the next cycle tries again');
      });
      await this.deps.onFailed(tasks, error);
      return;
    }
    step('after-kafka-commit');
    const kafkaCommitted = clock();
    // Every task's store write in one committed-store batch: the committed view across this
    // instance's partitions is then this transaction's cut (commit-group.ts).
    const group = new CommitGroup();
    const completing = cuts.map((cut) => cut.task.completeCut(cut, kafkaCommitted, group));
    group.seal();
    const writes = await Promise.allSettled(completing);
    const failed: StreamTask[] = [];
    let firstError: unknown;
    writes.forEach((write, i) => {
      if (write.status === 'rejected') {
        failed.push(cuts[i]!.task);
        firstError ??= write.reason;
      }
    });
    // A store that could not write what Kafka committed: restore replays it from the changelog.
    if (failed.length > 0) await this.deps.onFailed(failed, firstError);
    step('after-store-commit');
    const storeCommitted = clock();
    let records = 0;
    for (const cut of cuts) records += cut.records;
    // Each cycle at debug (bench:scale with SCALE_LOG=debug): where a commit stalls, and how much
    // a rewind after it will process again, show here first.
    this.deps.logger.debug({ tasks: cuts.length, records, ms: storeCommitted - started, sendMs: sent - started, offsetsMs: offsetsAdded - sent, kafkaCommitMs: kafkaCommitted - offsetsAdded }, 'commit cycle');
    this.deps.onCommit?.({
      tasks: cuts.length,
      taskIds: cuts.map((cut) => cut.task.id),
      records,
      durationMs: storeCommitted - started,
      phasesMs: { send: sent - started, offsets: offsetsAdded - sent, kafkaCommit: kafkaCommitted - offsetsAdded, storeCommit: storeCommitted - kafkaCommitted },
    });
  }
}
