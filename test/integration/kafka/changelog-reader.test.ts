/**
 * The changelog reader's batched fetches against the real broker: restores of many partitions
 * at once share Fetch requests, and a request's byte limit cutting partitions off never ends a
 * restore early. With a 1 KB limit per partition (4 KB per request) and ~350-byte records, most
 * partitions of each answer come back empty because the limit ran out, not because they are
 * read to the end; a reader that took such a partition for "read to the end" loses records.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type kafkajs from 'kafkajs';
import { KafkaChangelogReader } from '../../../src/kafka/changelog-reader.js';
import type { ChangelogChunk } from '../../../src/processing/ports.js';
import { createTopicsRetrying, testKafka, uniqueName } from '../../support/kafka.js';

const PARTITIONS = 6;
const RECORDS = 12;
const kafka = testKafka();
const readers: KafkaChangelogReader[] = [];
let clients: Promise<{ admin: kafkajs.Admin; producer: kafkajs.Producer }> | undefined;
afterAll(async () => {
  await Promise.all(readers.map((r) => r.close()));
  const connected = await clients?.catch(() => undefined);
  await connected?.producer.disconnect();
  await connected?.admin.disconnect();
});

/** A new topic of `partitions`, with the admin client and producer the file's tests share. */
async function newTopic(prefix: string, partitions: number): Promise<{ topic: string; admin: kafkajs.Admin; producer: kafkajs.Producer }> {
  clients ??= (async () => {
    const admin = kafka.admin();
    await admin.connect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    return { admin, producer };
  })();
  const { admin, producer } = await clients;
  const topic = uniqueName(prefix);
  await createTopicsRetrying(admin, [{ topic, numPartitions: partitions }]);
  return { topic, admin, producer };
}

/** A reader closed after the file's tests. */
function newReader(maxBytes?: number): KafkaChangelogReader {
  const reader = new KafkaChangelogReader(kafka, uniqueName('restore'), maxBytes);
  readers.push(reader);
  return reader;
}

describe('KafkaChangelogReader reading many partitions at once', () => {
  it('hands every partition all its records in order when the request byte limit cuts partitions off', async () => {
    const { topic, admin, producer } = await newTopic('restore-batch', PARTITIONS);
    const pad = 'x'.repeat(300);
    // One record per send: record batches of ~350 bytes, several per partition limit.
    for (let i = 0; i < RECORDS; i++) {
      for (let p = 0; p < PARTITIONS; p++) await producer.send({ topic, messages: [{ partition: p, key: `k${i}`, value: `${p}-${i}-${pad}` }] });
    }
    const ends = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, Number(o.high)]));
    expect([...ends.values()]).toEqual(Array.from({ length: PARTITIONS }, () => RECORDS));

    const reader = newReader(1024);
    const read = async (partition: number) => {
      const chunks: ChangelogChunk[] = [];
      await reader.read({ topic, partition }, 0, ends.get(partition) ?? 0, async (chunk) => {
        chunks.push(chunk);
      });
      return chunks;
    };
    const results = await Promise.all(Array.from({ length: PARTITIONS }, (_, p) => read(p)));
    for (const [p, chunks] of results.entries()) {
      const values = chunks.flatMap((c) => c.records.map((r) => r.value?.toString().split('-').slice(0, 2).join('-')));
      expect(values, `partition ${p}`).toEqual(Array.from({ length: RECORDS }, (_, i) => `${p}-${i}`));
      expect(chunks.at(-1)?.nextOffset, `partition ${p} ends at its end offset`).toBe(RECORDS);
    }
  }, 60_000);
});

describe('KafkaChangelogReader when one partition of a shared request fails', () => {
  it('fails that partition\'s restore only: the others sharing its requests read all their records', async () => {
    const { topic, producer } = await newTopic('restore-bad', 4);
    for (let p = 0; p < 4; p++) await producer.send({ topic, messages: Array.from({ length: 5 }, (_, i) => ({ partition: p, key: `k${i}`, value: `${p}-${i}` })) });
    const reader = newReader();
    const read = async (partition: number, from: number, end: number) => {
      const values: string[] = [];
      await reader.read({ topic, partition }, from, end, async (chunk) => {
        for (const r of chunk.records) values.push(r.value?.toString() ?? '');
      });
      return values;
    };
    // Partition 3 from offset 100 of its 5: the broker answers OFFSET_OUT_OF_RANGE for it, and
    // kafkajs fails the whole answer of a request that carries it.
    const results = await Promise.allSettled([read(0, 0, 5), read(1, 0, 5), read(2, 0, 5), read(3, 100, 200)]);
    for (const p of [0, 1, 2]) {
      const result = results[p];
      expect(result?.status, `partition ${p}`).toBe('fulfilled');
      if (result?.status === 'fulfilled') expect(result.value).toEqual(Array.from({ length: 5 }, (_, i) => `${p}-${i}`));
    }
    expect(results[3]?.status, 'the partition out of range').toBe('rejected');
  }, 60_000);
});
