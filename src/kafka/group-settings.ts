/**
 * The default heartbeat interval, well below Kafka's 3 s. A cooperative rebalance takes two
 * rounds, and each member learns that a round has begun from its next heartbeat: at a join, a
 * moved partition waits out the new member's heartbeat after its old owner gave it up, and at a
 * leave the staying member learns of the departure the same way. bench:scale on librdkafka, 200
 * partitions, the longest stop of a moved partition's output at join / leave: 4.1 / 2.5 s with
 * 3 s heartbeats, 2.2 / 0.8 and 1.2 / 1.4 s with 500 ms (docs/architecture.md §5).
 *
 * 200 since librdkafka's heartbeats leave on time (the heartbeat clock of
 * src/kafka/librdkafka/rdkafka-group-consumer.ts; before it, a heartbeat waited for the main
 * thread's 2 Hz tick, and 250 ms measured no better than 500): with the clock, the join's stop
 * was 0.64–0.83 s at 200 ms (five runs) against 0.62–1.05 s at 400 ms (three runs), and
 * 0.87–0.89 s at 200 ms without the clock (two runs; 2026-12-04). Five small requests a second
 * per member.
 */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 200;

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
