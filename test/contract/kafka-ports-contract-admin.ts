/**
 * AdminPort (topics, offsets, committed offsets) and ChangelogReaderPort (restore reads). Part of
 * the ports contract (kafka-ports-contract.ts).
 */
import { describe, expect, it } from 'vitest';
import { isIqgateError } from '../../src/errors.js';
import type { ChangelogChunk, TopicPartition } from '../../src/processing/ports.js';
import { range, rejection, values, type ContractContext } from './kafka-ports-context.js';

export function describeAdminContract(ctx: ContractContext): void {
  const timeout = ctx.driver.testTimeoutMs;

  describe('AdminPort', () => {
    it('partitionCounts() answers each topic\'s partition count; a missing topic fails TOPIC_NOT_FOUND naming it', async () => {
      const [two] = await ctx.topics(1, 2) as [string];
      const [three] = await ctx.topics(1, 3) as [string];
      const admin = ctx.ports(ctx.config()).admin;
      expect(await admin.partitionCounts([two, three])).toEqual(new Map([[two, 2], [three, 3]]));

      const missing = ctx.name('missing');
      const error = await rejection(admin.partitionCounts([two, missing]));
      expect(isIqgateError(error, 'TOPIC_NOT_FOUND'), String(error)).toBe(true);
      expect((error as Error).message).toContain(missing);
    }, timeout);

    it('ensureTopics() creates missing topics, accepts them again, and refuses an existing topic with another partition count (INVALID_CONFIG)', async () => {
      const admin = ctx.ports(ctx.config()).admin;
      const topic = ctx.name('internal');
      await admin.ensureTopics([{ topic, partitions: 3, compacted: true }]);
      expect(await admin.partitionCounts([topic])).toEqual(new Map([[topic, 3]]));
      await admin.ensureTopics([{ topic, partitions: 3, compacted: true }]);

      const error = await rejection(admin.ensureTopics([{ topic, partitions: 2, compacted: true }]));
      expect(isIqgateError(error, 'INVALID_CONFIG'), String(error)).toBe(true);
    }, timeout);

    it('beginningOffsets() and endOffsets() answer every partition\'s earliest and read_committed end', async () => {
      const [topic] = await ctx.topics(1, 2) as [string];
      const admin = ctx.ports(ctx.config()).admin;
      expect(await admin.beginningOffsets(topic)).toEqual(new Map([[0, 0], [1, 0]]));
      expect(await admin.endOffsets(topic)).toEqual(new Map([[0, 0], [1, 0]]));
      await ctx.driver.produce(topic, range(0, 3).map((i) => ({ partition: 0, key: `k${i}`, value: `v${i}` })));
      expect(await admin.endOffsets(topic)).toEqual(new Map([[0, 3], [1, 0]]));
      expect(await admin.beginningOffsets(topic)).toEqual(new Map([[0, 0], [1, 0]]));
    }, timeout);

    it('committedOffsets() is empty for a group that committed nothing, and answers for the ports\' own group before its consumer runs', async () => {
      const [topic] = await ctx.topics(1, 2) as [string];
      const config = ctx.config({ topics: [topic] });
      const idle = ctx.ports(config);
      expect(await idle.admin.committedOffsets(config.groupId, topic)).toEqual(new Map());
      expect(await idle.admin.committedOffsets(ctx.name('other-group'), topic)).toEqual(new Map());

      const running = await ctx.member(ctx.ports(config));
      await ctx.eventually('the assignment', () => running.assignment.length === 2);
      await running.ports.consumer.commitOffsets([{ topic, partition: 1, offset: 2 }]);
      expect(await idle.admin.committedOffsets(config.groupId, topic)).toEqual(new Map([[1, 2]]));
    }, timeout);
  });

  describe('ChangelogReaderPort', () => {
    it('read() hands over the committed records of [from, end) in offset order, without aborted or control records', async () => {
      const [topic] = await ctx.topics(1, 1) as [string];
      const tp: TopicPartition = { topic, partition: 0 };
      const ports = ctx.ports(ctx.config());
      await ctx.driver.produce(topic, range(0, 3).map((i) => ({ partition: 0, key: `k${i}`, value: `plain-${i}` })));
      const producer = ports.producers.create(ctx.name('task'));
      await producer.init();
      const record = (value: string) => ({ topic, partition: 0, key: Buffer.from(value), value: Buffer.from(value) });
      await producer.send([record('aborted-0'), record('aborted-1')]);
      await producer.abort();
      await producer.send([record('txn-0'), record('txn-1')]);
      await producer.commit();
      await ctx.committed(tp, 5);
      const end = (await ports.admin.endOffsets(topic)).get(0) ?? 0;
      const committed = new Set(['plain-0', 'plain-1', 'plain-2', 'txn-0', 'txn-1']);

      const whole = await readAll(ports.changelogReader.read.bind(ports.changelogReader), tp, 1, end);
      expect(values(whole.records)).toEqual(['plain-1', 'plain-2', 'txn-0', 'txn-1']);
      expect(isIncreasing(whole.records.map((r) => r.offset))).toBe(true);
      expect(whole.records[0]?.offset).toBe(1);
      expect(whole.nextOffsets[whole.nextOffsets.length - 1]).toBeGreaterThanOrEqual(end);
      expect(isNonDecreasing(whole.nextOffsets)).toBe(true);
      for (const chunk of whole.chunks) {
        const last = chunk.records[chunk.records.length - 1];
        if (last !== undefined) expect(chunk.nextOffset).toBeGreaterThan(last.offset);
      }

      // A range ending early: everything below its end; past it, if anything, committed records only.
      const head = await readAll(ports.changelogReader.read.bind(ports.changelogReader), tp, 0, 2);
      expect(values(head.records.slice(0, 2))).toEqual(['plain-0', 'plain-1']);
      for (const v of values(head.records)) expect(committed.has(v ?? ''), `${v} delivered`).toBe(true);
      expect(isIncreasing(head.records.map((r) => r.offset))).toBe(true);
      expect(head.nextOffsets[head.nextOffsets.length - 1]).toBeGreaterThanOrEqual(2);
    }, timeout);
  });
}

type Read = (tp: TopicPartition, from: number, end: number, onChunk: (chunk: ChangelogChunk) => Promise<void>) => Promise<void>;

async function readAll(read: Read, tp: TopicPartition, from: number, end: number): Promise<{ chunks: ChangelogChunk[]; records: ChangelogChunk['records'][number][]; nextOffsets: number[] }> {
  const chunks: ChangelogChunk[] = [];
  await read(tp, from, end, async (chunk) => {
    chunks.push(chunk);
  });
  return { chunks, records: chunks.flatMap((c) => c.records), nextOffsets: chunks.map((c) => c.nextOffset) };
}

function isIncreasing(xs: readonly number[]): boolean {
  return xs.every((x, i) => i === 0 || x > (xs[i - 1] ?? -Infinity));
}

function isNonDecreasing(xs: readonly number[]): boolean {
  return xs.every((x, i) => i === 0 || x >= (xs[i - 1] ?? -Infinity));
}
