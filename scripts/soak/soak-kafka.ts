/**
 * The crash campaign's own view of the broker, through kafkajs (patched, as everywhere in the
 * project): topics, changelog end offsets per partition, and reading a whole topic
 * read_committed. The checks must not trust the runtime under test, so none of this goes through
 * iqgate's ports.
 */
import '../../src/kafka/kafkajs-patches.js';
import { randomBytes } from 'node:crypto';
import kafkajs from 'kafkajs';
import { Buffer } from 'node:buffer';

export type Kafka = kafkajs.Kafka;

export function soakName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

export function soakKafka(brokers: readonly string[]): Kafka {
  return new kafkajs.Kafka({ clientId: soakName('soak'), brokers: [...brokers], logLevel: kafkajs.logLevel.NOTHING });
}

/** partition → end offset (high watermark, control records included); empty while the topic does not exist. */
export async function topicEnds(kafka: Kafka, topic: string): Promise<Map<number, number>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return new Map(offsets.map((o) => [o.partition, Number(o.high)]));
  } catch {
    return new Map();
  } finally {
    await admin.disconnect();
  }
}

export function sumOf(ends: ReadonlyMap<number, number>): number {
  let total = 0;
  for (const n of ends.values()) total += n;
  return total;
}

/** Every record of `topic`, read_committed, in offset order per partition. */
export async function readTopic(kafka: Kafka, topic: string, onRecord: (key: Buffer | null, value: Buffer | null, partition: number) => void): Promise<number> {
  const remaining = new Map([...(await topicEnds(kafka, topic))].filter(([, end]) => end > 0));
  if (remaining.size === 0) return 0;
  let count = 0;
  const consumer = kafka.consumer({ groupId: soakName('soak-reader'), readUncommitted: false, maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) {
            onRecord(m.key, m.value, batch.partition);
            count += 1;
          }
          const end = remaining.get(batch.partition);
          // lastOffset() counts the control records too, so a partition ending in a commit marker completes.
          if (end !== undefined && Number(batch.lastOffset()) + 1 >= end) remaining.delete(batch.partition);
          if (remaining.size === 0) resolve();
        },
      }).catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return count;
}
