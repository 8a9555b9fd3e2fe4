/**
 * kafkajs patch 6 — one copy of each topic's metadata for all clients (memory).
 *
 * Every kafkajs 2.2.4 client keeps its own copy of the metadata of every partition of the topics
 * it uses (`src/cluster/brokerPool.js:158`, `this.metadata = await broker.metadata(topics)`, one
 * BrokerPool per client); with one producer per task that is N² objects at N tasks.
 * `../shared-metadata.ts` (which says how, and why sharing is sound) makes the BrokerPools of the
 * process share one copy per topic. Measured in bench:scale, 1000 tasks: heap after start 628 →
 * 150–250 MB, RSS 963 → 360–440 MB.
 *
 * The check is by behaviour: two BrokerPools given equal metadata must end up holding the same
 * topic entry. The probe's topic name is not a legal Kafka topic name, so it never meets a real one.
 */
import { installSharedMetadata } from '../shared-metadata.js';
import { type KafkajsPatch, kafkajsPrototype, patchNotInPlace } from './kafkajs-patch.js';

interface PoolLike { metadata: { topicMetadata: Array<{ topic: string }> } | null }

const PROBE_TOPIC = 'iqgate:patch-check';

export const sharedMetadataPatch: KafkajsPatch = {
  name: 'shared-metadata',
  install: installSharedMetadata,
  check: () => {
    const brokerPool = kafkajsPrototype<object>('kafkajs/src/cluster/brokerPool');
    const [a, b] = [0, 1].map(() => {
      const pool = Object.create(brokerPool) as PoolLike;
      pool.metadata = { topicMetadata: [{ topic: PROBE_TOPIC }] };
      return pool.metadata?.topicMetadata[0];
    });
    if (a === undefined || a !== b) throw patchNotInPlace('shared-metadata', 'every kafkajs client keeps its own copy of each topic\'s metadata');
  },
};
