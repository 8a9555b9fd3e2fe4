/** Assembles the kafkajs-backed ports the processing runtime needs (one place, one Kafka client). */
import type { KafkaPorts } from '../processing/ports.js';
import { KafkaChangelogReader } from './changelog-reader.js';
import { createKafka, type KafkaClientOptions } from './kafka-client.js';
import { KafkaAdmin } from './kafka-admin.js';
import { KafkaGroupConsumer, type GroupConsumerOptions } from './group-consumer.js';
import { createTaskProducerFactory } from './task-producer-factory.js';

export interface KafkaPortsOptions extends KafkaClientOptions {
  readonly consumer: GroupConsumerOptions;
  readonly transactionTimeoutMs?: number;
}

export function createKafkaPorts(options: KafkaPortsOptions): KafkaPorts {
  const kafka = createKafka(options);
  const consumer = new KafkaGroupConsumer(kafka, options.consumer);
  const producers = createTaskProducerFactory(kafka, {
    groupId: options.consumer.groupId,
    ...(options.transactionTimeoutMs !== undefined ? { transactionTimeoutMs: options.transactionTimeoutMs } : {}),
  });
  const admin = new KafkaAdmin(kafka);
  // A separate client for restores: its own sockets, not queued behind the consumer's long polls.
  const changelogReader = new KafkaChangelogReader(createKafka({ ...options, clientId: `${options.clientId}-restore` }), options.consumer.groupId);
  return {
    client: 'kafkajs',
    consumer,
    producers,
    admin,
    changelogReader,
    close: async () => {
      // The consumer too (a no-op after a graceful stop): after a failed start or a stop that
      // timed out it may still hold its sockets.
      await Promise.allSettled([consumer.stop(), producers.close(), admin.close(), changelogReader.close()]);
    },
  };
}
