/**
 * Warm joins (src/processing/join-warmup.ts): whether an instance warms up before it joins, the
 * warm-up loop's end (caught up, or the deadline), and — over the fake broker, with a second task
 * manager — that the warm-up brings every task's store to its changelog's end before the join,
 * that the task the join then assigns replays only the tail, and that the warm standbys the
 * placement does not want go once the assignment has come.
 */
import { describe, expect, it } from 'vitest';
import { decideWarmup, JoinWarmth, tasksWithState, warmUp, type WarmupProgress } from '../../../src/processing/join-warmup.js';
import { parseProcessingOptions } from '../../../src/processing/processing-options.js';
import type { RestoreProgress } from '../../../src/processing/restore-task-stores.js';
import { planSubTopologies } from '../../../src/processing/sub-topology-plan.js';
import { TaskManager } from '../../../src/processing/task-manager.js';
import { createInMemoryDatabase, createInMemoryStoreEngine } from '../../../src/store/index.js';
import { serdes } from '../../../src/store/serdes.js';
import type { TaskStores } from '../../../src/store/types.js';
import { fakePorts } from './fake-kafka.js';
import { send, silentLogger, startHarness } from './manager-harness.js';
import { brokerWithTopics, countTopology } from './processing-fixture.js';
import { StreamsBuilder } from '../../../src/processing/stream-builder.js';
import { ControlQueue } from '../../../src/processing/control-queue.js';
import { StandbyTasks } from '../../../src/processing/standby-tasks.js';
import type { KafkaPorts, ProducerFactoryPort, TaskProducer } from '../../../src/processing/ports.js';

async function countsOf(stores: TaskStores): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const view = stores.store('counts').view({ readCommitted: true });
  for await (const { key, value } of view.range()) counts.set(serdes.string.deserialize(key), serdes.int32.deserialize(value));
  await view.close();
  return counts;
}

async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('decideWarmup', () => {
  const member = (memberId: string, clientId = 'app', transactionalId?: string) => ({ memberId, clientId, ...(transactionalId === undefined ? {} : { transactionalId }) });

  it('warms up to join a group whose members are other instances', () => {
    expect(decideWarmup({ state: 'Stable', members: [member('m-1', 'app', 'app-a'), member('m-2')] }, { transactionalId: 'app-b', previousMemberId: 'm-0' }, true))
      .toEqual({ warm: true, members: 2 });
  });

  it('joins at once without state, without a description, or into an empty group', () => {
    const group = { state: 'Stable', members: [member('m-1')] };
    expect(decideWarmup(group, {}, false)).toEqual({ warm: false, reason: 'no sub-topology has state' });
    expect(decideWarmup(null, {}, true)).toEqual({ warm: false, reason: 'the group cannot be described' });
    expect(decideWarmup({ state: 'Empty', members: [] }, {}, true)).toEqual({ warm: false, reason: 'the group has no members (Empty)' });
  });

  it('joins at once when a member is this instance restarting (its static place, or a crashed kafkajs member)', () => {
    const restarting = { warm: false, reason: 'this instance is still a member (restarting)' };
    expect(decideWarmup({ state: 'Stable', members: [member('m-1', 'app iqgate-txn=app-a iqgate-url=http://a', 'app-a')] }, { transactionalId: 'app-a' }, true)).toEqual(restarting);
    expect(decideWarmup({ state: 'Stable', members: [member('m-1'), member('m-7')] }, { previousMemberId: 'm-7' }, true)).toEqual(restarting);
  });
});

describe('tasksWithState', () => {
  it('lists every partition of each sub-topology with stores, none of those without', () => {
    const b = new StreamsBuilder();
    b.stream('in', { key: serdes.string, value: serdes.string }).groupByKey().count({ store: 'counts', value: serdes.int32 }).toStream().to('out');
    b.stream('plain', { key: serdes.string, value: serdes.string }).to('copy');
    const plans = planSubTopologies(b.build(), 'app');
    const withStore = plans.find((p) => p.changelogTopics.size > 0)!.id;
    expect(plans).toHaveLength(2);
    expect(tasksWithState(plans, new Map([['counts', 3]]))).toEqual([0, 1, 2].map((partition) => ({ subTopology: withStore, partition })));
  });
});

describe('warmUp', () => {
  const loop = (rounds: WarmupProgress[], clock: { now: number }, cancelled = () => false) => ({
    round: async () => {
      clock.now += 100;
      return rounds.shift() ?? { wanted: 2, ready: 1, behind: 0 };
    },
    timeoutMs: 1_000, acceptableLag: 10, clock: () => clock.now, cancelled, pauseMs: 0,
  });

  it('ends once every task is open, caught up once, and within the lag', async () => {
    const clock = { now: 0 };
    const outcome = await warmUp(loop([{ wanted: 2, ready: 0, behind: 0 }, { wanted: 2, ready: 2, behind: 11 }, { wanted: 2, ready: 2, behind: 10 }], clock));
    expect(outcome).toEqual({ wanted: 2, ready: 2, behind: 10, ms: 300, timedOut: false });
  });

  it('gives up at its deadline, or when cancelled, saying how far it got', async () => {
    const clock = { now: 0 };
    expect(await warmUp(loop([], clock))).toEqual({ wanted: 2, ready: 1, behind: 0, ms: 1_000, timedOut: true });
    let asked = 0;
    expect(await warmUp(loop([], { now: 0 }, () => ++asked >= 2))).toMatchObject({ ms: 200, timedOut: true });
  });
});

describe('JoinWarmth', () => {
  const tasks = [{ subTopology: 0, partition: 0 }, { subTopology: 0, partition: 1 }];

  it('keeps every task warm until an assignment brings this instance tasks', () => {
    const warmth = new JoinWarmth(() => 0);
    expect(warmth.wanted()).toBeNull();
    warmth.begin(tasks);
    expect(warmth.wanted()).toEqual(tasks);
    warmth.assigned(1);
    expect(warmth.wanted()).toBeNull();
  });

  it('after an empty assignment, keeps them warm 30 s more (a second round may bring tasks), then lets them go', () => {
    let now = 1_000;
    const warmth = new JoinWarmth(() => now);
    warmth.begin(tasks);
    warmth.assigned(0);
    now += 29_999;
    warmth.assigned(0); // a later empty round does not push the end out
    expect(warmth.wanted()).toEqual(tasks);
    now += 1;
    expect(warmth.wanted()).toBeNull();
  });
});

describe('a task manager that warms up before it joins', () => {
  it('brings every task to its changelog\'s end, then opens the assigned one on its warm store and drops the rest', async () => {
    const topology = countTopology();
    const broker = brokerWithTopics(['in', 'out'], 2);
    // A runs both tasks and commits a changelog on each partition.
    const a = await startHarness({ topology, partitions: 2, broker, eosV2: true });
    a.ports.consumer.assign([{ topic: 'in', partition: 0 }, { topic: 'in', partition: 1 }]);
    await a.manager.control.idle();
    for (const key of ['x', 'x', 'y', 'z']) send(broker, 'in', 0, key, 'v');
    for (const key of ['p', 'q']) send(broker, 'in', 1, key, 'v');
    await a.pump();
    await a.commitAll();

    const restores: RestoreProgress[] = [];
    const ports = fakePorts(broker, 'app', { send: false, commit: false }, true, { transactionalId: 'app-b' });
    const b = new TaskManager({
      topology,
      options: parseProcessingOptions({ applicationId: 'app', commitIntervalMs: 3_600_000, standbyPollMs: 10 }),
      ports,
      engine: createInMemoryStoreEngine({ database: createInMemoryDatabase(), cacheMaxBytes: 0 }),
      logger: silentLogger,
      events: { onRestoreProgress: (p) => restores.push(p), onFatal: () => undefined },
    });
    b.start();
    const outcome = await b.warmUp(new Map([['counts', 2]]), () => false);
    expect(outcome).toMatchObject({ wanted: 2, ready: 2, behind: 0, timedOut: false });
    const warm = new Map(b.standbyTasks().map((t) => [t.partition, t]));
    expect([...warm.keys()].sort()).toEqual([0, 1]);
    expect(await countsOf(warm.get(0)!.stores!)).toEqual(new Map([['x', 2], ['y', 1], ['z', 1]]));
    expect(await countsOf(warm.get(1)!.stores!)).toEqual(new Map([['p', 1], ['q', 1]]));
    const warmedTo = warm.get(0)!.stores!.changelogOffsets().counts!;

    // A commits a little more on partition 0, then gives it up; B joins and is assigned it.
    send(broker, 'in', 0, 'x', 'v');
    await a.pump();
    await a.commitAll();
    await a.manager.closeAll();
    restores.length = 0;
    await ports.consumer.run(b);
    ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await until(() => b.localTasks()[0]?.state === 'RUNNING');
    // The open replayed at most what came after the warm-up (the warm standby, polled until the
    // assignment, may have caught that up too) — not the changelog's five records from its start.
    const replayed = restores.filter((p) => p.done && p.taskId.endsWith('_0')).reduce((sum, p) => sum + p.restored, 0);
    expect(replayed).toBeLessThanOrEqual(1);
    expect(b.localTasks()[0]!.stores!.changelogOffsets().counts).toBeGreaterThan(warmedTo);
    expect(await countsOf(b.localTasks()[0]!.stores!)).toEqual(new Map([['x', 3], ['y', 1], ['z', 1]]));
    // No standby replicas wanted (numStandbyReplicas 0): partition 1's warm standby goes at the next poll.
    await until(() => b.standbyTasks().length === 0);
    await b.closeAll();
  });

  it('exactly-once v1 (a producer per task): connects every warmed task\'s producer before the join; the assigned task opens with its own, the others close', async () => {
    const topology = countTopology();
    const broker = brokerWithTopics(['in', 'out'], 2);
    broker.createTopic('app-counts-changelog', 2);
    const ports = fakePorts(broker, 'app');
    const prepared = new Map<string, TaskProducer>();
    const seen = { prepared: [] as string[], handedOver: [] as string[], released: [] as string[] };
    const producers: ProducerFactoryPort = {
      create: (id) => {
        const ready = id === null ? undefined : prepared.get(id);
        if (ready === undefined || id === null) return ports.producers.create(id);
        prepared.delete(id);
        seen.handedOver.push(id);
        return ready;
      },
      prepare: (ids) => {
        for (const id of ids) {
          seen.prepared.push(id);
          prepared.set(id, ports.producers.create(id));
        }
      },
      releasePrepared: (keep) => {
        for (const id of [...prepared.keys()]) {
          if (keep(id)) continue;
          prepared.delete(id);
          seen.released.push(id);
        }
      },
      close: () => ports.producers.close(),
    };
    const withPrepare: KafkaPorts = { ...ports, producers };
    const b = new TaskManager({
      topology,
      options: parseProcessingOptions({ applicationId: 'app', commitIntervalMs: 3_600_000, standbyPollMs: 10 }),
      ports: withPrepare,
      engine: createInMemoryStoreEngine({ database: createInMemoryDatabase(), cacheMaxBytes: 0 }),
      logger: silentLogger,
      events: { onFatal: () => undefined },
    });
    b.start();
    await b.warmUp(new Map([['counts', 2]]), () => false);
    expect(seen.prepared.sort()).toEqual(['app-in-0', 'app-in-1']);
    expect(broker.calls.filter((c) => c.startsWith('init:'))).toEqual([]); // connected only: no InitProducerId fences the owner

    await ports.consumer.run(b);
    ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await until(() => b.localTasks()[0]?.state === 'RUNNING');
    expect(seen.handedOver).toEqual(['app-in-0']);
    expect(seen.released).toEqual(['app-in-1']);
    expect(broker.calls.filter((c) => c.startsWith('init:'))).toEqual(['init:app-in-0']);
    await b.closeAll();
  });

  it('standby polls wait while an active task opens, and a paused standby skips its queued catch-up but stays open', async () => {
    const topology = countTopology();
    const broker = brokerWithTopics(['in', 'out'], 1);
    const a = await startHarness({ topology, partitions: 1, broker, eosV2: true });
    a.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await a.manager.control.idle();
    send(broker, 'in', 0, 'p', 'v');
    await a.pump();
    await a.commitAll();
    const ports = fakePorts(broker, 'app');
    const control = new ControlQueue(8, () => undefined);
    const plans = planSubTopologies(topology, 'app');
    const sub = plans.find((p) => p.changelogTopics.size > 0)!.id;
    let opening = false;
    const standbys = new StandbyTasks({
      plans, engine: createInMemoryStoreEngine({ database: createInMemoryDatabase(), cacheMaxBytes: 0 }),
      admin: ports.admin, reader: ports.changelogReader, control, logger: silentLogger,
      clock: Date.now, pollMs: 60_000, wanted: () => [{ subTopology: sub, partition: 0 }],
      isActive: () => false, activeOpening: () => opening,
    });
    expect(await standbys.catchUp()).toEqual({ wanted: 1, ready: 0, behind: 0 }); // opened, not caught up yet
    expect(await standbys.catchUp()).toEqual({ wanted: 1, ready: 1, behind: 0 });
    const standby = standbys.get(`${sub}_0`)!;
    expect(await countsOf(standby.stores!)).toEqual(new Map([['p', 1]]));

    send(broker, 'in', 0, 'q', 'v');
    await a.pump();
    await a.commitAll();
    opening = true; // an active task restores: the round does nothing
    await standbys.catchUp();
    expect(await countsOf(standby.stores!)).toEqual(new Map([['p', 1]]));
    opening = false;
    await standbys.catchUp();
    expect(await countsOf(standby.stores!)).toEqual(new Map([['p', 1], ['q', 1]]));

    // A catch-up queued behind another operation of the task, then a pause (a stop's last commits): it is skipped.
    send(broker, 'in', 0, 'r', 'v');
    await a.pump();
    await a.commitAll();
    let unblock: () => void = () => undefined;
    control.enqueue({ key: 'blocker', group: `${sub}_0`, run: () => new Promise<void>((resolve) => { unblock = resolve; }) });
    await standbys.poll();
    standbys.pause();
    unblock();
    await control.idle();
    expect(await countsOf(standby.stores!)).toEqual(new Map([['p', 1], ['q', 1]]));
    expect(standbys.get(`${sub}_0`)?.stores).not.toBeNull();
    standbys.stop();
    await control.idle();
    expect(standbys.all()).toEqual([]);
  });
});
