/**
 * Error policies against the real broker: undecodable records and a throwing processor go to
 * the dead-letter topic inside the transaction; the good records are counted exactly once.
 * At-least-once runs the same topology without transactions.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Admin } from 'kafkajs';
import { StreamsBuilder } from '../../../src/processing/stream-builder.js';
import { createRuntime, type Runtime } from '../../../src/runtime/runtime.js';
import { serdes } from '../../../src/store/serdes.js';
import { brokers } from './brokers.js';
import { committedCounts, createTopics, testKafka, uniqueName } from './wordcount-harness.js';

function countsByKeyTopology(input: string) {
  const b = new StreamsBuilder();
  b.stream(input, { key: serdes.string, value: serdes.json })
    .filter((_key, value) => {
      if ((value as { explode?: boolean }).explode === true) throw new Error('processor exploded');
      return true;
    })
    .groupByKey()
    .count({ store: 'word-counts', value: serdes.int64 }) // as wordcount's (committedCounts reads int64);
  return b.build();
}

async function readAll(kafka: ReturnType<typeof testKafka>, topic: string, expected: number): Promise<Array<{ value: string; headers: Record<string, string> }>> {
  const consumer = kafka.consumer({ groupId: uniqueName('dlq-reader'), maxWaitTimeInMs: 100 });
  const records: Array<{ value: string; headers: Record<string, string> }> = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise<void>((resolve) => {
    void consumer.run({ eachMessage: async ({ message }) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = String(v);
      records.push({ value: message.value?.toString() ?? '', headers });
      if (records.length >= expected) resolve();
    } });
  });
  await consumer.disconnect();
  return records;
}

describe('error policies against the real broker', () => {
  const kafka = testKafka();
  let admin: Admin | undefined;
  const runtimes: Runtime[] = [];
  afterAll(async () => {
    for (const r of runtimes) await r.stop().catch(() => undefined);
    await admin?.disconnect();
  });

  for (const guarantee of ['exactly_once', 'at_least_once'] as const) {
    it(`dead-letters undecodable and failing records and counts the rest once (${guarantee})`, async () => {
      admin ??= kafka.admin();
      await admin.connect();
      const input = uniqueName('ep-in');
      const appId = uniqueName('ep');
      await createTopics(admin, [input], 2);
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({
        topic: input,
        messages: [
          { key: 'a', value: '{"n":1}' },
          { key: 'a', value: 'not json' },
          { key: 'b', value: '{"explode":true}' },
          { key: 'a', value: '{"n":2}' },
          { key: 'b', value: '{"n":3}' },
        ],
      });
      await producer.disconnect();
      const runtime = createRuntime({
        brokers: brokers(), applicationId: appId, logLevel: 'error', topology: countsByKeyTopology(input),
        processingGuarantee: guarantee, deserializationErrors: 'dead-letter', processingErrors: 'dead-letter',
      });
      runtimes.push(runtime);
      await runtime.start();
      const deadline = Date.now() + 30_000;
      let counts = new Map<string, number>();
      while (!(counts.get('a') === 2 && counts.get('b') === 1)) {
        if (Date.now() > deadline) throw new Error(`counts ${JSON.stringify([...counts])}`);
        await new Promise((r) => setTimeout(r, 100));
        counts = await committedCounts([runtime]);
      }
      const dead = await readAll(kafka, `${appId}-dlq`, 2);
      expect(dead.map((d) => [d.value, d.headers['iqgate-error-code']]).sort()).toEqual([['not json', 'DECODE_FAILED'], ['{"explode":true}', 'PROCESSING_FAILED']]);
      await runtime.stop();
    });
  }
});
