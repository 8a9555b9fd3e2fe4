/**
 * The baseline of bench:processing: a plain kafkajs consume→produce loop (no state, no
 * transactions) doing the stateless half of wordcount (line → one record per word), the least
 * any wordcount must do. Run by bench/processing.ts as a child process, twice: on kafkajs as
 * published ("stock") and on kafkajs with iqgate's patches (src/kafka/kafkajs-patches.ts), which
 * also speed up plain producers and consumers. A process of its own, because the patches replace
 * modules in Node's module cache and cannot be undone in the same process.
 *
 * Usage: tsx bench/plain-loop.ts <brokers> <input> <output> <lines> <stock|patched>
 * Prints one JSON line: { "linesPerSecond": n }.
 */
import type { Admin, Kafka as KafkaType } from 'kafkajs';
import { wordsOf } from '../examples/wordcount/wordcount-topology.js';
import { performance } from 'node:perf_hooks';

const [brokers = '', input = '', output = '', linesArg = '0', flavour = 'stock'] = process.argv.slice(2);
if (flavour === 'patched') await import('../src/kafka/kafkajs-patches.js');
const { Kafka, logLevel } = (await import('kafkajs')).default;

const LINES = Number(linesArg);
const PARTITIONS_CONCURRENTLY = 4;

async function waitCaughtUp(admin: Admin, groupId: string, topics: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let done = true;
    for (const topic of topics) {
      const ends = await admin.fetchTopicOffsets(topic);
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      for (const end of ends) {
        const c = Number(committed?.partitions.find((p) => p.partition === end.partition)?.offset ?? -1);
        if (Number(end.high) > 0 && c < Number(end.high)) done = false;
      }
    }
    if (done) return;
    if (Date.now() > deadline) throw new Error(`group ${groupId} did not catch up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function plainLoop(kafka: KafkaType): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  const groupId = `bench-plain-${flavour}-${Date.now().toString(36)}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
  const producer = kafka.producer();
  await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topic: input, fromBeginning: true });
  const started = performance.now();
  await consumer.run({
    partitionsConsumedConcurrently: PARTITIONS_CONCURRENTLY,
    eachBatch: async ({ batch, heartbeat }) => {
      const messages = batch.messages.flatMap((m) => wordsOf(m.value?.toString() ?? '').map((word) => ({ key: word, value: '1' })));
      // Requests of at most 1000 records, as iqgate's producer sends them (broker message.max.bytes).
      for (let i = 0; i < messages.length; i += 1000) await producer.send({ topic: output, messages: messages.slice(i, i + 1000), acks: -1 });
      await heartbeat();
    },
  });
  await waitCaughtUp(admin, groupId, [input], 120_000);
  const seconds = (performance.now() - started) / 1000;
  await consumer.disconnect();
  await producer.disconnect();
  await admin.disconnect();
  return LINES / seconds;
}

const kafka = new Kafka({ clientId: `bench-plain-${flavour}`, brokers: brokers.split(','), logLevel: logLevel.ERROR });
console.log(JSON.stringify({ linesPerSecond: await plainLoop(kafka) }));
