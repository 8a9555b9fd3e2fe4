/**
 * Assembles the ports on librdkafka (@confluentinc/kafka-javascript's callback API): the group
 * consumer and the instance's transactional producer (exactly-once v2, KIP-447) — the hot
 * path. Topic administration, changelog restore reads and the at-least-once producer stay on
 * kafkajs for now (start-up and recovery paths, not the steady state); committed offsets are
 * read through the librdkafka consumer because it asks with require_stable (KIP-447): a
 * transactional offset commit still in flight makes the broker answer "unstable, retry" instead
 * of the previous offset, which would make a new owner re-process what the old one committed.
 */
import type { GroupDescription } from 'kafkajs';
import type { AdminPort, KafkaPorts } from '../../processing/ports.js';
import { KafkaChangelogReader } from '../changelog-reader.js';
import { createKafka, type KafkaClientOptions } from '../kafka-client.js';
import { KafkaAdmin } from '../kafka-admin.js';
import { prepareStaticMemberRemoval } from '../static-member-removal.js';
import { createTaskProducerFactory } from '../task-producer-factory.js';
import { DepartedMemberFencer } from '../departed-member-fencer.js';
import type { RdkafkaModule } from './native.js';
import { RdkafkaGroupConsumer, type RdkafkaGroupConsumerOptions } from './rdkafka-group-consumer.js';
import { RdkafkaStreamProducer } from './rdkafka-stream-producer.js';

export interface RdkafkaPortsOptions extends KafkaClientOptions {
  readonly consumer: Omit<RdkafkaGroupConsumerOptions, 'brokers' | 'clientId' | 'log' | 'prepareStaticMemberRemoval' | 'security'>;
  /** The instance's transactional id (exactly-once v2). */
  readonly transactionalId: string;
  readonly transactionTimeoutMs?: number;
  /**
   * Exactly-once with routing (consumer.advertisedUrl): advertise the transactional id and fence
   * the ids of members that leave the group with a transaction open (../departed-member-fencer.ts).
   */
  readonly fenceDepartedMembers?: boolean;
  /** librdkafka properties passed through to the consumer and the producer. */
  readonly clientProperties?: { readonly consumer?: Readonly<Record<string, string | number | boolean>> | undefined; readonly producer?: Readonly<Record<string, string | number | boolean>> | undefined };
}

export function createRdkafkaPorts(rd: RdkafkaModule, options: RdkafkaPortsOptions): KafkaPorts {
  const kafka = createKafka(options);
  // Routing: the group's description (every member's client id, which carries its URL, and its
  // assignment), through a kafkajs admin client of its own, connected on first use.
  const describer = options.consumer.advertisedUrl === undefined ? undefined : kafka.admin();
  let describerReady: Promise<void> | undefined;
  const describeGroup = async (): Promise<GroupDescription> => {
    describerReady ??= describer!.connect();
    await describerReady;
    const { groups } = await describer!.describeGroups([options.consumer.groupId]);
    return groups[0]!;
  };
  const producers = createTaskProducerFactory(kafka, {
    groupId: options.consumer.groupId,
    ...(options.transactionTimeoutMs !== undefined ? { transactionTimeoutMs: options.transactionTimeoutMs } : {}),
  });
  const fencer = options.fenceDepartedMembers !== true || describer === undefined ? null : new DepartedMemberFencer({
    own: options.transactionalId,
    fence: async (transactionalId) => {
      const producer = producers.create(transactionalId);
      try {
        await producer.init();
      } finally {
        await producer.close().catch(() => undefined);
      }
    },
    ...(options.log === undefined ? {} : { logger: options.log }),
  });
  const consumer = new RdkafkaGroupConsumer(rd, {
    ...options.consumer,
    // A static member also names its transactional id (its instance id) in its client id: a
    // joining instance tells from the group's description that it is this one restarting (join-warmup.ts).
    ...(fencer === null && options.consumer.groupInstanceId === undefined ? {} : { advertisedTransactionalId: options.transactionalId }),
    ...(fencer === null ? {} : { onGroupMembers: (clientIds: readonly string[]) => fencer.observe(clientIds) }),
    brokers: options.brokers,
    clientId: options.clientId,
    ...(options.security === undefined ? {} : { security: options.security }),
    ...(options.clientProperties?.consumer === undefined ? {} : { properties: options.clientProperties.consumer }),
    prepareStaticMemberRemoval: (instanceId) => prepareStaticMemberRemoval(kafka, options.clientId, options.consumer.groupId, instanceId),
    ...(describer === undefined ? {} : { describeGroup }),
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  const streamProducer = new RdkafkaStreamProducer(rd, {
    brokers: options.brokers,
    clientId: `${options.clientId}-producer`,
    ...(options.security === undefined ? {} : { security: options.security }),
    ...(options.clientProperties?.producer === undefined ? {} : { properties: options.clientProperties.producer }),
    transactionalId: options.transactionalId,
    ...(options.transactionTimeoutMs === undefined ? {} : { transactionTimeoutMs: options.transactionTimeoutMs }),
    consumer: () => consumer.native(),
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  const kafkaAdmin = new KafkaAdmin(kafka);
  // One kafkajs admin call at a time: concurrent calls for different topics replace each
  // other's targeted metadata (kafkajs-patches' targeted metadata) and a ListOffsets then finds
  // no partition. Tasks opening at once under exactly-once v2 (no per-task InitProducerId to
  // stagger them) made that happen at every start.
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(run: () => Promise<T>): Promise<T> => {
    const result = chain.then(run, run);
    chain = result.catch(() => undefined);
    return result;
  };
  const admin: AdminPort = {
    partitionCounts: (topics) => serial(() => kafkaAdmin.partitionCounts(topics)),
    ensureTopics: (specs) => serial(() => kafkaAdmin.ensureTopics(specs)),
    beginningOffsets: (topic) => serial(() => kafkaAdmin.beginningOffsets(topic)),
    endOffsets: (topic) => serial(() => kafkaAdmin.endOffsets(topic)),
    // Its own Cluster, metadata and queue (KafkaAdmin): nothing to share the chain with.
    highWatermarks: (topic) => kafkaAdmin.highWatermarks(topic),
    deleteRecordsBefore: (topic, offsets) => serial(() => kafkaAdmin.deleteRecordsBefore(topic, offsets)),
    groupMembers: (groupId) => serial(() => kafkaAdmin.groupMembers(groupId)),
    close: () => kafkaAdmin.close(),
    async committedOffsets(groupId, topic, partitions) {
      // Before the consumer runs (nothing of this instance can be in a transaction yet), or for
      // another group: kafkajs' OffsetFetch, which has no require_stable.
      if (groupId !== options.consumer.groupId || !consumer.connected()) return serial(() => kafkaAdmin.committedOffsets(groupId, topic, partitions));
      // Only the partitions asked for. With require_stable the broker answers
      // UNSTABLE_OFFSET_COMMIT for a partition whose offsets a transaction still holds, and
      // librdkafka retries the whole request: asking for every partition of the topic made each
      // read wait for the transactions of the other members, which commit their own partitions
      // every commit interval — at 1000 partitions with a second instance, reads timed out again
      // and again (bench:scale).
      const asked = partitions ?? Array.from({ length: (await serial(() => kafkaAdmin.partitionCounts([topic]))).get(topic) ?? 0 }, (_v, p) => p);
      if (asked.length === 0) return new Map();
      const committed = await consumer.committed(asked.map((partition) => ({ topic, partition })));
      const result = new Map<number, number>();
      for (const partition of asked) {
        const offset = committed.get(`${topic}\u0000${partition}`);
        if (offset !== undefined) result.set(partition, offset);
      }
      return result;
    },
  };
  const changelogReader = new KafkaChangelogReader(createKafka({ ...options, clientId: `${options.clientId}-restore` }), options.consumer.groupId);
  return {
    client: 'librdkafka',
    consumer,
    producers,
    streamProducer,
    admin,
    changelogReader,
    close: async () => {
      fencer?.stop();
      await fencer?.settled();
      await Promise.allSettled([consumer.stop(), streamProducer.close(), producers.close(), kafkaAdmin.close(), changelogReader.close(), ...(describerReady === undefined ? [] : [describer!.disconnect()])]);
    },
  };
}
