/**
 * Proves that the broker started by scripts/kafka/broker.ts does what iqgate relies on:
 * keyed multi-partition round trips with headers, transactions under read_committed,
 * offsets committed inside transactions, and fencing of an older producer with the same
 * transactionalId. These are facts about Kafka + kafkajs 2.2.4, checked on the real thing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createTopicsRetrying, kafkajs, testKafka, uniqueName, waitFor } from '../../support/kafka.js';

const kafka = testKafka();
const admin = kafka.admin();
const cleanups: Array<() => Promise<void>> = [];

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await admin.disconnect();
});

async function createTopic(partitions: number): Promise<string> {
  const topic = uniqueName('topic');
  await admin.connect();
  await createTopicsRetrying(admin, [{ topic, numPartitions: partitions }]);
  return topic;
}

interface Received {
  partition: number;
  key: string;
  value: string;
  headers: Record<string, string>;
}

/** Consumes `topic` from the beginning in a fresh group until `done(received)` holds. */
async function consumeUntil(
  topic: string,
  isolation: 'read_committed' | 'read_uncommitted',
  done: (received: Received[]) => boolean,
): Promise<Received[]> {
  const consumer = kafka.consumer({ groupId: uniqueName('group'), readUncommitted: isolation === 'read_uncommitted', maxWaitTimeInMs: 100 });
  cleanups.push(() => consumer.disconnect());
  const received: Received[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(message.headers ?? {})) headers[name] = String(value);
      received.push({ partition, key: String(message.key), value: String(message.value), headers });
    },
  });
  await waitFor(() => done(received), 60_000);
  await consumer.disconnect();
  return received;
}

async function transactionalProducer(transactionalId: string): Promise<kafkajs.Producer> {
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
  cleanups.push(() => producer.disconnect());
  await producer.connect();
  return producer;
}

describe('the local Kafka broker', () => {
  it('round-trips keyed records with headers over several partitions, in order per partition', async () => {
    const topic = await createTopic(3);
    const producer = kafka.producer();
    cleanups.push(() => producer.disconnect());
    await producer.connect();
    const messages = Array.from({ length: 60 }, (_, i) => ({
      key: `key-${i % 7}`,
      value: `value-${i}`,
      headers: { seq: String(i) },
    }));
    await producer.send({ topic, messages });

    const received = await consumeUntil(topic, 'read_uncommitted', (r) => r.length >= messages.length);
    expect(received).toHaveLength(messages.length);
    expect(new Set(received.map((r) => r.partition)).size).toBeGreaterThan(1);
    // The default partitioner sends one key to one partition ...
    const partitionsByKey = new Map<string, Set<number>>();
    for (const r of received) partitionsByKey.set(r.key, (partitionsByKey.get(r.key) ?? new Set()).add(r.partition));
    for (const partitions of partitionsByKey.values()) expect(partitions.size).toBe(1);
    // ... and order is kept within a partition; headers survive.
    for (const partition of new Set(received.map((r) => r.partition))) {
      const seqs = received.filter((r) => r.partition === partition).map((r) => Number(r.headers.seq));
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    }
    for (const r of received) expect(r.value).toBe(`value-${r.headers.seq}`);
  });

  it('shows committed transactions to a read_committed consumer and never aborted ones', async () => {
    const topic = await createTopic(2);
    const producer = await transactionalProducer(uniqueName('txn'));

    const committed = await producer.transaction();
    await committed.send({ topic, messages: [{ key: 'a', value: 'committed-1' }, { key: 'b', value: 'committed-2' }] });
    await committed.commit();
    const aborted = await producer.transaction();
    await aborted.send({ topic, messages: [{ key: 'a', value: 'aborted-1' }, { key: 'b', value: 'aborted-2' }] });
    await aborted.abort();
    const last = await producer.transaction();
    await last.send({ topic, messages: [{ key: 'a', value: 'committed-3' }] });
    await last.commit();

    const committedView = await consumeUntil(topic, 'read_committed', (r) => r.some((m) => m.value === 'committed-3'));
    expect(committedView.map((m) => m.value).sort()).toEqual(['committed-1', 'committed-2', 'committed-3']);

    // The aborted records really are in the log: a read_uncommitted consumer sees them.
    const everything = await consumeUntil(topic, 'read_uncommitted', (r) => r.length >= 5);
    expect(everything.map((m) => m.value)).toEqual(expect.arrayContaining(['aborted-1', 'aborted-2']));
  });

  it('hides aborted records from read_committed when transactions of two producers interleave on one partition', async () => {
    // kafkajs 2.2.4 leaks these records unpatched (src/kafka/kafkajs-patches.ts): the broker
    // lists aborted transactions in abort order, kafkajs assumed first-offset order.
    const topic = await createTopic(1);
    const first = await transactionalProducer(uniqueName('txn'));
    const second = await transactionalProducer(uniqueName('txn'));
    const a = await first.transaction();
    await a.send({ topic, messages: [{ value: 'a-aborted-1' }] });
    const b = await second.transaction();
    await b.send({ topic, messages: [{ value: 'b-aborted-1' }] });
    await a.send({ topic, messages: [{ value: 'a-aborted-2' }] });
    await b.send({ topic, messages: [{ value: 'b-aborted-2' }] });
    // b's abort marker is written before a's although a's first offset is lower.
    await b.abort();
    await a.abort();
    const c = await first.transaction();
    await c.send({ topic, messages: [{ value: 'committed' }] });
    await c.commit();

    const visible = await consumeUntil(topic, 'read_committed', (r) => r.some((m) => m.value === 'committed'));
    expect(visible.map((m) => m.value)).toEqual(['committed']);
  });

  it('moves the group offset sent inside a transaction only when the transaction commits', async () => {
    const topic = await createTopic(1);
    const groupId = uniqueName('group');
    const producer = await transactionalProducer(uniqueName('txn'));
    const committedOffset = async (): Promise<string | undefined> => {
      const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
      return offsets?.partitions.find((p) => p.partition === 0)?.offset;
    };

    const aborted = await producer.transaction();
    await aborted.send({ topic, messages: [{ value: 'x' }] });
    await aborted.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 0, offset: '5' }] }] });
    await aborted.abort();
    expect(await committedOffset()).toBe('-1');

    const committed = await producer.transaction();
    await committed.send({ topic, messages: [{ value: 'y' }] });
    await committed.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 0, offset: '7' }] }] });
    expect(await committedOffset()).toBe('-1'); // still open: not visible yet
    await committed.commit();
    await waitFor(async () => (await committedOffset()) === '7', 10_000);
  });

  it('fences the older of two producers with the same transactionalId', async () => {
    const topic = await createTopic(1);
    const transactionalId = uniqueName('txn');
    const older = await transactionalProducer(transactionalId);
    const olderTxn = await older.transaction();
    await olderTxn.send({ topic, messages: [{ value: 'from-zombie' }] });

    // InitProducerId by the newer instance bumps the epoch and aborts the open transaction.
    const newer = await transactionalProducer(transactionalId);
    const newerTxn = await newer.transaction();
    await newerTxn.send({ topic, messages: [{ value: 'from-newer' }] });
    await newerTxn.commit();

    // kafkajs speaks EndTxn v0/v1, so the broker answers INVALID_PRODUCER_EPOCH (docs/kafkajs-notes.md §5).
    const failure = await olderTxn.commit().then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(kafkajs.KafkaJSProtocolError);
    expect((failure as kafkajs.KafkaJSProtocolError).type).toMatch(/INVALID_PRODUCER_EPOCH|PRODUCER_FENCED/);

    const visible = await consumeUntil(topic, 'read_committed', (r) => r.some((m) => m.value === 'from-newer'));
    expect(visible.map((m) => m.value)).toEqual(['from-newer']);
  });
});
