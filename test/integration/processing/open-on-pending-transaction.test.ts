/**
 * A task opens while its previous owner's last transaction is still open (exactly-once v2 on
 * librdkafka: the new owner's own InitProducerId settles nothing of another instance's
 * transaction). Here the previous owner is a plain transactional producer that counted k0 three
 * times: the count's changelog record and the input offset 3 sit in one open transaction. The
 * opening task must wait for that transaction — its offsets (require_stable) and its changelog
 * records (the changelog's stable end reaching the high watermark) — and then start from both:
 * restored count 3, input from offset 3, so one more k0 makes 4. Restoring to the stable end
 * read before the transaction ended, as the opener once did, loses the three (count 1).
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadLibrdkafka } from '../../../src/kafka/librdkafka/native.js';
import { StreamsBuilder } from '../../../src/processing/stream-builder.js';
import { changelogTopic, SOURCE_HEADERS } from '../../../src/processing/topic-names.js';
import { createRuntime } from '../../../src/runtime/runtime.js';
import { serdes } from '../../../src/store/serdes.js';
import { brokers } from './brokers.js';
import { committedCounts, mapsEqual, uniqueName, wordcountSuite } from './wordcount-harness.js';

const HELD_MS = 2_000;

describe.skipIf(!loadLibrdkafka().ok)('opening a task on a transaction still open (librdkafka)', () => {
  const { kafka, runtimes, createTopics } = wordcountSuite();

  it('waits for the transaction, then restores its changelog records and starts after its offsets', async () => {
    const appId = uniqueName('pend');
    const [input, output] = [uniqueName('pend-in'), uniqueName('pend-out')];
    const changelog = changelogTopic(appId, 'word-counts');
    await createTopics([input, output], 1);
    await createTopics([changelog], 1, [{ name: 'cleanup.policy', value: 'compact' }]);

    const plain = kafka.producer();
    await plain.connect();
    await plain.send({ topic: input, messages: [0, 1, 2].map((i) => ({ key: 'k0', value: `v${i}` })) });

    // The previous owner's last transaction: k0 counted three times, input consumed up to 3.
    const previous = kafka.producer({ transactionalId: uniqueName('pend-previous'), idempotent: true, maxInFlightRequests: 1 });
    await previous.connect();
    const txn = await previous.transaction();
    await txn.send({
      topic: changelog,
      messages: [{
        partition: 0,
        key: serdes.string.serialize('k0'),
        value: serdes.int64.serialize(3n),
        headers: { [SOURCE_HEADERS.topic]: input, [SOURCE_HEADERS.partition]: '0', [SOURCE_HEADERS.offset]: '2' },
      }],
    });
    await txn.sendOffsets({ consumerGroupId: appId, topics: [{ topic: input, partitions: [{ partition: 0, offset: '3' }] }] });

    const b = new StreamsBuilder();
    b.stream(input, { key: serdes.string, value: serdes.string })
      .groupByKey().count({ store: 'word-counts', value: serdes.int64 }).toStream().to(output);
    const running: number[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        if (chunk.toString().includes('"task running"')) running.push(Date.now());
        done();
      },
    });
    const runtime = createRuntime({
      brokers: brokers(), applicationId: appId, topology: b.build(), kafkaClient: 'librdkafka',
      logger: pino({ level: 'info' }, sink), commitIntervalMs: 100,
    });
    runtimes.push(runtime);
    await runtime.start();
    await new Promise((resolve) => setTimeout(resolve, HELD_MS));
    const committedAt = Date.now();
    await txn.commit();
    await previous.disconnect();

    await plain.send({ topic: input, messages: [{ key: 'k0', value: 'v3' }] });
    await plain.disconnect();
    const expected = new Map([['k0', 4]]);
    const deadline = Date.now() + 60_000;
    let counts = new Map<string, number>();
    while (!mapsEqual(counts, expected) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      counts = await committedCounts(runtimes);
    }
    expect(counts).toEqual(expected);
    expect(running.length).toBe(1);
    expect(running[0], 'the task waited for the transaction').toBeGreaterThanOrEqual(committedAt);
  }, 120_000);
});
