/**
 * What an implementation of the Kafka ports (src/processing/ports.ts) provides to run the ports
 * contract (kafka-ports-contract.ts): a way to build its ports, and a small, client-independent
 * view of the broker to check what the ports did. A new adapter writes one of these and passes
 * the suite; nothing in the suite knows a client library.
 */
import type { InputRecord, KafkaPorts, TopicPartition } from '../../src/processing/ports.js';

/** One group member's ports. Every test uses fresh names, so nothing leaks between tests. */
export interface PortsConfig {
  readonly groupId: string;
  /** The consumer's subscription. */
  readonly topics: readonly string[];
  /** The instance's transactional id: the stream producer's, where the adapter has one. */
  readonly transactionalId: string;
  /** group.instance.id: a static member (KIP-345), where the adapter has static membership. */
  readonly groupInstanceId?: string;
  /** The consumer's session timeout, instead of the driver's short one. */
  readonly sessionTimeoutMs?: number;
}

/** A record written outside any transaction, straight to a partition. */
export interface PlainRecord {
  readonly partition: number;
  readonly key: string | null;
  readonly value: string | null;
  readonly headers?: Readonly<Record<string, string>>;
  /** Milliseconds since the epoch; absent: the producer's clock. */
  readonly timestamp?: number;
}

/**
 * Optional parts of the ports. The specs of a capability are skipped only for an adapter that
 * declares it lacks it, and one spec checks each declaration against the ports themselves.
 */
export interface KafkaPortsCapabilities {
  /** `ports.streamProducer` exists: exactly-once v2, one transactional producer per instance (KIP-447). */
  readonly streamProducer: boolean;
  /** `ports.consumer.cooperative` is true: incremental rebalances announced by onRevoked. False: eager. */
  readonly cooperative: boolean;
  /** `PortsConfig.groupInstanceId` makes the consumer a static member (`ports.consumer.staticMember`). */
  readonly staticMembership: boolean;
}

export interface KafkaPortsDriver {
  readonly capabilities: KafkaPortsCapabilities;
  /** How long a condition may take to come true (a rebalance on a real broker takes seconds). */
  readonly waitMs: number;
  /** Per-test timeout. */
  readonly testTimeoutMs: number;
  createTopics(topics: readonly string[], partitions: number): Promise<void>;
  /** A group member's ports, with short session and heartbeat timeouts. The suite closes them. */
  createPorts(config: PortsConfig): KafkaPorts;
  /** The same ports, pointed at an address where nothing answers (127.0.0.1:1 on a real broker). */
  createUnreachablePorts(config: PortsConfig): KafkaPorts;
  /** Writes plain records; they are acknowledged (in the log) when this resolves. */
  produce(topic: string, records: readonly PlainRecord[]): Promise<void>;
  /** Everything a read_committed reader of the partition sees now, in offset order. */
  readCommitted(tp: TopicPartition): Promise<InputRecord[]>;
  /** The partition's high watermark: the log end, records of open transactions included. */
  logEnd(tp: TopicPartition): Promise<number>;
  /**
   * Gives the ports a chance to make progress. A real adapter fetches on its own (a no-op
   * here); an in-memory fake delivers its pending fetches. The suite calls it while it waits.
   */
  settle(): Promise<void>;
  /** Releases what the driver itself holds (its observer clients), after the suite. */
  close(): Promise<void>;
}
