/**
 * The ports contract's view of a real broker, shared by the adapters' contract tests: topics,
 * plain records and read_committed reads through a plain kafkajs client of the test's own (not
 * through the adapter under test), and the adapter's ports built by the caller with short
 * session timeouts.
 */
import type { InputRecord, KafkaPorts, TopicPartition } from '../../../src/processing/ports.js';
import type { KafkaPortsCapabilities, KafkaPortsDriver, PortsConfig } from '../../contract/kafka-ports-contract.js';
import { kafkajs, uniqueName } from '../../support/kafka.js';
import { brokers } from '../processing/brokers.js';
import { createTopics } from '../processing/wordcount-harness.js';

/** Group timings that keep rebalances short (a broker allows sessions from 6 s). */
export const FAST_GROUP = { sessionTimeoutMs: 6_000, heartbeatIntervalMs: 500, rebalanceTimeoutMs: 10_000, maxWaitTimeMs: 100 } as const;

export interface RealBrokerAdapter {
  readonly capabilities: KafkaPortsCapabilities;
  createPorts(brokers: readonly string[], config: PortsConfig): KafkaPorts;
}

export function realBrokerDriver(adapter: RealBrokerAdapter): KafkaPortsDriver {
  const addresses = brokers();
  const kafka = new kafkajs.Kafka({ clientId: uniqueName('contract-observer'), brokers: addresses, logLevel: kafkajs.logLevel.NOTHING });
  let admin: Promise<kafkajs.Admin> | undefined;
  let producer: Promise<kafkajs.Producer> | undefined;
  let uncommitted: Promise<kafkajs.Cluster> | undefined;
  const connected = <T extends { connect(): Promise<void> }>(client: T): Promise<T> => client.connect().then(() => client);

  /** A cluster reading at read_uncommitted (kafkajs' admin lists offsets read_committed). */
  const uncommittedCluster = (): Promise<kafkajs.Cluster> => {
    uncommitted ??= (async () => {
      let captured: kafkajs.Cluster | undefined;
      // A consumer's assigner factory is handed its Cluster; the consumer itself never runs.
      kafka.consumer({
        groupId: uniqueName('contract-hw'),
        readUncommitted: true,
        partitionAssigners: [(config) => {
          captured = config.cluster;
          return kafkajs.PartitionAssigners.roundRobin(config);
        }],
      });
      if (captured === undefined) throw new TypeError('kafkajs did not hand the cluster to the assigner factory');
      await captured.connect();
      return captured;
    })();
    return uncommitted;
  };

  return {
    capabilities: adapter.capabilities,
    // A wait costs only when something is slow: 12 s timed out once (a member joining after
    // another left, librdkafka, a CI run whose other worker ran a heavy file), so 25 s.
    waitMs: 25_000,
    testTimeoutMs: 60_000,
    createTopics: async (topics, partitions) => {
      admin ??= connected(kafka.admin());
      await createTopics(await admin, topics, partitions);
    },
    createPorts: (config) => adapter.createPorts(addresses, config),
    createUnreachablePorts: (config) => adapter.createPorts(['127.0.0.1:1'], config),
    produce: async (topic, records) => {
      producer ??= connected(kafka.producer({ idempotent: true, maxInFlightRequests: 1 }));
      await (await producer).send({
        topic,
        acks: -1,
        messages: records.map((r) => ({
          partition: r.partition,
          key: r.key,
          value: r.value,
          ...(r.headers === undefined ? {} : { headers: { ...r.headers } }),
          ...(r.timestamp === undefined ? {} : { timestamp: String(r.timestamp) }),
        })),
      });
    },
    readCommitted: async (tp) => {
      admin ??= connected(kafka.admin());
      const end = Number((await (await admin).fetchTopicOffsets(tp.topic)).find((p) => p.partition === tp.partition)?.high ?? 0);
      return end === 0 ? [] : readCommittedUpTo(kafka, tp, end);
    },
    logEnd: async (tp) => {
      const cluster = await uncommittedCluster();
      await cluster.addTargetTopic(tp.topic);
      const [offsets] = await cluster.fetchTopicsOffset([{ topic: tp.topic, partitions: [{ partition: tp.partition }], fromBeginning: false }]);
      return Number(offsets?.partitions.find((p) => p.partition === tp.partition)?.offset ?? 0);
    },
    settle: async () => undefined,
    close: async () => {
      const clients: Array<Promise<{ disconnect(): Promise<void> }> | undefined> = [admin, producer, uncommitted];
      await Promise.allSettled(clients.map(async (client) => (await client)?.disconnect()));
    },
  };
}

/**
 * Everything below `end` (the partition's last stable offset) that a read_committed group
 * consumer of the test's own sees, in offset order. Control records count towards `end`
 * (batch.lastOffset() includes them), so a partition ending in a commit marker completes.
 */
async function readCommittedUpTo(kafka: kafkajs.Kafka, tp: TopicPartition, end: number): Promise<InputRecord[]> {
  const consumer = kafka.consumer({ groupId: uniqueName('contract-reader'), readUncommitted: false, maxWaitTimeInMs: 100 });
  const records: InputRecord[] = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topic: tp.topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`reading ${tp.topic}/${tp.partition} up to ${end} timed out (${records.length} records so far)`)), 15_000);
      consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          if (batch.partition !== tp.partition) return;
          for (const m of batch.messages) {
            if (Number(m.offset) >= end) continue;
            const headers: Record<string, string> = {};
            for (const [name, value] of Object.entries(m.headers ?? {})) if (value !== undefined) headers[name] = String(Array.isArray(value) ? value[0] : value);
            records.push({ topic: tp.topic, partition: tp.partition, offset: Number(m.offset), key: m.key ?? null, value: m.value ?? null, timestamp: Number(m.timestamp), headers });
          }
          if (Number(batch.lastOffset()) + 1 >= end) {
            clearTimeout(timer);
            resolve();
          }
        },
      }).catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return records;
}
