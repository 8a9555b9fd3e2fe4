/**
 * Rebalances between two members of one group: the partitions are split without overlap and
 * come back when a member stops; an eager consumer announces the rebalance with onRebalancing,
 * a cooperative one names what moves with onRevoked before it moves. Part of the ports
 * contract (kafka-ports-contract.ts).
 */
import { describe, expect, it } from 'vitest';
import type { TopicPartition } from '../../src/processing/ports.js';
import { partitionsOf, range, same, sorted, type ContractContext, type Member } from './kafka-ports-context.js';
import type { PortsConfig } from './kafka-ports-driver.js';

const PARTITIONS = 4;

function split(a: Member, b: Member, all: readonly TopicPartition[]): boolean {
  const union = sorted([...a.assignment, ...b.assignment]);
  return a.assignment.length > 0 && b.assignment.length > 0 && JSON.stringify(union) === JSON.stringify(sorted(all));
}

export function describeRebalanceContract(ctx: ContractContext): void {
  const timeout = ctx.driver.testTimeoutMs;
  const { cooperative, staticMembership } = ctx.driver.capabilities;

  describe('rebalances', () => {
    it('a second member splits the partitions with the first, without overlap; records go to their owner only; a member that stops gives its partitions back', async () => {
      const [topic] = await ctx.topics(1, PARTITIONS) as [string];
      const all = partitionsOf(topic, PARTITIONS);
      const config = ctx.config({ topics: [topic] });
      const first = await ctx.member(ctx.ports(config));
      await ctx.eventually('the first member\'s assignment', () => first.assignment.length === PARTITIONS);
      const second = await ctx.member(ctx.ports(config));
      await ctx.eventually('the partitions split between the members', () => split(first, second, all));
      expect(first.assignment.filter((tp) => second.assignment.some((o) => same(o, tp)))).toEqual([]);

      await ctx.driver.produce(topic, all.map((tp) => ({ partition: tp.partition, key: `k${tp.partition}`, value: `v${tp.partition}` })));
      const owner = (tp: TopicPartition): Member => (first.assignment.some((o) => same(o, tp)) ? first : second);
      await ctx.eventually('each record at its owner', () => all.every((tp) => owner(tp).offsets(tp).includes(0)));
      for (const tp of all) {
        const other = owner(tp) === first ? second : first;
        expect(other.records(tp), `partition ${tp.partition} at its non-owner`).toEqual([]);
      }

      await second.ports.consumer.stop();
      await ctx.eventually('every partition back at the first member', () => first.assignment.length === PARTITIONS);
      expect(first.assignment).toEqual(all);
    }, timeout);

    it.skipIf(cooperative)('eager: members already in the group hear onRebalancing before their new assignment', async () => {
      const [topic] = await ctx.topics(1, PARTITIONS) as [string];
      const config = ctx.config({ topics: [topic] });
      const first = await ctx.member(ctx.ports(config));
      await ctx.eventually('the first member\'s assignment', () => first.assignment.length === PARTITIONS);
      expect(first.rebalancing).toEqual([]);
      const second = await ctx.member(ctx.ports(config));
      await ctx.eventually('the partitions split between the members', () => split(first, second, partitionsOf(topic, PARTITIONS)));
      const announced = first.rebalancing[0];
      expect(announced, 'onRebalancing on the first member').toBeDefined();
      const reassigned = first.assignments.filter((a) => a.at > announced!);
      expect(reassigned.length).toBeGreaterThan(0);
      expect(reassigned[reassigned.length - 1]?.partitions).toEqual(first.assignment);
    }, timeout);

    it.skipIf(!cooperative)('cooperative: onRevoked names the partitions that move before they move; the new owner starts where the old one committed in onRevoked; retained partitions keep their position', async () => {
      const [topic] = await ctx.topics(1, PARTITIONS) as [string];
      const all = partitionsOf(topic, PARTITIONS);
      await ctx.driver.produce(topic, all.flatMap((tp) => range(0, 4).map((i) => ({ partition: tp.partition, key: `k${i}`, value: `v${tp.partition}-${i}` }))));
      const config = ctx.config({ topics: [topic] });
      // The second member, once it exists (the first one's onRevoked looks at it).
      const joining: { member?: Member } = {};
      const first = await ctx.member(ctx.ports(config), {
        onRevoked: async (partitions, lost) => {
          if (lost) return;
          // What a task does before it lets go: commit (deliberately short of what was read, so
          // the new owner's start shows where the offsets came from).
          await first.ports.consumer.commitOffsets(partitions.map((tp) => ({ topic: tp.topic, partition: tp.partition, offset: 2 })));
          // Hold the partitions while the second member's first assignment of this rebalance
          // arrives: it must not include them (bounded, in case none comes before they move).
          const deadline = Date.now() + 3000;
          while (Date.now() < deadline && (joining.member?.assignments.length ?? 0) === 0) await new Promise((r) => setTimeout(r, 20));
        },
      });
      await ctx.eventually('the first member\'s 16 records', () => first.taken.reduce((n, d) => n + d.records.length, 0) >= 16);
      const second = await ctx.member(ctx.ports(config));
      joining.member = second;
      await ctx.eventually('the partitions split between the members', () => split(first, second, all));

      const moved = second.assignment;
      const kept = first.assignment;
      expect(first.revocations.map((r) => ({ partitions: r.partitions, lost: r.lost }))).toEqual([{ partitions: moved, lost: false }]);
      const settledAt = first.revocations[0]?.settledAt ?? Infinity;
      for (const a of second.assignments.filter((x) => x.partitions.some((tp) => moved.some((m) => same(m, tp))))) {
        expect(a.at, 'a moved partition assigned to the new owner before onRevoked settled').toBeGreaterThan(settledAt);
      }
      await ctx.eventually('the moved partitions\' records at the new owner', () => moved.every((tp) => second.offsets(tp).length >= 2));
      for (const tp of moved) expect(second.offsets(tp), `partition ${tp.partition}`).toEqual([2, 3]);

      await ctx.driver.produce(topic, all.map((tp) => ({ partition: tp.partition, key: 'k4', value: `v${tp.partition}-4` })));
      await ctx.eventually('the new records at their owners', () => kept.every((tp) => first.offsets(tp).includes(4)) && moved.every((tp) => second.offsets(tp).includes(4)));
      for (const tp of kept) expect(first.offsets(tp), `retained partition ${tp.partition}`).toEqual([0, 1, 2, 3, 4]);
    }, timeout);

    // A session far longer than the driver's wait: whatever moves within the wait did not wait for it.
    const LONG_SESSION_MS = 60_000;

    /** A dynamic member with every partition, then a static member (long session) that splits them with it. */
    async function dynamicThenStatic(): Promise<{ all: TopicPartition[]; first: Member; second: Member; staticConfig: PortsConfig }> {
      const [topic] = await ctx.topics(1, PARTITIONS) as [string];
      const all = partitionsOf(topic, PARTITIONS);
      const config = ctx.config({ topics: [topic] });
      const first = await ctx.member(ctx.ports(config));
      await ctx.eventually('the first member\'s assignment', () => first.assignment.length === PARTITIONS);
      const staticConfig = { ...config, groupInstanceId: ctx.name('instance'), sessionTimeoutMs: LONG_SESSION_MS };
      const second = await ctx.member(ctx.ports(staticConfig));
      await ctx.eventually('the partitions split between the members', () => split(first, second, all));
      // The tests after this count what either member hears next: the split's last callback is not it.
      await ctx.quiet('the split', [first, second], 1000);
      return { all, first, second, staticConfig };
    }

    it.skipIf(!staticMembership)('static: a member that stops with leaveGroup gives its partitions back at once, not when its session times out', async () => {
      const { all, first, second: leaving } = await dynamicThenStatic();

      await leaving.ports.consumer.stop({ leaveGroup: true });
      await ctx.eventually('every partition back at the first member', () => first.assignment.length === PARTITIONS);
      expect(first.assignment).toEqual(all);
    }, timeout);

    it.skipIf(!staticMembership)('static: a member that stops without leaveGroup keeps its place; its restart gets its partitions back and no other member had them meanwhile', async () => {
      const { all, first, second: before, staticConfig } = await dynamicThenStatic();
      const its = before.assignment;
      const firstHad = first.assignments.length;

      await before.ports.consumer.stop();
      const restarted = await ctx.member(ctx.ports(staticConfig));
      await ctx.eventually('the restarted member\'s partitions', () => restarted.assignment.length > 0);
      expect(restarted.assignment).toEqual(its);
      // The first member heard of no new assignment (a rebalance would have given it the static
      // member's partitions, or announced a new split).
      expect(first.assignments.slice(firstHad).map((a) => a.partitions), 'assignments of the first member after the split').toEqual([]);
      expect(first.assignment).toEqual(sorted(all.filter((tp) => !its.some((o) => same(o, tp)))));
    }, timeout);
  });
}
