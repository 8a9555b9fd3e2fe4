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
