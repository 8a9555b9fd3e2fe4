/**
 * A member that dies with its transaction open (exactly-once v2: one transactional id per
 * instance, which nobody reuses) holds the stable end of every partition it wrote to until the
 * broker aborts the transaction: transaction.timeout.ms later, at the coordinator's next check.
 * The survivors fence its transactional id when it leaves the group (departed-member-fencer.ts):
 * against the real broker, the stable end then moves past its records at once, and the dead
 * member's transaction can no longer commit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DepartedMemberFencer } from '../../../src/kafka/departed-member-fencer.js';
import { createKafka } from '../../../src/kafka/kafka-client.js';
import { KafkaAdmin } from '../../../src/kafka/kafka-admin.js';
import { createTaskProducerFactory } from '../../../src/kafka/task-producer-factory.js';
import { advertisingClientId, withTransactionalId } from '../../../src/kafka/partition-owner-tracker.js';
import { uniqueName, waitFor } from '../../support/kafka.js';
import { brokers } from '../processing/brokers.js';

describe('fencing a departed member on the real broker', () => {
  const kafka = createKafka({ brokers: brokers(), clientId: uniqueName('fence') });
  const admin = new KafkaAdmin(kafka);
  const producers = createTaskProducerFactory(kafka, { groupId: uniqueName('fence-group') });
  const topic = uniqueName('fence-topic');

  beforeAll(async () => {
    await admin.ensureTopics([{ topic, partitions: 1, compacted: false }]);
  });
  afterAll(async () => {
    await producers.close();
    await admin.close();
  });

  it('aborts the open transaction of a member gone from the group: the stable end moves past its records at once', async () => {
    const dead = uniqueName('app-dead');
    // The "dead" member: a transaction with a record in it, left open, with a timeout far away.
    const zombie = kafka.producer({ transactionalId: dead, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 60_000 });
    await zombie.connect();
    const transaction = await zombie.transaction();
    await transaction.send({ topic, messages: [{ key: 'k', value: 'uncommitted' }] });
    try {
      expect((await admin.highWatermarks(topic)).get(0)).toBe(1);
      // Without a fence the stable end stays before the open transaction's record.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect((await admin.endOffsets(topic)).get(0)).toBe(0);

      const infos: string[] = [];
      const fencer = new DepartedMemberFencer({
        own: uniqueName('app-survivor'),
        fence: async (transactionalId) => {
          const producer = producers.create(transactionalId);
          try {
            await producer.init();
          } finally {
            await producer.close();
          }
        },
        logger: { info: (fields) => infos.push(String(fields.transactionalId)), warn: () => undefined, debug: () => undefined },
      });
      const member = (txn: string): string => advertisingClientId(withTransactionalId('fence', txn), 'http://127.0.0.1:9/x');
      const started = Date.now();
      fencer.observe([member(dead), member('app-survivor')]);
      fencer.observe([member('app-survivor')]);
      await fencer.settled();
      expect(infos).toEqual([dead]);
      // Aborted: the abort marker follows the record, and the stable end reaches the high watermark.
      await waitFor(async () => (await admin.endOffsets(topic)).get(0) === 2, 3_000);
      expect(Date.now() - started).toBeLessThan(5_000);
      await expect(transaction.commit()).rejects.toThrow();
    } finally {
      await zombie.disconnect().catch(() => undefined);
    }
  });
});
