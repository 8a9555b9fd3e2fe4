/**
 * The client-side session check kafkajs lacks (docs/kafkajs-notes.md §1 "Session"): a member
 * that has not heard a successful heartbeat answer for longer than its session timeout treats
 * its assignment as lost, as librdkafka does on its own clock (`rdkafka_cgrp.c`,
 * `rd_kafka_cgrp_session_timeout_check`: "Consumer group session timed out … revoking
 * assignment", checked in join-state steady only). Without it a kafkajs member cut off from the
 * coordinator goes on as the owner of its partitions until a request of its times out (30 s) or
 * the link is back, and its tasks keep answering as active with state the group's new owners
 * have moved past.
 *
 * What counts as alive: a successful join (GROUP_JOIN, after its SyncGroup) and a successful
 * heartbeat (HEARTBEAT, emitted only once the coordinator has answered it:
 * `consumerGroup.js:132-147`). Not a fetch: fetches go to the partition leaders, which know
 * nothing of the group, and a member the coordinator has let go keeps fetching. The deadline
 * counts from when the answer arrived, which is after the coordinator took the heartbeat, so
 * it falls at or after the coordinator's own: when it fires, the group has let the member go.
 *
 * Checked only in a stable group, as librdkafka does. Once a join has started (REBALANCING, or
 * any join: kafkajs patch 9 tells, since kafkajs rejoins silently on leader errors) kafkajs sends
 * no heartbeats until it has joined, and the coordinator holds a joining member for the
 * rebalance timeout, not the session: a member busy in a long rebalance has lost nothing. A join
 * that comes back under a new member id has: the coordinator had let the last one go (kafkajs
 * rejoins after UNKNOWN_MEMBER_ID, or restarts as a new member after a crash), and its
 * partitions may have had another owner in between.
 *
 * After a loss, a heartbeat that goes through with no join in between means the coordinator
 * still knows this member under the same generation (it had taken a heartbeat whose answer
 * never came back): the assignment is the member's again (`onRegained`).
 */
import type { TopicPartition } from '../processing/ports.js';

export interface SessionWatchdogOptions {
  /** The group's session timeout (session.timeout.ms). */
  readonly sessionTimeoutMs: number;
  /** The session ran out holding `assignment` (never empty); once per assignment. */
  readonly onLost: (assignment: readonly TopicPartition[]) => void;
  /** A heartbeat went through after onLost, no join in between: `assignment` is this member's again. */
  readonly onRegained: (assignment: readonly TopicPartition[]) => void;
  /** Default Date.now. */
  readonly clock?: () => number;
}

/**
 * IDLE: not in the group yet. STABLE: in the group, checking its session (when it holds
 * anything). REBALANCING: a join is under way, nothing checked. LOST: onLost was called, waiting
 * for a join or a heartbeat. STOPPED: the consumer stopped, for good.
 */
export type WatchdogState = 'IDLE' | 'STABLE' | 'REBALANCING' | 'LOST' | 'STOPPED';

export class SessionWatchdog {
  private status: WatchdogState = 'IDLE';
  private assignment: readonly TopicPartition[] = [];
  /** The member id of the last join (absent: none yet, or kafkajs did not say). */
  private memberId: string | undefined;
  /** When the coordinator last answered this member (a join or a heartbeat). */
  private lastAlive = 0;
  private timer: NodeJS.Timeout | null = null;
  /** The second look after the deadline passed (check). */
  private confirming: NodeJS.Immediate | null = null;
  private readonly clock: () => number;

  constructor(private readonly options: SessionWatchdogOptions) {
    if (!(options.sessionTimeoutMs > 0)) throw new TypeError(`sessionTimeoutMs must be positive, not ${options.sessionTimeoutMs}`);
    this.clock = options.clock ?? Date.now;
  }

  get state(): WatchdogState {
    return this.status;
  }

  /**
   * Joined (GROUP_JOIN) as `memberId` with `assignment`: alive now, and the check starts over on
   * it. A member id other than the last one means the coordinator had let the last member go (a
   * rejoin after UNKNOWN_MEMBER_ID, a crash and restart): what it held is lost first, unless
   * that was said already — its partitions may have had another owner in between.
   */
  joined(assignment: readonly TopicPartition[], memberId?: string): void {
    if (this.status === 'STOPPED') return;
    const replaced = memberId !== undefined && this.memberId !== undefined && memberId !== this.memberId;
    this.memberId = memberId;
    if (replaced && (this.status === 'STABLE' || this.status === 'REBALANCING') && this.assignment.length > 0) {
      this.disarm();
      this.status = 'LOST';
      this.options.onLost(this.assignment);
    }
    this.assignment = [...assignment];
    this.status = 'STABLE';
    this.alive();
  }

  /** A heartbeat was answered (HEARTBEAT). */
  heartbeat(): void {
    if (this.status === 'STABLE') {
      this.lastAlive = this.clock();
    } else if (this.status === 'LOST') {
      this.status = 'STABLE';
      this.alive();
      this.options.onRegained(this.assignment);
    }
  }

  /** A rebalance or join has started: nothing is checked until the next join. */
  rebalancing(): void {
    if (this.status === 'STOPPED') return;
    this.status = 'REBALANCING';
    this.disarm();
  }

  /** The consumer stopped (ours, or a crash for good): nothing is checked any more. */
  stop(): void {
    this.status = 'STOPPED';
    this.disarm();
  }

  private alive(): void {
    this.lastAlive = this.clock();
    this.disarm();
    if (this.assignment.length > 0) this.arm(this.options.sessionTimeoutMs);
  }

  /** One timer, not one per heartbeat: when it fires it looks at the last answer and waits out the rest. */
  private arm(delayMs: number): void {
    this.timer = setTimeout(() => this.check(), delayMs);
    // Never what keeps the process alive.
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.confirming !== null) clearImmediate(this.confirming);
    this.timer = null;
    this.confirming = null;
  }

  /**
   * `confirmed`: the deadline had passed once already, and the I/O that waited meanwhile has been
   * read since. A timer runs before the event loop reads its sockets, so one that fires late (the
   * loop was held past the deadline) would otherwise beat a heartbeat answer already waiting there.
   */
  private check(confirmed = false): void {
    this.timer = null;
    this.confirming = null;
    if (this.status !== 'STABLE') return;
    const left = this.lastAlive + this.options.sessionTimeoutMs - this.clock();
    if (left > 0) {
      this.arm(left);
      return;
    }
    if (!confirmed) {
      this.confirming = setImmediate(() => this.check(true));
      this.confirming.unref();
      return;
    }
    this.status = 'LOST';
    this.options.onLost(this.assignment);
  }
}
