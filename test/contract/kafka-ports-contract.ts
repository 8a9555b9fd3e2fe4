/**
 * The contract of the Kafka ports (src/processing/ports.ts), one suite for every implementation:
 * the in-memory fake (test/unit/processing/kafka-ports-fake.contract.test.ts) and the kafkajs and
 * librdkafka adapters on a real broker (test/integration/kafka/kafka-ports-*.contract.test.ts),
 * as every store engine runs the store contract (CONVENTIONS, habit 2). It checks what the
 * port's doc comments promise, never how a client does it; an implementation provides a
 * KafkaPortsDriver (kafka-ports-driver.ts) and calls describeKafkaPortsContract.
 *
 * Errors: against an address where nothing answers, consumer.run() REJECTS (it does not resolve
 * and report later through onCrash or onReconnecting), and so does the first call of every other
 * port that needs the broker; each with a retriable IqgateError BROKER_UNAVAILABLE.
 *
 * Sections: consuming and plain offset commits (-consuming), producers and transactions
 * (-transactions), rebalances (-rebalances), admin and changelog reads (-admin).
 */
import { describe, expect, it } from 'vitest';
import { isIqgateError, type IqgateError } from '../../src/errors.js';
import { contractContext, rejection, type ContractContext } from './kafka-ports-context.js';
import { describeAdminContract } from './kafka-ports-contract-admin.js';
import { describeConsumingContract } from './kafka-ports-contract-consuming.js';
import { describeRebalanceContract } from './kafka-ports-contract-rebalances.js';
import { describeTransactionsContract } from './kafka-ports-contract-transactions.js';
import type { KafkaPortsDriver } from './kafka-ports-driver.js';

export type { KafkaPortsCapabilities, KafkaPortsDriver, PlainRecord, PortsConfig } from './kafka-ports-driver.js';

export function describeKafkaPortsContract(name: string, driver: KafkaPortsDriver): void {
  describe(`Kafka ports contract: ${name}`, () => {
    const ctx = contractContext(driver);
    describeCapabilities(ctx);
    describeConsumingContract(ctx);
    describeTransactionsContract(ctx);
    describeRebalanceContract(ctx);
    describeAdminContract(ctx);
    describeErrorContract(ctx);
  });
}

function describeCapabilities(ctx: ContractContext): void {
  it('declares the capabilities its ports have (streamProducer, cooperative, staticMembership), so no spec is skipped that it could pass', () => {
    const config = ctx.config({ groupInstanceId: ctx.name('instance') });
    const ports = ctx.ports(config);
    expect({ streamProducer: ports.streamProducer !== undefined, cooperative: ports.consumer.cooperative === true, staticMembership: ports.consumer.staticMember === true })
      .toEqual(ctx.driver.capabilities);
    if (ports.streamProducer !== undefined) expect(ports.streamProducer.transactionalId).toBe(config.transactionalId);
  }, ctx.driver.testTimeoutMs);
}

function describeErrorContract(ctx: ContractContext): void {
  describe('errors', () => {
    it('against an unreachable broker, consumer.run() and the first call of every other port reject with a retriable BROKER_UNAVAILABLE', async () => {
      const topic = ctx.name('t');
      const ports = ctx.unreachablePorts(ctx.config({ topics: [topic] }));
      const crashes: unknown[] = [];
      const handlers = {
        onBatch: () => true,
        onAssignment: () => undefined,
        onRebalancing: () => undefined,
        onCrash: (error: unknown) => {
          crashes.push(error);
        },
      };
      const calls: Record<string, Promise<unknown>> = {
        'consumer.run()': ports.consumer.run(handlers),
        'admin.partitionCounts()': ports.admin.partitionCounts([topic]),
        'admin.endOffsets()': ports.admin.endOffsets(topic),
        'admin.highWatermarks()': ports.admin.highWatermarks(topic),
        'producers.create(id).init()': ports.producers.create(ctx.name('task')).init(),
        'producers.create(null).send()': ports.producers.create(null).send([{ topic, partition: 0, key: null, value: Buffer.from('v') }]),
        'changelogReader.read()': ports.changelogReader.read({ topic, partition: 0 }, 0, 1, async () => undefined),
        ...(ports.streamProducer === undefined ? {} : { 'streamProducer.init()': ports.streamProducer.init() }),
      };
      const outcomes = await Promise.all(Object.entries(calls).map(async ([call, promise]) => {
        const error = await rejection(promise);
        return [call, isIqgateError(error) ? { code: error.code, retriable: error.retriable } : { code: String(error), retriable: false }] as const;
      }));
      const expected = Object.fromEntries(Object.keys(calls).map((call) => [call, { code: 'BROKER_UNAVAILABLE' satisfies IqgateError['code'], retriable: true }]));
      expect(Object.fromEntries(outcomes)).toEqual(expected);
      expect(crashes).toEqual([]);
    }, ctx.driver.testTimeoutMs);
  });
}
