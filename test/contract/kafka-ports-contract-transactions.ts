/**
 * Producers: per-task TaskProducers (transactional and at-least-once) and, where the adapter
 * has one, the instance's StreamProducerPort (exactly-once v2). Visibility to read_committed
 * readers, aborts, offsets committed in transactions, and fencing by transactional id. Part of
 * the ports contract (kafka-ports-contract.ts).
 */
import { describe, expect, it } from 'vitest';
import { isIqgateError } from '../../src/errors.js';
import type { KafkaPorts, OutputRecord } from '../../src/processing/ports.js';
import { rejection, values, type ContractContext } from './kafka-ports-context.js';

const out = (topic: string, partition: number, value: string): OutputRecord => ({ topic, partition, key: Buffer.from(`k-${value}`), value: Buffer.from(value), headers: { h: value } });

export function describeTransactionsContract(ctx: ContractContext): void {
  const timeout = ctx.driver.testTimeoutMs;
  const { capabilities } = ctx.driver;

  /** Waits until `ports.admin.committedOffsets` answers `expected` for the group, then checks it exactly. */
  async function expectCommitted(ports: KafkaPorts, groupId: string, topic: string, expected: ReadonlyMap<number, number>): Promise<void> {
    let last = new Map<number, number>();
    await ctx.eventually(`committed offsets ${JSON.stringify([...expected])}`, async () => {
      last = await ports.admin.committedOffsets(groupId, topic);
      return [...expected].every(([p, o]) => last.get(p) === o);
    });
    expect(last).toEqual(expected);
  }

  describe('transactional TaskProducer', () => {
    it('a transaction\'s records are visible to read_committed readers only after commit(); send() reports where they landed', async () => {
      const [topic] = await ctx.topics(1, 2) as [string];
      const ports = ctx.ports(ctx.config());
      const producer = ports.producers.create(ctx.name('task'));
      expect(producer.transactionalId).not.toBeNull();
      await producer.init();
      const results = await producer.send([out(topic, 0, 'a'), out(topic, 0, 'b'), out(topic, 0, 'c'), out(topic, 1, 'd'), out(topic, 1, 'e')]);
      expect([...results].sort((x, y) => x.partition - y.partition)).toEqual([
        { topic, partition: 0, lastOffset: 2 },
        { topic, partition: 1, lastOffset: 1 },
      ]);
      // Acknowledged, so in the log, but not below the last stable offset.
      expect(await ctx.driver.logEnd({ topic, partition: 0 })).toBeGreaterThanOrEqual(3);
      expect(await ctx.driver.readCommitted({ topic, partition: 0 })).toEqual([]);
      expect(await ports.admin.endOffsets(topic)).toEqual(new Map([[0, 0], [1, 0]]));
      // The high watermark counts them: the open transaction is what holds the stable end back.
      expect(await ports.admin.highWatermarks(topic)).toEqual(new Map([[0, 3], [1, 2]]));

      await producer.commit();
      const p0 = await ctx.committed({ topic, partition: 0 }, 3);
      expect(values(p0)).toEqual(['a', 'b', 'c']);
      expect(p0.map((r) => r.headers.h)).toEqual(['a', 'b', 'c']);
      expect(values(await ctx.committed({ topic, partition: 1 }, 2))).toEqual(['d', 'e']);
      expect((await ports.admin.endOffsets(topic)).get(0)).toBeGreaterThanOrEqual(3);
      expect(await ports.admin.highWatermarks(topic)).toEqual(await ports.admin.endOffsets(topic));
    }, timeout);

    it('an aborted transaction\'s records are never visible; the producer\'s next transaction commits normally', async () => {
      const [topic] = await ctx.topics(1, 1) as [string];
      const producer = ctx.ports(ctx.config()).producers.create(ctx.name('task'));
      await producer.init();
      await producer.send([out(topic, 0, 'aborted-1'), out(topic, 0, 'aborted-2')]);
      await producer.abort();
      await producer.send([out(topic, 0, 'kept')]);
      await producer.commit();
      expect(values(await ctx.committed({ topic, partition: 0 }, 1))).toEqual(['kept']);
    }, timeout);

    it('offsets sent in a committed transaction become the group\'s committed offsets; an aborted transaction commits none', async () => {
      const [input, output] = await ctx.topics(2, 2) as [string, string];
      const config = ctx.config({ topics: [input] });
      const ports = ctx.ports(config);
      const member = await ctx.member(ports);
      await ctx.eventually('the assignment', () => member.assignment.length === 2);
      const producer = ports.producers.create(ctx.name('task'));
      await producer.init();

      await producer.send([out(output, 0, 'x')]);
      await producer.sendOffsets([{ topic: input, partition: 0, offset: 5 }]);
      await producer.abort();
      await producer.send([out(output, 0, 'y')]);
      await producer.sendOffsets([{ topic: input, partition: 1, offset: 3 }]);
      await producer.commit();
      await expectCommitted(ports, config.groupId, input, new Map([[1, 3]]));

      await producer.send([out(output, 0, 'z')]);
      await producer.sendOffsets([{ topic: input, partition: 0, offset: 6 }, { topic: input, partition: 1, offset: 4 }]);
      await producer.commit();
      await expectCommitted(ports, config.groupId, input, new Map([[0, 6], [1, 4]]));
    }, timeout);

    it('a second producer with the same transactional id fences the first: its commit fails PRODUCER_FENCED and its records never show', async () => {
      const [topic] = await ctx.topics(1, 1) as [string];
      const transactionalId = ctx.name('task');
      const groupId = ctx.name('g');
      const zombie = ctx.ports(ctx.config({ groupId })).producers.create(transactionalId);
      await zombie.init();
      await zombie.send([out(topic, 0, 'zombie')]);
      const successor = ctx.ports(ctx.config({ groupId })).producers.create(transactionalId);
      await successor.init();

      const error = await rejection(zombie.commit());
      expect(isIqgateError(error, 'PRODUCER_FENCED'), String(error)).toBe(true);
      await successor.send([out(topic, 0, 'successor')]);
      await successor.commit();
      expect(values(await ctx.committed({ topic, partition: 0 }, 1))).toEqual(['successor']);
    }, timeout);
  });

  describe('at-least-once TaskProducer (no transactional id)', () => {
    it('records are visible to read_committed readers once send() resolves; commit() is a no-op', async () => {
      const [topic] = await ctx.topics(1, 1) as [string];
      const producer = ctx.ports(ctx.config()).producers.create(null);
      expect(producer.transactionalId).toBeNull();
      await producer.init();
      await producer.send([out(topic, 0, 'p'), out(topic, 0, 'q')]);
      expect(values(await ctx.driver.readCommitted({ topic, partition: 0 }))).toEqual(['p', 'q']);
      await producer.commit();
      expect(values(await ctx.driver.readCommitted({ topic, partition: 0 }))).toEqual(['p', 'q']);
    }, timeout);
  });

  describe('StreamProducerPort (exactly-once v2)', () => {
    const lacking = !capabilities.streamProducer;

    it.skipIf(lacking)('records produced in a transaction are visible to read_committed readers only after commit()', async () => {
      const [topic] = await ctx.topics(1, 1) as [string];
      const config = ctx.config();
      const ports = ctx.ports(config);
      const producer = ports.streamProducer!;
      expect(producer.transactionalId).toBe(config.transactionalId);
      await producer.init();
      producer.produce([out(topic, 0, 'a'), out(topic, 0, 'b'), out(topic, 0, 'c')]);
      await ctx.eventually('the records in the log', async () => await ctx.driver.logEnd({ topic, partition: 0 }) >= 3);
      expect(await ctx.driver.readCommitted({ topic, partition: 0 })).toEqual([]);
      expect(await ports.admin.endOffsets(topic)).toEqual(new Map([[0, 0]]));

      await producer.commit();
      const committed = await ctx.committed({ topic, partition: 0 }, 3);
      expect(values(committed)).toEqual(['a', 'b', 'c']);
      expect(committed.map((r) => r.headers.h)).toEqual(['a', 'b', 'c']);
    }, timeout);

    it.skipIf(lacking)('abort() discards the open transaction; the next one begins with produce() and commits', async () => {
      const [topic] = await ctx.topics(1, 1) as [string];
      const producer = ctx.ports(ctx.config()).streamProducer!;
      await producer.init();
      producer.produce([out(topic, 0, 'aborted-1'), out(topic, 0, 'aborted-2')]);
      await ctx.eventually('the aborted records in the log', async () => await ctx.driver.logEnd({ topic, partition: 0 }) >= 2);
      await producer.abort();
      producer.produce([out(topic, 0, 'kept')]);
      await producer.commit();
      expect(values(await ctx.committed({ topic, partition: 0 }, 1))).toEqual(['kept']);
    }, timeout);

    it.skipIf(lacking)('offsets sent with the consumer\'s group metadata become the group\'s committed offsets; an aborted transaction commits none', async () => {
      const [input, output] = await ctx.topics(2, 2) as [string, string];
      const config = ctx.config({ topics: [input] });
      const ports = ctx.ports(config);
      const member = await ctx.member(ports);
      await ctx.eventually('the assignment', () => member.assignment.length === 2);
      const producer = ports.streamProducer!;
      await producer.init();

      producer.produce([out(output, 0, 'x')]);
      await producer.sendOffsets([{ topic: input, partition: 0, offset: 5 }]);
      await producer.abort();
      producer.produce([out(output, 0, 'y')]);
      await producer.sendOffsets([{ topic: input, partition: 1, offset: 3 }]);
      await producer.commit();
      await expectCommitted(ports, config.groupId, input, new Map([[1, 3]]));

      producer.produce([out(output, 0, 'z')]);
      await producer.sendOffsets([{ topic: input, partition: 0, offset: 6 }, { topic: input, partition: 1, offset: 4 }]);
      await producer.commit();
      await expectCommitted(ports, config.groupId, input, new Map([[0, 6], [1, 4]]));
      expect(values(await ctx.committed({ topic: output, partition: 0 }, 2))).toEqual(['y', 'z']);
    }, timeout);

    it.skipIf(lacking)('init() of a second instance with the same transactional id fences the first: its commit fails PRODUCER_FENCED and its records never show', async () => {
      const [topic] = await ctx.topics(1, 1) as [string];
      const transactionalId = ctx.name('instance');
      const zombie = ctx.ports(ctx.config({ transactionalId })).streamProducer!;
      await zombie.init();
      zombie.produce([out(topic, 0, 'zombie')]);
      await ctx.eventually('the zombie\'s record in the log', async () => await ctx.driver.logEnd({ topic, partition: 0 }) >= 1);
      const successor = ctx.ports(ctx.config({ transactionalId })).streamProducer!;
      await successor.init();

      const error = await rejection(zombie.commit());
      expect(isIqgateError(error, 'PRODUCER_FENCED'), String(error)).toBe(true);
      successor.produce([out(topic, 0, 'successor')]);
      await successor.commit();
      expect(values(await ctx.committed({ topic, partition: 0 }, 1))).toEqual(['successor']);
    }, timeout);
  });
}
