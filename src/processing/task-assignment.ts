/**
 * The active tasks of a task manager and how a rebalance changes them: the group's assignment
 * becomes tasks (new ones opened, retained ones left running, gone ones closed), a revocation
 * takes tasks out at once, and a lost assignment suspends them until the group takes this member
 * back.
 *
 * kafkajs rebalances eagerly and offers no awaitable revoke callback (docs/kafkajs-notes.md §1), so:
 * - on REBALANCING every task with uncommitted work is asked to commit (coalesced: the manager);
 * - on the new assignment, revoked tasks stop taking records at once and are closed in the
 *   queue (a last commit is attempted: if the new owner's InitProducerId already fenced us it
 *   fails and the transaction is aborted — either way no record is committed twice);
 * - retained tasks keep their open stores and position (their partitions are sought back to
 *   the in-memory position, since kafkajs re-reads the broker-committed offset);
 * - new tasks are paused synchronously before the next fetch, then opened in the queue:
 *   InitProducerId → open stores → restore the changelog tail → read committed offsets → seek → resume.
 * librdkafka rebalances cooperatively: only the partitions that go are revoked (revoke), after
 * which the consumer gives them up; retained ones keep their fetch positions.
 * Either client reports an assignment its member has lost with its session (revoke with `lost`):
 * those tasks are re-opened from what is committed if the next assignment brings them back, never
 * taken for retained.
 */
import type { GroupConsumerPort, TopicPartition } from './ports.js';
import type { CommitStrategy } from './commit-strategy.js';
import type { ProcessingLoop } from './processing-loop.js';
import type { StoreRegistry } from './store-registry.js';
import type { StreamTask, TaskLogger } from './stream-task.js';
import type { SubTopologyPlan } from './sub-topology-plan.js';
import type { TaskOperations } from './task-operations.js';
import type { TaskRecovery } from './task-recovery.js';
import { taskIdFor } from './topic-names.js';

export interface TaskAssignmentDeps {
  /** The active tasks by id, the task manager's (revoked ones leave it at once). */
  readonly tasks: Map<string, StreamTask>;
  readonly planOfTopic: ReadonlyMap<string, SubTopologyPlan>;
  /** A new task for a partition of a sub-topology (not yet open). */
  readonly create: (plan: SubTopologyPlan, partition: number) => StreamTask;
  readonly consumer: GroupConsumerPort;
  readonly ops: TaskOperations;
  readonly recovery: TaskRecovery;
  readonly commits: CommitStrategy;
  readonly processing: ProcessingLoop;
  readonly stores: StoreRegistry;
  /** A standby of the task kept here goes: the task is active here now. */
  readonly releaseStandby: (taskId: string) => void;
  readonly logger: TaskLogger;
}

export class TaskAssignment {
  private readonly tasks: Map<string, StreamTask>;
  private readonly taskOfPartition = new Map<string, StreamTask>();
  /** Counts assignments; a task remembers the one it was opened under (TaskOperations). */
  generation = 0;

  constructor(private readonly deps: TaskAssignmentDeps) {
    this.tasks = deps.tasks;
  }

  /** The task that takes a source partition's records, if any. */
  taskOf(tp: TopicPartition): StreamTask | undefined {
    return this.taskOfPartition.get(key(tp));
  }

  /** The instance stopped: its tasks are closed. */
  clear(): void {
    this.tasks.clear();
    this.taskOfPartition.clear();
  }

  assign(assignment: readonly TopicPartition[]): void {
    this.generation += 1;
    const { consumer, ops, recovery, planOfTopic } = this.deps;
    const wanted = new Map<string, { plan: SubTopologyPlan; partition: number }>();
    for (const tp of assignment) {
      const plan = planOfTopic.get(tp.topic);
      if (plan !== undefined) wanted.set(taskIdFor(plan.id, tp.partition), { plan, partition: tp.partition });
    }
    for (const [id, task] of [...this.tasks]) {
      if (wanted.has(id)) continue;
      this.forget(task);
      // After the cycle under way (a lost task's cut may be in it): its store write needs the stores.
      void ops.requestClose(task, true, this.deps.commits.cycleEnded());
    }
    for (const [id, { plan, partition }] of wanted) {
      // A standby of the task kept here closes first (its close is queued before the open below):
      // the active opens the same stores, caught up to where the standby got.
      this.deps.releaseStandby(id);
      const existing = this.tasks.get(id);
      if (existing !== undefined && existing.revoked) {
        // Lost with its member's session (revoke with `lost`), assigned again: re-open from what is committed.
        existing.reassign();
        consumer.pause(existing.sourcePartitions);
        recovery.resetAttempts(existing.id);
        ops.requestOpen(existing);
        continue;
      }
      if (existing !== undefined) {
        if (existing.state === 'RUNNING') {
          // Retained: continue from our own position, not the broker-committed one (a
          // cooperative consumer keeps its positions: nothing to do).
          if (!consumer.cooperative) this.seekTo(existing, existing.nextOffsets);
          this.deps.processing.keepHeld(existing);
        } else {
          consumer.pause(existing.sourcePartitions);
          if (existing.state === 'SUSPENDED') {
            // Waiting to be re-opened (fenced and waiting for this rebalance, or failed while the
            // broker was away and now the group is back): now, and backing off from the start,
            // not after the back-off a long outage built up (up to startupRetryMaxMs).
            recovery.resetAttempts(existing.id);
            ops.requestOpen(existing);
          }
        }
        continue;
      }
      const task = this.deps.create(plan, partition);
      this.tasks.set(id, task);
      for (const tp of task.sourcePartitions) this.taskOfPartition.set(key(tp), task);
      consumer.pause(task.sourcePartitions); // before the next fetch: nothing is read until the task is open
      ops.requestOpen(task);
    }
    this.deps.logger.info({ tasks: this.tasks.size, assigned: assignment.length }, 'assignment applied');
  }

  /**
   * Cooperative rebalancing: these partitions go, the others stay and keep processing. Their
   * tasks stop taking records now and close; the consumer gives the partitions up once this
   * resolves. What they processed is committed first (at-least-once, exactly-once v1), or, with
   * the instance's transaction, what the cycles before took of it stays and the rest is dropped
   * (InstanceCommits.revoke).
   *
   * `lost`: the member was already out of the group (its session expired: a broker outage, a
   * frozen process, a cut link; librdkafka's own session check says so, and on kafkajs the
   * adapter's SessionWatchdog). Nothing can be committed; what the tasks processed since their
   * last commit is dropped and they wait SUSPENDED, stores open — their committed state stays
   * readable, as through a broker outage on kafkajs — until the next assignment re-opens them
   * from what is committed or closes them. They stop answering as active at once, and roll back
   * in the control queue, once a commit of theirs in flight has settled
   * (TaskOperations.suspendLost).
   */
  async revoke(partitions: readonly TopicPartition[], lost: boolean): Promise<void> {
    const revoked: StreamTask[] = [];
    for (const tp of partitions) {
      const task = this.taskOf(tp);
      if (task === undefined || revoked.includes(task)) continue;
      revoked.push(task);
    }
    const { commits } = this.deps;
    if (lost) {
      // The group moved on without us (our session expired: frozen, partitioned away): another
      // member may own these partitions already. What we processed since the last commit is
      // dropped, never committed — the zombie case KIP-447's generation check also guards.
      if (revoked.length > 0) this.deps.logger.warn({ tasks: revoked.map((t) => t.id), fenced: true }, 'partitions lost: this member was out of its group; their uncommitted work is dropped');
      for (const task of revoked) {
        task.revoke(); // takes no records and is not re-opened until assigned again
        this.deps.processing.release(task);
        // Answers as active no more from now; rolls back once a commit of its in flight has settled.
        this.deps.ops.suspendLost(task);
        // The cycle under way may carry a cut of the task whose offsets it has not sent yet. Opened
        // here again before that cycle ended, the task would read the offsets from before the cut
        // and process its records again.
        const cycleEnded = commits.cycleEnded();
        if (cycleEnded !== undefined) this.deps.ops.openAfter(task, cycleEnded);
      }
      // And those offsets must go out before the member rejoins (librdkafka does once this
      // settles): sent under the generation it rejoins with, KIP-447 would accept them for a
      // partition another member may have read its offsets of already.
      await commits.offsetsSettled(revoked);
      return;
    }
    for (const task of revoked) this.forget(task);
    await commits.revoke(revoked);
  }

  /** The task leaves the assignment: it takes no more records and is no longer routed to. */
  private forget(task: StreamTask): void {
    task.revoke();
    if (task.stores !== null) this.deps.stores.unregister(task.id, task.stores);
    this.tasks.delete(task.id);
    for (const tp of task.sourcePartitions) this.taskOfPartition.delete(key(tp));
    this.deps.processing.release(task);
  }

  /** Moves the consumer's position of the task's source partitions to `offsets` (topic → offset). */
  private seekTo(task: StreamTask, offsets: ReadonlyMap<string, number>): void {
    for (const tp of task.sourcePartitions) {
      const offset = offsets.get(tp.topic);
      if (offset !== undefined) this.deps.consumer.seek({ ...tp, offset });
    }
  }
}

function key(tp: TopicPartition): string {
  return `${tp.topic}\u0000${tp.partition}`;
}
