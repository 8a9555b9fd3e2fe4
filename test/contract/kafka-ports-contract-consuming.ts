/**
 * GroupConsumerPort: assignment, delivery in offset order, pause/resume, seek, refused batches,
 * and plain offset commits (at-least-once). Part of the ports contract (kafka-ports-contract.ts).
 */
import { describe, expect, it } from 'vitest';
import type { InputRecord, TopicPartition } from '../../src/processing/ports.js';
import { partitionsOf, range, sorted, text, values, type ContractContext } from './kafka-ports-context.js';
import type { PlainRecord } from './kafka-ports-driver.js';

export function describeConsumingContract(ctx: ContractContext): void {
  const timeout = ctx.driver.testTimeoutMs;

  describe('consuming', () => {
    it('reports the whole assignment through onAssignment once the consumer has joined', async () => {
      const [topic] = await ctx.topics(1, 3) as [string];
      const member = await ctx.member(ctx.ports(ctx.config({ topics: [topic] })));
      await ctx.eventually('the assignment', () => member.assignment.length === 3);
      expect(member.assignment).toEqual(partitionsOf(topic, 3));
    }, timeout);

    it('hands over every record of a partition once, in offset order, with its key, value, headers and timestamp', async () => {
      const [topic] = await ctx.topics(1, 2) as [string];
      const base = 1_700_000_000_000;
      const written = (partition: number): PlainRecord[] => range(0, 5).map((i) => ({
        partition,
        // A record without key and one without value (a tombstone) travel as null.
        key: partition === 0 && i === 4 ? null : `k${partition}-${i}`,
        value: partition === 1 && i === 4 ? null : `v${partition}-${i}`,
        headers: { n: String(i), p: String(partition) },
        timestamp: base + partition * 100 + i,
      }));
      await ctx.driver.produce(topic, [...written(0), ...written(1)]);
      const member = await ctx.member(ctx.ports(ctx.config({ topics: [topic] })));
      await ctx.eventually('all 10 records', () => member.records({ topic, partition: 0 }).length + member.records({ topic, partition: 1 }).length >= 10);

      for (const delivery of member.taken) {
        expect(delivery.records.length).toBeGreaterThan(0);
        for (const r of delivery.records) expect({ topic: r.topic, partition: r.partition }).toEqual(delivery.tp);
      }
      for (const partition of [0, 1]) {
        const got = member.records({ topic, partition });
        expect(got.map((r) => r.offset)).toEqual(range(0, 5));
        expect(got.map(describeRecord)).toEqual(written(partition).map((w) => ({ key: w.key, value: w.value, headers: w.headers, timestamp: w.timestamp })));
      }
    }, timeout);

    it('while maxRecordsPerFetch() is finite, a backlog comes in small deliveries, every record once and in order', async () => {
      // A hint, kept in the adapter's own unit: librdkafka counts records, kafkajs bytes (it cannot
      // count before it decodes; a broker sends only whole batches that fit, but the first
      // partition's next batch whole even when larger), so the backlog is written in batches of
      // 10 records of 1 KB.
      const [topic] = await ctx.topics(1, 1) as [string];
      const tp: TopicPartition = { topic, partition: 0 };
      for (let batch = 0; batch < 30; batch += 1) {
        await ctx.driver.produce(topic, range(0, 10).map((i) => ({ partition: 0, key: `k${batch * 10 + i}`, value: 'x'.repeat(1000) })));
      }
      const member = await ctx.member(ctx.ports(ctx.config({ topics: [topic] })), { maxRecordsPerFetch: () => 10 });
      await ctx.eventually('all 300 records', () => member.records(tp).length >= 300);
      expect(member.offsets(tp)).toEqual(range(0, 300));
      expect(Math.max(...member.taken.map((d) => d.records.length))).toBeLessThanOrEqual(40);
    }, timeout);

    it('a paused partition hands over nothing until resumed, then continues from where it stood', async () => {
      const [topic] = await ctx.topics(1, 2) as [string];
      const held: TopicPartition = { topic, partition: 0 };
      const flowing: TopicPartition = { topic, partition: 1 };
      await ctx.driver.produce(topic, range(0, 3).map((i) => ({ partition: 0, key: `a${i}`, value: `a${i}` })));
      await ctx.driver.produce(topic, range(0, 3).map((i) => ({ partition: 1, key: `b${i}`, value: `b${i}` })));
      const member = await ctx.member(ctx.ports(ctx.config({ topics: [topic] })), {
        onAssignment: (assignment, ports) => {
          ports.consumer.pause(assignment.filter((tp) => tp.partition === held.partition));
          ports.consumer.resume(assignment.filter((tp) => tp.partition !== held.partition));
        },
      });
      await ctx.eventually('the unpaused partition\'s first records', () => member.records(flowing).length === 3);
      // More fetch rounds for the paused partition to leak through, then still nothing from it.
      await ctx.driver.produce(topic, range(3, 6).map((i) => ({ partition: 1, key: `b${i}`, value: `b${i}` })));
      await ctx.eventually('the unpaused partition\'s later records', () => member.records(flowing).length === 6);
      expect(member.records(held)).toEqual([]);

      member.ports.consumer.resume([held]);
      await ctx.eventually('the resumed partition\'s records', () => member.records(held).length >= 3);
      expect(member.offsets(held)).toEqual([0, 1, 2]);
      expect(values(member.records(held))).toEqual(['a0', 'a1', 'a2']);
    }, timeout);

    it('seek() moves the fetch position back without committing anything', async () => {
      const [topic] = await ctx.topics(1, 1) as [string];
      const tp = { topic, partition: 0 };
      await ctx.driver.produce(topic, range(0, 5).map((i) => ({ partition: 0, key: `k${i}`, value: `v${i}` })));
      const config = ctx.config({ topics: [topic] });
      const member = await ctx.member(ctx.ports(config));
      await ctx.eventually('the 5 records', () => member.records(tp).length === 5);

      member.ports.consumer.seek({ ...tp, offset: 2 });
      await ctx.eventually('the records after the seek', () => member.records(tp).length >= 8);
      expect(member.offsets(tp)).toEqual([0, 1, 2, 3, 4, 2, 3, 4]);
      expect(await member.ports.admin.committedOffsets(config.groupId, topic)).toEqual(new Map());
    }, timeout);

    it('a partition paused at its assignment, sought and resumed (a task\'s start) hands over records from the sought offset only', async () => {
      const [topic] = await ctx.topics(1, 2) as [string];
      await ctx.driver.produce(topic, range(0, 6).map((i) => ({ partition: i % 2, key: `k${i}`, value: `v${i}` })));
      // As the task manager opens a task: pause on assignment, then (a task opened) seek and resume.
      const member = await ctx.member(ctx.ports(ctx.config({ topics: [topic] })), {
        onAssignment: (assignment, ports) => {
          ports.consumer.pause(assignment);
          setTimeout(() => {
            for (const tp of assignment) ports.consumer.seek({ ...tp, offset: tp.partition === 0 ? 1 : 2 });
            ports.consumer.resume(assignment);
          }, 30);
        },
      });
      await ctx.eventually('the records from the sought offsets', () => member.records({ topic, partition: 0 }).length >= 2 && member.records({ topic, partition: 1 }).length >= 1);
      // More fetch rounds for anything from before the seek to leak through.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(member.offsets({ topic, partition: 0 })).toEqual([1, 2]);
      expect(member.offsets({ topic, partition: 1 })).toEqual([2]);
    }, timeout);

    it('a batch refused by onBatch while its partition is paused is handed over again, from its first offset, after resume', async () => {
      const [topic] = await ctx.topics(1, 1) as [string];
      const tp = { topic, partition: 0 };
      await ctx.driver.produce(topic, range(0, 3).map((i) => ({ partition: 0, key: `k${i}`, value: `v${i}` })));
      let refuse = true;
      const member = await ctx.member(ctx.ports(ctx.config({ topics: [topic] })), {
        onBatch: (batchTp, _records, ports) => {
          if (!refuse) return true;
          refuse = false;
          ports.consumer.pause([batchTp]); // as the doc asks: paused (or sought) before refusing
          return false;
        },
      });
      await ctx.eventually('a refused batch', () => member.refused.length === 1);
      const firstRefused = member.refused[0]?.records[0]?.offset;
      expect(firstRefused).toBe(0);

      member.ports.consumer.resume([tp]);
      await ctx.eventually('the records after resume', () => member.records(tp).length >= 3);
      expect(member.offsets(tp)).toEqual([0, 1, 2]);
    }, timeout);
  });

  describe('plain offset commits (at-least-once)', () => {
    it('commitOffsets() makes them the group\'s committed offsets, and a member joining later starts there (or at the beginning)', async () => {
      const [topic] = await ctx.topics(1, 2) as [string];
      await ctx.driver.produce(topic, [0, 1].flatMap((partition) => range(0, 4).map((i) => ({ partition, key: `k${i}`, value: `v${partition}-${i}` }))));
      const config = ctx.config({ topics: [topic] });
      const first = await ctx.member(ctx.ports(config));
      await ctx.eventually('all 8 records', () => first.taken.reduce((n, d) => n + d.records.length, 0) >= 8);

      await first.ports.consumer.commitOffsets([{ topic, partition: 0, offset: 3 }]);
      expect(await first.ports.admin.committedOffsets(config.groupId, topic)).toEqual(new Map([[0, 3]]));
      await first.ports.consumer.stop();

      const second = await ctx.member(ctx.ports(config));
      // What the second member got, should it time out (a CI run on Kafka 4.1.1 once waited 25 s).
      const state = (): string => JSON.stringify({ assignments: second.assignments, rebalancing: second.rebalancing, taken: second.taken.map((d) => [d.tp.partition, d.records.map((r) => r.offset), d.at]), refused: second.refused.length, crashes: second.crashes.map(String) });
      await ctx.eventually('the second member\'s records', () => second.records({ topic, partition: 0 }).length >= 1 && second.records({ topic, partition: 1 }).length >= 4)
        .catch((error: unknown) => {
          throw new Error(`${String(error)}; the second member: ${state()}`, { cause: error });
        });
      expect(second.offsets({ topic, partition: 0 })).toEqual([3]);
      expect(second.offsets({ topic, partition: 1 })).toEqual([0, 1, 2, 3]);
      expect(sorted(second.assignment)).toEqual(partitionsOf(topic, 2));
    }, timeout);
  });
}

function describeRecord(r: InputRecord): { key: string | null; value: string | null; headers: Readonly<Record<string, string>>; timestamp: number } {
  return { key: text(r.key), value: text(r.value), headers: r.headers, timestamp: r.timestamp };
}
