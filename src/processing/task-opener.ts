/**
 * The slow I/O at both ends of a task's life, run only inside the control queue. Opening:
 * InitProducerId → open stores → read committed offsets → restore the changelog tail to its
 * settled end → seek → resume. Closing: a last commit when asked, then producer and stores. The
 * TaskManager decides when a task opens or closes and what a failure leads to (TaskRecovery); the
 * steps, and the per-topic offset readers that all opening tasks share, are here.
 */
import { IqgateError } from '../errors.js';
import type { StoreEngine, TaskStores } from '../store/types.js';
import { discardProducer } from './discard-producer.js';
import { FreshPartitionReader } from './fresh-partition-reader.js';
import { FreshTopicReader } from './fresh-topic-reader.js';
import type { KafkaPorts, TaskProducer } from './ports.js';
import type { ProcessingOptions } from './processing-options.js';
import { RestoreCancelled, restoreTaskStores, type RestoreProgress } from './restore-task-stores.js';
import type { StreamTask, TaskLogger } from './stream-task.js';
import type { SubTopologyPlan } from './sub-topology-plan.js';
import { transactionalIdFor } from './topic-names.js';

export interface TaskOpenerDeps {
  readonly options: ProcessingOptions;
  readonly ports: KafkaPorts;
  readonly engine: StoreEngine;
  readonly logger: TaskLogger;
  readonly clock: () => number;
  readonly onRestoreProgress: (progress: RestoreProgress) => void;
  /** The task's producer; default: one transactional producer per task (exactly-once v1) or the shared idempotent one. */
  readonly createProducer?: (plan: SubTopologyPlan, task: StreamTask) => TaskProducer;
  /** The open stores a standby of the task kept here handed over (StandbyTasks.takeHandoff), if any. */
  readonly takeStandbyStores?: (taskId: string) => TaskStores | undefined;
  /** Closes stores handed over for the task that its open did not take (StandbyTasks.dropHandoff). */
  readonly dropStandbyStores?: (taskId: string) => Promise<void>;
}

/** How often an opening task asks again for a changelog end held back by an open transaction. */
const SETTLE_POLL_MS = 50;
/** Longest wait for it: a transaction lasts at most the broker's transaction.max.timeout.ms (15 min by default, 10 s to 60 s as iqgate configures its producers). */
const SETTLE_TIMEOUT_MS = 120_000;

export class TaskOpener {
  private readonly committed: FreshPartitionReader;
  private readonly beginnings: FreshTopicReader<Map<number, number>>;
  private readonly ends: FreshTopicReader<Map<number, number>>;
  private readonly highs: FreshTopicReader<Map<number, number>>;

  constructor(private readonly deps: TaskOpenerDeps) {
    const admin = deps.ports.admin;
    const appId = deps.options.applicationId;
    this.committed = new FreshPartitionReader((topic, partitions) => admin.committedOffsets(appId, topic, partitions));
    this.beginnings = new FreshTopicReader((topic) => admin.beginningOffsets(topic));
    this.ends = new FreshTopicReader((topic) => admin.endOffsets(topic));
    this.highs = new FreshTopicReader((topic) => admin.highWatermarks(topic));
  }

  /**
   * Takes a RESTORING task to RUNNING, its partitions sought to the committed offsets and
   * resumed; returns early, the task left as it is, once `cancelled()` (revoked, stopping).
   * On failure it discards a producer not yet attached to the task, and throws.
   */
  async open(task: StreamTask, plan: SubTopologyPlan, cancelled: () => boolean): Promise<void> {
    const { options, ports, engine } = this.deps;
    let producer: TaskProducer | null = null;
    const { clock } = this.deps;
    const opened = clock();
    try {
      const exactlyOnce = options.processingGuarantee === 'exactly_once';
      producer = this.deps.createProducer?.(plan, task)
        ?? ports.producers.create(exactlyOnce ? transactionalIdFor(options.applicationId, plan.transactionalTopic, task.partition) : null);
      // Fences any older owner and completes its transaction before anything is read (docs/kafkajs-notes.md §4).
      await producer.init();
      const producerMs = clock() - opened;
      // Revoked during the init: the standby's stores stay out of a task that is going.
      if (cancelled()) throw new RestoreCancelled(task.id);
      const stores = task.stores ?? this.deps.takeStandbyStores?.(task.id) ?? await engine.openTask(task.id, [...plan.changelogTopics.keys()].map((name) => ({ name, partition: task.partition })));
      task.attach(producer, stores);
      producer = null;
      const storesMs = clock() - opened;
      // The committed offsets first, then the changelog's end (settledEnd): with the instance's
      // transaction (exactly-once v2) nothing here completes the previous owner's last
      // transaction (an InitProducerId of the task's own transactional id does, v1); reading the
      // offsets with require_stable waits for it, and only an end read after that — and after the
      // transaction's markers reached the changelog — includes its changelog records.
      const offsets = new Map<string, number>();
      for (const topic of plan.sourceTopics) {
        const committed = await this.committed.get(topic, task.partition);
        offsets.set(topic, committed ?? (await this.beginnings.get(topic)).get(task.partition) ?? 0);
      }
      const started = clock();
      // How much of the restore was waiting for the changelog's end to settle (in the log line).
      let settleMs = 0;
      const replayed = await restoreTaskStores({
        taskId: task.id,
        partition: task.partition,
        stores,
        changelogTopics: plan.changelogTopics,
        endOffset: async (topic, partition) => {
          const asked = clock();
          try {
            return await this.settledEnd(task.id, topic, partition, cancelled);
          } finally {
            settleMs += clock() - asked;
          }
        },
        reader: ports.changelogReader,
        onProgress: (p) => this.deps.onRestoreProgress(p),
        cancelled,
      });
      if (cancelled()) return;
      task.startAt(offsets, this.deps.clock());
      task.markRunning();
      for (const tp of task.sourcePartitions) ports.consumer.seek({ ...tp, offset: offsets.get(tp.topic) ?? 0 });
      ports.consumer.resume(task.sourcePartitions);
      const now = clock();
      // Where the open went: producer (of which producerMs its init) and stores, then the committed offsets, then the restore (of which settleMs waited for the changelog's end).
      this.deps.logger.info({ taskId: task.id, replayed, offsets: Object.fromEntries(offsets), openMs: now - opened, producerMs, storesMs, restoreMs: now - started, settleMs }, 'task running');
    } catch (error) {
      await discardProducer(producer);
      // Handed-over stores this attempt did not take: not served as a standby's any longer (their
      // lag no longer moves); the next attempt opens the task's stores from disk.
      await this.deps.dropStandbyStores?.(task.id);
      throw error;
    }
  }

  /**
   * The changelog partition's read_committed end once every transaction that was open on it
   * when this was called has ended. The stable end (LSO) stops at the first record of an open
   * transaction; the high watermark counts every record written. Once a stable end read after
   * the call reaches the high watermark read after it, each transaction with records below that
   * watermark has its markers in the partition: the previous owner's last transaction — whose
   * offsets the caller has already read as stable — is then either in the restore (committed) or
   * skipped by it (aborted). The stable offsets alone do not say so: a transaction's markers reach
   * `__consumer_offsets` and the changelog separately (on a cluster, on different brokers), so its
   * offsets can read as stable while the changelog's stable end still stands before its records.
   * The wait is bounded by a transaction's timeout, after which the coordinator aborts it.
   */
  private async settledEnd(taskId: string, topic: string, partition: number, cancelled: () => boolean): Promise<number> {
    // Both read at once, both after the offsets: a stable end read before the high watermark and
    // at least as high shows no transaction was open then, and one read after it shows those
    // below it have ended; either way the last transaction's outcome is below the end.
    const [highs, firstEnds] = await Promise.all([this.highs.get(topic), this.ends.get(topic)]);
    const target = highs.get(partition);
    if (target === undefined) throw new IqgateError('KAFKA_ERROR', `no high watermark for ${topic}/${partition}`, { retriable: true });
    const deadline = this.deps.clock() + SETTLE_TIMEOUT_MS;
    for (let ends = firstEnds; ; ends = await this.ends.get(topic)) {
      const end = ends.get(partition) ?? 0;
      if (end >= target) return end;
      if (cancelled()) throw new RestoreCancelled(taskId);
      if (this.deps.clock() >= deadline) {
        throw new IqgateError('TRANSACTION_PENDING', `the stable end of ${topic}/${partition} stayed at ${end}, behind ${target}, for ${SETTLE_TIMEOUT_MS} ms`, { retriable: true, details: { topic, partition, end, target } });
      }
      await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    }
  }

  /**
   * Closes a task: a last commit when asked (revocation, shutdown), then producer and stores;
   * the stores' subscribers hear `reason` after that commit's events (task-close-reason.ts).
   */
  async close(task: StreamTask, commit: boolean, reason?: IqgateError): Promise<void> {
    if (commit && task.state === 'RUNNING' && task.hasUncommitted()) {
      try {
        await task.commit(this.deps.clock);
      } catch (error) {
        this.deps.logger.info({ taskId: task.id, err: error }, 'last commit of a revoked task failed (expected when the new owner fenced it); aborted');
      }
    }
    const { producer, stores } = task.detach();
    await discardProducer(producer);
    try {
      await stores?.close(reason);
    } catch (error) {
      this.deps.logger.warn({ taskId: task.id, err: error }, 'closing task stores failed');
    }
    task.markClosed();
  }
}
