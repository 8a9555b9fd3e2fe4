/**
 * The default heartbeat interval, below Kafka's 3 s. A cooperative rebalance takes two rounds,
 * and each member learns that a round has begun from its next heartbeat: at a join, a moved
 * partition waits out the other member's heartbeat after its old owner gave it up, and at a leave
 * the staying member learns of the departure the same way. bench:scale on librdkafka, 200
 * partitions, the longest stop of a moved partition's output at join / leave: 4.1 / 2.5 s with
 * 3 s heartbeats, 2.2 / 0.8 and 1.2 / 1.4 s with 500 ms (docs/architecture.md §5).
 *
 * 400 rather than 500: librdkafka checks whether a heartbeat is due only when its main thread
 * wakes, which in a member with little else to do is its 2 Hz max.poll.interval.ms timer —
 * restarted when an assignment is applied, a few milliseconds after the heartbeat that follows
 * a sync. With a 500 ms interval the first tick found the heartbeat a few milliseconds short of
 * due and the next came a whole tick later: the joining member learned of the second round after
 * 1.02 s in two of seven runs (0.52–0.55 s in the others); with 400, after 0.52 s in all (three
 * runs). Some two and a half small requests a second per member.
 */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 400;

/** What every adapter's group consumer is configured with: the group, its topics, its timing and fetch sizes. */
export interface GroupSettings {
  readonly groupId: string;
  readonly topics: readonly string[];
  readonly sessionTimeoutMs?: number;
  readonly heartbeatIntervalMs?: number;
  /** How long a rebalance may wait for a member (kafkajs rebalanceTimeout, librdkafka max.poll.interval.ms). */
  readonly rebalanceTimeoutMs?: number;
  /** Fetch long-poll cap. */
  readonly maxWaitTimeMs?: number;
  readonly maxBytesPerPartition?: number;
  readonly maxBytes?: number;
}
