/**
 * Standby tasks over the fake broker: a standby kept in its own store engine replays the active
 * task's changelog (read_committed) into the same store partition, reports how far behind it is,
 * keeps off tasks that run here as active, and releases its stores so that an active open of the
 * same task finds them with the changelog offsets it got to.
 */
import { describe, expect, it } from 'vitest';
import { ControlQueue } from '../../../src/processing/control-queue.js';
import { StandbyTasks } from '../../../src/processing/standby-tasks.js';
import { StoreRegistry } from '../../../src/processing/store-registry.js';
import { planSubTopologies } from '../../../src/processing/sub-topology-plan.js';
import { createInMemoryDatabase, createInMemoryStoreEngine } from '../../../src/store/index.js';
import { serdes } from '../../../src/store/serdes.js';
import type { TaskStores } from '../../../src/store/types.js';
import { fakePorts } from './fake-kafka.js';
import { send, silentLogger, startHarness } from './manager-harness.js';
import { brokerWithTopics, countTopology } from './processing-fixture.js';

async function countsOf(stores: TaskStores): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const view = stores.store('counts').view({ readCommitted: true });
  for await (const { key, value } of view.range()) counts.set(serdes.string.deserialize(key), serdes.int32.deserialize(value));
  await view.close();
  return counts;
}

/** An active task of the count topology on partition 0 with three committed records, and standbys of both partitions in an engine of their own. */
async function setup(clock: () => number = () => 0) {
  const topology = countTopology();
  const broker = brokerWithTopics(['in', 'out'], 2);
  const active = await startHarness({ topology, partitions: 2, broker, eosV2: true });
  active.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
  await active.manager.control.idle();
  for (const key of ['x', 'x', 'y']) send(broker, 'in', 0, key, 'v');
  await active.pump();
  await active.commitAll();
  const engine = createInMemoryStoreEngine({ database: createInMemoryDatabase(), cacheMaxBytes: 0 });
  const ports = fakePorts(broker, 'app');
  const control = new ControlQueue(8, () => undefined, clock);
  const plans = planSubTopologies(topology, 'app');
  const sub = plans.find((p) => p.changelogTopics.size > 0)!.id;
  const activeHere = new Set<string>();
  const wanted = new Set([0, 1]);
  const registry = new StoreRegistry();
  const opened: string[] = [];
  const counting = { ...engine, openTask: (id: string, stores: Parameters<typeof engine.openTask>[1]) => (opened.push(id), engine.openTask(id, stores)) };
  const standbys = new StandbyTasks({
    registry,
    plans, engine: counting, admin: ports.admin, reader: ports.changelogReader, control, logger: silentLogger,
    clock, pollMs: 60_000, wanted: () => [...wanted].map((partition) => ({ subTopology: sub, partition })),
    isActive: (id) => activeHere.has(id),
  });
  const round = async (): Promise<void> => {
    await standbys.poll();
    await control.idle();
  };
  const close = async (): Promise<void> => {
    standbys.stop();
    await control.idle();
    await active.manager.closeAll();
    await engine.close();
  };
  /** Partition 0's standby, open, assigned here as active: released with handOver. */
  const handOver = async (): Promise<{ id: string; stores: TaskStores }> => {
    const id = `${sub}_0`;
    await round();
    const stores = standbys.get(id)!.stores!;
    activeHere.add(id);
    standbys.release(id, true);
    await control.idle();
    return { id, stores };
  };
  return { sub, standbys, registry, control, activeHere, wanted, opened, round, close, active, broker, engine, handOver };
}

describe('standby tasks', () => {
  it('hand their open stores to the active open of their task, staying registered until it takes them', async () => {
    const { sub, standbys, registry, control, activeHere, wanted, opened, round, close } = await setup();
    const id = `${sub}_0`;
    await round();
    await round();
    const stores = standbys.get(id)!.stores!;
    expect(await countsOf(stores)).toEqual(new Map([['x', 2], ['y', 1]]));

    // Assigned here: released with handOver. Queries still find the partition (as the standby's)
    // until the active open takes the stores — the same ones, once, opened no second time.
    activeHere.add(id);
    standbys.release(id, true);
    await control.idle();
    expect(standbys.get(id)).toBeUndefined();
    expect(registry.get('counts', 0)?.active).toBe(false);
    await round(); // a poll meanwhile leaves them to the active open
    expect(standbys.takeHandoff(id)).toBe(stores);
    expect(standbys.takeHandoff(id)).toBeUndefined();
    expect(await countsOf(stores)).toEqual(new Map([['x', 2], ['y', 1]]));
    expect(opened.filter((t) => t === id)).toHaveLength(1);
    await stores.close();

    // Handed over but the task went before its open took them: the next poll closes them, and
    // they leave the registry; the one kept as a standby again carries on with its stores.
    const other = `${sub}_1`;
    const otherStores = standbys.get(other)!.stores!;
    activeHere.add(other);
    standbys.release(other, true);
    await control.idle();
    activeHere.delete(other);
    wanted.delete(1);
    await round();
    expect(registry.get('counts', 1)).toBeUndefined();
    expect(standbys.takeHandoff(other)).toBeUndefined();
    await expect(countsOf(otherStores)).rejects.toThrow();

    activeHere.delete(id);
    wanted.add(1);
    await round();
    const reopened = standbys.get(other)!;
    expect(reopened.stores).not.toBeNull();
    await close();
  });

  it('close handed-over stores that an active open attempt did not take (its producer init failed)', async () => {
    const { standbys, registry, close, handOver } = await setup();
    const { id, stores } = await handOver();
    expect(registry.get('counts', 0)?.active).toBe(false);
    await standbys.dropHandoff(id);
    expect(registry.get('counts', 0)).toBeUndefined();
    expect(standbys.takeHandoff(id)).toBeUndefined();
    await expect(countsOf(stores)).rejects.toThrow();
    await close();
  });

  it('keep a handed-over standby\'s stores when the placement wants it back before the active open took them', async () => {
    const { standbys, registry, activeHere, opened, round, close, handOver } = await setup();
    const { id, stores } = await handOver();
    activeHere.delete(id); // revoked before its open ran
    await round();
    expect(standbys.get(id)!.stores).toBe(stores);
    expect(registry.get('counts', 0)?.store).toBe(stores.store('counts'));
    expect(opened.filter((t) => t === id)).toHaveLength(1);
    await close();
  });

  it('follow the active task\'s committed changelog, with their lag, and hand their stores over', async () => {
    let now = 1_000;
    const { sub, standbys, registry, control, activeHere, round, close, active, broker, engine } = await setup(() => now);
    const id = `${sub}_0`;
    activeHere.add(`${sub}_1`); // runs here as active: no standby of it
    await round(); // opens
    // Open, but no poll has read its changelogs' ends yet: how far behind it is is not known.
    expect(standbys.get(id)!.lag().offsets).toBe(Number.POSITIVE_INFINITY);
    expect(registry.get('counts', 0)!.lag()!.offsets).toBe(Number.POSITIVE_INFINITY);
    await round(); // catches up
    expect(standbys.all().map((t) => t.id)).toEqual([id]);
    const standby = standbys.get(id)!;
    expect(await countsOf(standby.stores!)).toEqual(await active.counts('counts', 0));
    expect(await countsOf(standby.stores!)).toEqual(new Map([['x', 2], ['y', 1]]));
    expect(standby.lag()).toEqual({ offsets: 0, timeMs: 0 });
    // Queries find it in the registry, as a standby with its lag.
    const registered = registry.get('counts', 0)!;
    expect([registered.taskId, registered.active, registered.state()]).toEqual([id, false, 'RUNNING']);
    expect(registered.lag()).toEqual({ offsets: 0, timeMs: 0 });
    expect(registry.get('counts', 1)).toBeUndefined();

    // Uncommitted work of the active is not read; committed work is, at the next poll.
    for (const key of ['x', 'z']) send(broker, 'in', 0, key, 'v');
    await active.pump();
    now += 250;
    await round();
    expect(await countsOf(standby.stores!)).toEqual(new Map([['x', 2], ['y', 1]]));
    expect(standby.lag().timeMs).toBe(0); // nothing committed to catch up with: still caught up
    await active.commitAll();
    now += 250;
    expect(standby.lag().timeMs).toBe(250); // as of the last poll: maybe behind since
    await round();
    expect(await countsOf(standby.stores!)).toEqual(new Map([['x', 3], ['y', 1], ['z', 1]]));
    expect(standby.lag()).toEqual({ offsets: 0, timeMs: 0 });

    // Released (say, assigned here as active): the stores close, and an open of the task finds
    // the changelog offsets the standby got to, so it would restore nothing more.
    const offsets = { ...standby.stores!.changelogOffsets() };
    expect(offsets.counts).toBeGreaterThan(0);
    activeHere.add(id);
    standbys.release(id);
    await control.idle();
    expect(standbys.get(id)).toBeUndefined();
    expect(registry.get('counts', 0)).toBeUndefined();
    const reopened = await engine.openTask(id, [{ name: 'counts', partition: 0 }]);
    expect(reopened.changelogOffsets()).toEqual(offsets);
    expect(await countsOf(reopened)).toEqual(new Map([['x', 3], ['y', 1], ['z', 1]]));
    // Active here now: the next poll does not open a standby of it.
    await round();
    expect(standbys.all()).toEqual([]);
    await reopened.close();
    await close();
  });
});
