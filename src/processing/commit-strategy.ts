/**
 * How the task manager's tasks commit, chosen once when it starts (docs/engine.md):
 * - PerTaskCommits — each task commits on its own, in the control queue: its own Kafka
 *   transaction (exactly-once v1, kafkajs: one transactional id per task) or a plain offset
 *   commit (at-least-once), each followed by its store commit; a closing task commits last.
 * - InstanceCommits — exactly-once v2 (librdkafka, KIP-447): every task's work goes into one
 *   transaction of the instance's (InstanceCommitter), which processing does not wait for; a
 *   revoked task drops what it did since its last cut, and a close commits nothing.
 * The task manager decides when (the interval, the uncommitted-bytes limit, a rebalance, a
 * stop); a strategy decides how, and what a revocation or a stop waits for.
 */
import { InstanceCommitter } from './instance-committer.js';
import type { KafkaPorts, StreamProducerPort, TaskProducer } from './ports.js';
import type { StreamTask, TaskLogger } from './stream-task.js';
import { FatalTaskError } from './task-error-policy.js';
import type { ProcessingPacer } from './processing-loop.js';
import type { TaskManagerEvents } from './task-manager-contract.js';
import type { TaskRecovery } from './task-recovery.js';
import type { ControlQueue } from './control-queue.js';

/** What a strategy needs of the task manager. */
export interface CommitHost {
  readonly tasks: () => Iterable<StreamTask>;
  readonly control: ControlQueue;
  readonly recovery: TaskRecovery;
  readonly events: TaskManagerEvents;
  readonly logger: TaskLogger;
  readonly clock: () => number;
  readonly commitIntervalMs: number;
  /** A commit settled (whatever its outcome): lift the uncommitted-bytes hold if it freed enough, and process on. */
  readonly afterCommit: () => void;
  readonly scheduleLoop: () => void;
  readonly failed: () => boolean;
  /** Queues a task's close; resolves when it has run. `after`: what the close waits for first. */
  readonly enqueueClose: (task: StreamTask, commit: boolean, after?: Promise<void>) => Promise<void>;
}

export interface CommitStrategy {
  /** Exactly-once v2: a task's work joins the instance's transaction (StreamTask's instanceTransaction). */
  readonly instanceTransaction: boolean;
  /** Whether a task's close may commit its last work (a graceful stop commits before it closes either way). */
  readonly closeCommits: boolean;
  /** Early set-up while the consumer joins its group. */
  start(): void;
  /** The task's producer, when the strategy provides it (exactly-once v2: a view of the instance's). */
  producerFor?(): TaskProducer;
  /** Commits what is due at `now` (the interval since the last commit). */
  due(now: number): void;
  /** Commits `task`'s work now (coalesced with one in flight). */
  request(task: StreamTask): void;
  /** Settles when a cut taken before this call can no longer reach Kafka (a re-open or close waits for it); undefined when no cut is ever in flight. */
  cycleEnded(): Promise<void> | undefined;
  /** Settles once no offsets of `tasks` can still join a transaction. */
  offsetsSettled(tasks: readonly StreamTask[]): Promise<void>;
  /** The partitions of `revoked` (already forgotten by the manager) go: commit or drop their work and close them. */
  revoke(revoked: readonly StreamTask[]): Promise<void>;
  /** Commits every task's uncommitted work now; resolves once done, whatever the outcome. */
  commitNow(): Promise<void>;
}

/** Exactly-once v1 and at-least-once: a commit per task, in the control queue. */
export class PerTaskCommits implements CommitStrategy {
  readonly instanceTransaction = false;
  readonly closeCommits = true;

  constructor(private readonly host: CommitHost) {}

  start(): void {}

  due(now: number): void {
    for (const task of this.host.tasks()) {
      if (task.state === 'RUNNING' && !task.committing && task.hasUncommitted() && now - task.lastCommitAt >= this.host.commitIntervalMs) this.request(task);
    }
  }

  request(task: StreamTask): void {
    this.host.control.enqueue({ key: `commit:${task.id}`, group: task.id, run: () => this.commitTask(task) });
  }

  cycleEnded(): undefined {
    return undefined;
  }

  offsetsSettled(): Promise<void> {
    return Promise.resolve();
  }

  /** Each close commits its task's offsets (v1: its own transaction), which must happen while the partitions are still ours. */
  async revoke(revoked: readonly StreamTask[]): Promise<void> {
    await Promise.all(revoked.map((task) => this.host.enqueueClose(task, true)));
  }

  async commitNow(): Promise<void> {
    for (const task of this.host.tasks()) if (task.hasUncommitted()) this.request(task);
    await this.host.control.idle();
  }

  private async commitTask(task: StreamTask): Promise<void> {
    if (task.state !== 'RUNNING' || !task.hasUncommitted() || this.host.failed()) return;
    try {
      const outcome = await task.commit(this.host.clock);
      if (outcome.committed) {
        this.host.recovery.resetAttempts(task.id);
        this.host.events.onCommit?.(task.id, outcome.durationMs, outcome.records, outcome.phasesMs);
      }
    } catch (error) {
      await this.host.recovery.recover(task, error);
    } finally {
      this.host.afterCommit();
    }
  }
}

export interface InstanceCommitsDeps {
  readonly producer: StreamProducerPort;
  readonly sliceClock: () => number;
  readonly pacer: ProcessingPacer;
  /** For the changelog ends after an abort (rewind). */
  readonly admin: KafkaPorts['admin'];
}

/** Exactly-once v2: one transaction for the instance (InstanceCommitter), processing going on while it commits. */
export class InstanceCommits implements CommitStrategy {
  readonly instanceTransaction = true;
  readonly closeCommits = false;
  private readonly committer: InstanceCommitter;

  constructor(private readonly host: CommitHost, private readonly deps: InstanceCommitsDeps) {
    this.committer = new InstanceCommitter({
      producer: deps.producer,
      tasks: host.tasks,
      clock: host.clock,
      sliceClock: deps.sliceClock,
      pacer: deps.pacer,
      logger: host.logger,
      onCommit: (outcome) => {
        for (const task of host.tasks()) host.recovery.resetAttempts(task.id);
        host.events.onInstanceCommit?.(outcome);
      },
      ...(host.events.onCommitStep ? { onCommitStep: host.events.onCommitStep } : {}),
      onFailed: (tasks, error) => this.recoverAll(tasks, error),
      onRewound: (tasks, error) => this.rewindAfterAbort(tasks, error),
      abandoned: host.failed,
    });
  }

  /**
   * InitProducerId (which fences this instance's previous incarnation and settles its open
   * transaction) now, while the consumer joins its group, rather than when the first task opens —
   * every task's open waits for it (bench:restart). A failure here is only early: the first
   * task's open asks again.
   */
  start(): void {
    this.committer.ready().catch(() => undefined);
  }

  /**
   * A task's view of the instance's producer: opening a task awaits the producer's
   * initialisation (InitProducerId fences the instance's previous incarnation before any
   * committed offset is read); everything else goes through the InstanceCommitter, so the
   * per-task calls are never made, and dropping a task's view leaves the shared producer alone.
   */
  producerFor(): TaskProducer {
    const unused = (): Promise<never> => Promise.reject(new TypeError('exactly-once v2: tasks commit through the InstanceCommitter'));
    return {
      transactionalId: this.deps.producer.transactionalId,
      init: () => this.committer.ready(),
      send: unused,
      sendOffsets: unused,
      commit: unused,
      abort: async () => {},
      close: async () => {},
    };
  }

  due(now: number): void {
    if (!this.committer.committing && now - this.committer.lastCycleAt >= this.host.commitIntervalMs && this.anyUncommitted()) void this.commitNow();
  }

  request(): void {
    void this.commitNow();
  }

  cycleEnded(): Promise<void> {
    return this.committer.cycleEnded();
  }

  offsetsSettled(tasks: readonly StreamTask[]): Promise<void> {
    return this.committer.offsetsSettled(tasks);
  }

  /**
   * The partitions go as soon as no offsets of theirs can still join a transaction. What a
   * revoked task processed since its last cut is dropped here (the next owner processes it again
   * from the committed offsets: a commit interval's worth at most), and a revoked task is never
   * cut again (StreamTask.cut): a cut taken after the partition went would be committed under
   * this member's current generation, which KIP-447 does not fence. A cut already in the cycle
   * under way stays in it; once that cycle has sent its offsets, they are the transaction's, and
   * the next owner's read of the committed offsets (require_stable) waits for that transaction to
   * end, its restore for its markers (TaskOpener.settledEnd). So the revoke callback — while
   * which librdkafka holds back the fetches of every partition, the staying ones too
   * (rd_kafka_assignment_pause "incremental rebalance") — waits at most for the rest of one
   * cycle's produce and its offsets, not for a whole commit and another cycle. The tasks close
   * after that cycle has ended (its store writes included), in the control queue (a task
   * assigned again meanwhile opens after its close: one task's operations run in order).
   */
  async revoke(revoked: readonly StreamTask[]): Promise<void> {
    for (const task of revoked) if (task.state === 'RUNNING') task.dropUncommitted();
    const cycleEnded = this.committer.cycleEnded();
    for (const task of revoked) void this.host.enqueueClose(task, false, cycleEnded);
    await this.committer.offsetsSettled(revoked);
  }

  /** One cycle of the instance's transaction (coalesced with one in flight); processing goes on meanwhile. */
  commitNow(): Promise<void> {
    return this.committer.request().finally(() => this.host.afterCommit());
  }

  private anyUncommitted(): boolean {
    for (const task of this.host.tasks()) if (task.state === 'RUNNING' && task.hasUncommitted()) return true;
    return false;
  }

  /** A cycle with an unknown outcome: roll its tasks back and re-open them. */
  private async recoverAll(tasks: readonly StreamTask[], error: unknown): Promise<void> {
    await Promise.all(tasks.map((task) => this.host.recovery.recover(task, error, { logged: true })));
    this.host.scheduleLoop();
  }

  /**
   * A cycle whose abort the broker confirmed: its tasks rewind in memory
   * (StreamTask.rewindToCommitted) and the consumer goes back to their committed positions. The
   * changelog ends are read first, inside the cycle, so before any next transaction begins;
   * unreadable, the tasks take the slow path (recoverAll).
   */
  private async rewindAfterAbort(tasks: readonly StreamTask[], error: unknown): Promise<void> {
    // A cut's replay met a record whose policy is `fail`: rewinding would meet it again.
    if (error instanceof FatalTaskError) {
      await this.recoverAll(tasks, error);
      return;
    }
    // At once, in memory: the tasks go on from their last commit with the records they had
    // processed since, while the changelog ends are read below. Not a revoked task (never cut
    // again: it has nothing more to commit, its work was dropped at the revocation) nor one
    // suspended since (it has dropped its work).
    const rewound = tasks.filter((task) => task.state === 'RUNNING' && !task.revoked);
    for (const task of rewound) task.rewindToCommitted();
    this.host.scheduleLoop();
    // The ends must be known before the next transaction commits: the committer starts its next
    // cycle only once this has settled.
    const topics = new Set(rewound.flatMap((task) => [...task.changelogTopics()]));
    const ends = new Map<string, Map<number, number>>();
    try {
      for (const topic of topics) ends.set(topic, await this.deps.admin.endOffsets(topic));
    } catch (readError) {
      this.host.logger.warn({ err: readError }, 'reading the changelog ends after an abort failed: the tasks are re-opened');
      await this.recoverAll(tasks, error);
      return;
    }
    for (const task of rewound) task.raiseChangelogFloor((topic) => ends.get(topic)?.get(task.partition));
  }
}
