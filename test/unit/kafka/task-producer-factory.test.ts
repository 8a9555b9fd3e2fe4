import { describe, expect, it } from 'vitest';
import type { Kafka } from 'kafkajs';
import { createTaskProducerFactory } from '../../../src/kafka/task-producer-factory.js';

/** A kafkajs stand-in whose producers fail to connect `failures` times, then work. */
function fakeKafka(failures: number): { kafka: Kafka; created: number; disconnected: number } {
  const state = { created: 0, disconnected: 0, failures };
  const kafka = {
    producer: () => {
      state.created += 1;
      return {
        connect: async () => {
          if (state.failures > 0) {
            state.failures -= 1;
            throw Object.assign(new Error('connect ECONNREFUSED'), { name: 'KafkaJSConnectionError' });
          }
        },
        sendBatch: async () => [],
        disconnect: async () => { state.disconnected += 1; },
      };
    },
  } as unknown as Kafka;
  return { kafka, get created() { return state.created; }, get disconnected() { return state.disconnected; } };
}

describe('the at-least-once shared producer', () => {
  it('connects again after a failed first connect instead of failing every later send', async () => {
    const fake = fakeKafka(1);
    const factory = createTaskProducerFactory(fake.kafka, { groupId: 'g' });
    const producer = factory.create(null);
    await expect(producer.send([{ topic: 't', key: null, value: Buffer.from('x') }])).rejects.toMatchObject({ code: 'BROKER_UNAVAILABLE' });
    await expect(producer.send([{ topic: 't', key: null, value: Buffer.from('x') }])).resolves.toEqual([]);
    expect(fake.created).toBe(2);
    expect(fake.disconnected).toBe(1); // the failed client was released
    await factory.close();
    expect(fake.disconnected).toBe(2);
  });
});

describe('the transactional producers of the factory', () => {
  it('are all disconnected by close(), also those whose task never closed them', async () => {
    const disconnected: string[] = [];
    const kafka = {
      producer: ({ transactionalId }: { transactionalId: string }) => ({
        connect: async () => undefined,
        transaction: async () => ({ isActive: () => true }),
        disconnect: async () => { disconnected.push(transactionalId); },
      }),
    } as unknown as Kafka;
    const factory = createTaskProducerFactory(kafka, { groupId: 'g' });
    const closedByTask = factory.create('app-in-0');
    const left = factory.create('app-in-1');
    await closedByTask.init();
    await left.init();
    await closedByTask.close();
    expect(disconnected).toEqual(['app-in-0']);
    await factory.close();
    expect(disconnected).toEqual(['app-in-0', 'app-in-1']);
  });
});

describe('prepared transactional producers (a joining instance\'s warm-up)', () => {
  it('connect without InitProducerId; create() hands the prepared one over and its init only asks for the producer id; releasePrepared closes the rest', async () => {
    const calls: string[] = [];
    const kafka = {
      producer: ({ transactionalId }: { transactionalId: string }) => ({
        connect: async () => { calls.push(`connect ${transactionalId}`); },
        transaction: async () => { calls.push(`InitProducerId ${transactionalId}`); return { isActive: () => true }; },
        disconnect: async () => { calls.push(`disconnect ${transactionalId}`); },
      }),
    } as unknown as Kafka;
    const factory = createTaskProducerFactory(kafka, { groupId: 'g' });
    factory.prepare!(['app-in-0', 'app-in-1']);
    factory.prepare!(['app-in-0']); // once per id
    await new Promise((r) => setImmediate(r));
    expect(calls).toEqual(['connect app-in-0', 'connect app-in-1']);

    const producer = factory.create('app-in-0');
    factory.releasePrepared!((id) => id === 'app-in-0');
    await producer.init();
    await new Promise((r) => setImmediate(r));
    expect(calls.slice(2).sort()).toEqual(['InitProducerId app-in-0', 'disconnect app-in-1']);
    // A task created afresh later connects on its own.
    await factory.create('app-in-1').init();
    expect(calls.slice(4)).toEqual(['connect app-in-1', 'InitProducerId app-in-1']);
    await factory.close();
  });

  it('a prepared connect that failed is reported by init(), which connects again on the next try', async () => {
    let failures = 1;
    const kafka = {
      producer: () => ({
        connect: async () => {
          if (failures-- > 0) throw Object.assign(new Error('connect ECONNREFUSED'), { name: 'KafkaJSConnectionError' });
        },
        transaction: async () => ({ isActive: () => true }),
        disconnect: async () => undefined,
      }),
    } as unknown as Kafka;
    const factory = createTaskProducerFactory(kafka, { groupId: 'g' });
    factory.prepare!(['app-in-0']);
    const producer = factory.create('app-in-0');
    await expect(producer.init()).rejects.toMatchObject({ code: 'BROKER_UNAVAILABLE' });
    await expect(producer.init()).resolves.toBeUndefined();
    await factory.close();
  });
});
