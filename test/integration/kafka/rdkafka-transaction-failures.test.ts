/**
 * What the instance committer relies on from librdkafka and the broker when a commit cycle
 * fails, against the real broker (bench:scale at 1000 partitions is where these showed):
 * - a transaction whose commit failed on a record is aborted for sure by abortAfterFailure(),
 *   so its tasks can rewind in memory instead of being re-opened;
 * - a committed-offset read asks only for the partitions it names, so another transaction
 *   holding offsets of other partitions of the group (require_stable) does not hold it back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadLibrdkafka } from '../../../src/kafka/librdkafka/native.js';
import { createRdkafkaPorts } from '../../../src/kafka/librdkafka/rdkafka-ports.js';
import type { ConsumerHandlers, KafkaPorts, OutputRecord, TopicPartition } from '../../../src/processing/ports.js';
import { createTopicsRetrying, kafkajs, testKafka, uniqueName, waitFor } from '../../support/kafka.js';
import { brokers } from '../processing/brokers.js';
import { createTopics } from '../processing/wordcount-harness.js';
import { FAST_GROUP } from './real-broker-driver.js';

const native = loadLibrdkafka();
if (!native.ok) throw new Error(`@confluentinc/kafka-javascript does not load: ${native.reason}`);
const rd = native.module;

const out = (topic: string, partition: number, value: string): OutputRecord => ({ topic, partition, key: Buffer.from(value), value: Buffer.from(value) });

describe('librdkafka: failed transactions and committed-offset reads', () => {
  const open: KafkaPorts[] = [];
  let admin: kafkajs.Admin;

  beforeAll(async () => {
    admin = testKafka().admin();
    await admin.connect();
  });

  afterAll(async () => {
    await Promise.allSettled(open.map((p) => p.close()));
    await admin.disconnect();
  });

  function ports(groupId: string, topics: readonly string[]): KafkaPorts {
    const p = createRdkafkaPorts(rd, {
      brokers: brokers(),
      clientId: uniqueName('rd-failures'),
      logLevel: 'nothing',
      transactionalId: uniqueName('rd-failures-tx'),
      transactionTimeoutMs: 10_000,
      consumer: { ...FAST_GROUP, groupId, topics },
    });
    open.push(p);
    return p;
  }

  /** read_committed values of a partition, through a plain kafkajs consumer of the test's own. */
  async function committedValues(topic: string, partition: number, count: number): Promise<string[]> {
    const consumer = testKafka().consumer({ groupId: uniqueName('reader'), readUncommitted: false, maxWaitTimeInMs: 100 });
    const values: string[] = [];
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({ eachMessage: async ({ partition: p, message }) => { if (p === partition) values.push(message.value?.toString() ?? ''); } });
      await waitFor(() => values.length >= count, 30_000, 50, `${count} committed records in ${topic}[${partition}]`);
    } finally {
      await consumer.disconnect();
    }
    return values;
  }

  it('a commit that fails on a record the broker refuses leaves a transaction that abortAfterFailure() aborts for sure; nothing of it shows and, after init(), the next one commits', async () => {
    const topic = uniqueName('rd-undeliverable');
    // The broker refuses records over 512 bytes in this topic (MESSAGE_TOO_LARGE): librdkafka
    // takes the record, the broker refuses it, and the transaction needs an abort — as when a
    // record times out — which commit() reports (its flush fails), not produce().
    await createTopicsRetrying(admin, [{ topic, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: '512' }] }]);
    const producer = ports(uniqueName('rd-group'), [topic]).streamProducer!;
    await producer.init();
    producer.produce([out(topic, 0, 'doomed'), { topic, partition: 0, key: null, value: Buffer.alloc(4_096, 1) }]);
    const failure = await producer.commit().then(() => null, (error: unknown) => error);
    expect(failure).toMatchObject({ details: { isTxnRequiresAbort: true } });
    expect(await producer.abortAfterFailure()).toBe(true);
    // As the committer does after every failed cycle. Without it, librdkafka (2.15) kept its
    // sequence numbers after this abort and the next commit failed "skipped sequence numbers".
    await producer.init();
    producer.produce([out(topic, 0, 'kept')]);
    await producer.commit();
    expect(await committedValues(topic, 0, 1)).toEqual(['kept']);
  }, 60_000);

  it('reading the committed offsets of the partitions named answers while a transaction holds offsets of the group\'s other partitions; reading the whole topic waits for it', async () => {
    const [input, output] = [uniqueName('rd-stable-in'), uniqueName('rd-stable-out')];
    await createTopics(admin, [input, output], 2);
    const groupId = uniqueName('rd-stable-group');
    const member = ports(groupId, [input]);
    let assignment: readonly TopicPartition[] = [];
    const handlers: ConsumerHandlers = {
      onBatch: () => true,
      onAssignment: (a) => { assignment = a; },
      onRebalancing: () => {},
      onCrash: () => {},
    };
    await member.consumer.run(handlers);
    await waitFor(() => assignment.length === 2, 30_000, 50, 'the assignment');
    const producer = member.streamProducer!;
    await producer.init();
    producer.produce([out(output, 0, 'x')]);
    await producer.sendOffsets([{ topic: input, partition: 1, offset: 7 }]);
    // The transaction is open and holds an offset of partition 1 (TxnOffsetCommit sent).
    const started = Date.now();
    expect(await member.admin.committedOffsets(groupId, input, [0])).toEqual(new Map());
    expect(Date.now() - started).toBeLessThan(5_000);
    let whole: Map<number, number> | undefined;
    const wholeRead = member.admin.committedOffsets(groupId, input).then((offsets) => { whole = offsets; }, () => { whole = new Map([[-1, -1]]); });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(whole).toBeUndefined(); // UNSTABLE_OFFSET_COMMIT for partition 1: librdkafka asks again
    await producer.commit();
    await wholeRead;
    expect(whole).toEqual(new Map([[1, 7]]));
  }, 60_000);
});
