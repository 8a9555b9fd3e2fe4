/**
 * Warm joins (issue 25 item 4; Kafka Streams' KIP-441 warm-up replicas, done before the join):
 * an instance that joins a group whose members already run the application first tails the
 * changelog of every task with state into its own state directory, as a standby would, until
 * each is within `acceptableRecoveryLag` records of its changelog's stable end (or
 * `warmupTimeoutMs` has passed), and only then joins the group. The tasks the group then moves
 * here open on warm stores and replay only the tail: their output stops for the rebalance, not
 * for a restore.
 *
 * Why before the join, and why every task: Kafka Streams' assignor sees each member's lag and
 * moves a task only once its new owner has caught up. librdkafka runs its own assignors
 * (cooperative-sticky), which see no lags and take no userData from JavaScript, so which tasks
 * this instance will get is not known until it has joined. Warming every task costs one read
 * of every changelog (off the critical path: the running instances keep processing meanwhile);
 * the standbys the placement does not want here are released once the first assignment that
 * gives this instance tasks has come (their data stays on disk).
 *
 * When not: no sub-topology has state; the group has no members (a first start, or every
 * instance starting at once: nobody is serving, so a join costs nothing); or one of its members
 * is this instance itself — a static member restarting on its state directory (librdkafka,
 * whose place the group keeps) or a crashed kafkajs member the consumer removes at its join —
 * whose partitions nobody else serves meanwhile, so waiting would only lengthen their outage.
 */
import type { GroupMembers } from './ports.js';
import type { SubTopologyPlan } from './sub-topology-plan.js';

/** What identifies this instance among a group's members. */
export interface GroupSelf {
  /** The transactional id this instance advertises in its client id (librdkafka: static members and exactly-once v2). */
  readonly transactionalId?: string;
  /** The member id it had before it last stopped (kafkajs, recorded in its state directory). */
  readonly previousMemberId?: string;
}

export type WarmupDecision =
  | { readonly warm: true; readonly members: number }
  | { readonly warm: false; readonly reason: string };

/** Whether to warm up before joining `group` (null: the adapter cannot describe it). */
export function decideWarmup(group: GroupMembers | null, self: GroupSelf, hasState: boolean): WarmupDecision {
  if (!hasState) return { warm: false, reason: 'no sub-topology has state' };
  if (group === null) return { warm: false, reason: 'the group cannot be described' };
  if (group.members.length === 0) return { warm: false, reason: `the group has no members (${group.state})` };
  for (const member of group.members) {
    if (self.previousMemberId !== undefined && member.memberId === self.previousMemberId) return { warm: false, reason: 'this instance is still a member (restarting)' };
    if (self.transactionalId !== undefined && member.transactionalId === self.transactionalId) return { warm: false, reason: 'this instance is still a member (restarting)' };
  }
  return { warm: true, members: group.members.length };
}

/** Every task with state: each partition of each sub-topology that has stores. */
export function tasksWithState(plans: readonly SubTopologyPlan[], partitionsOfStore: ReadonlyMap<string, number>): Array<{ subTopology: number; partition: number }> {
  const tasks: Array<{ subTopology: number; partition: number }> = [];
  for (const plan of plans) {
    const store = plan.changelogTopics.keys().next();
    if (store.done === true) continue;
    const count = partitionsOfStore.get(store.value) ?? 0;
    for (let partition = 0; partition < count; partition += 1) tasks.push({ subTopology: plan.id, partition });
  }
  return tasks;
}

export interface WarmupProgress {
  readonly wanted: number;
  readonly ready: number;
  readonly behind: number;
}

export interface WarmupOutcome extends WarmupProgress {
  readonly ms: number;
  /** Stopped by the deadline (or a stop) before every task was within the lag. */
  readonly timedOut: boolean;
}

export interface WarmupLoop {
  /** One catch-up round of the standbys (StandbyTasks.catchUp). */
  readonly round: () => Promise<WarmupProgress>;
  readonly timeoutMs: number;
  readonly acceptableLag: number;
  readonly clock: () => number;
  readonly cancelled: () => boolean;
  /** Pause between rounds that made no progress to the goal (the standby poll interval). */
  readonly pauseMs: number;
}

/** Rounds until every wanted task is open, caught up once, and within the lag; or the deadline. */
export async function warmUp(loop: WarmupLoop): Promise<WarmupOutcome> {
  const started = loop.clock();
  let progress: WarmupProgress = { wanted: 0, ready: 0, behind: 0 };
  for (;;) {
    progress = await loop.round();
    const done = progress.ready === progress.wanted && progress.behind <= loop.acceptableLag;
    const elapsed = loop.clock() - started;
    if (done) return { ...progress, ms: elapsed, timedOut: false };
    if (elapsed >= loop.timeoutMs || loop.cancelled()) return { ...progress, ms: elapsed, timedOut: true };
    await new Promise((resolve) => setTimeout(resolve, Math.min(loop.pauseMs, Math.max(0, loop.timeoutMs - elapsed))));
  }
}

type TaskRef = { readonly subTopology: number; readonly partition: number };

/** How long warm copies outlive an empty first assignment. */
const KEEP_WARM_AFTER_EMPTY_ASSIGNMENT_MS = 30_000;

/**
 * Which tasks are kept warm for a join, and until when: all of them from begin(); the first
 * assignment that brings this instance tasks ends it (those tasks release their standbys and open
 * on their stores; the next poll lets the others go, unless the standby placement wants them).
 * An empty assignment — a cooperative join's first round, or a group with more members than
 * tasks — leaves them warm for KEEP_WARM_AFTER_EMPTY_ASSIGNMENT_MS more: a later round may still
 * bring tasks, but a member given nothing does not tail every changelog for ever.
 */
export class JoinWarmth {
  private tasks: readonly TaskRef[] | null = null;
  private endsAt: number | null = null;

  /** `onExpired`: the warm-up ended after an empty assignment, its time gone by (not by an assignment with tasks). */
  constructor(private readonly clock: () => number, private readonly onExpired: () => void = () => undefined) {}

  begin(tasks: readonly TaskRef[]): void {
    this.tasks = tasks;
    this.endsAt = null;
  }

  assigned(count: number): void {
    if (count > 0) this.tasks = null;
    else if (this.tasks !== null) this.endsAt ??= this.clock() + KEEP_WARM_AFTER_EMPTY_ASSIGNMENT_MS;
  }

  /** The tasks to keep warm now; null once the warm-up is over. */
  wanted(): readonly TaskRef[] | null {
    if (this.tasks !== null && this.endsAt !== null && this.clock() >= this.endsAt) {
      this.tasks = null;
      this.onExpired();
    }
    return this.tasks;
  }
}
