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

describe('standby tasks', () => {
  it('follow the active task\'s committed changelog, with their lag, and hand their stores over', async () => {
    const topology = countTopology();
    const broker = brokerWithTopics(['in', 'out'], 2);
    const active = await startHarness({ topology, partitions: 2, broker, eosV2: true });
    active.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await active.manager.control.idle();
    for (const key of ['x', 'x', 'y']) send(broker, 'in', 0, key, 'v');
    await active.pump();
    await active.commitAll();

    let now = 1_000;
    const engine = createInMemoryStoreEngine({ database: createInMemoryDatabase(), cacheMaxBytes: 0 });
    const ports = fakePorts(broker, 'app');
    const control = new ControlQueue(8, () => undefined, () => now);
    const plans = planSubTopologies(topology, 'app');
    const sub = plans.find((p) => p.changelogTopics.size > 0)!.id;
    const activeHere = new Set<string>();
    const registry = new StoreRegistry();
    const standbys = new StandbyTasks({
      registry,
      plans, engine, admin: ports.admin, reader: ports.changelogReader, control, logger: silentLogger,
      clock: () => now, pollMs: 60_000, wanted: () => [{ subTopology: sub, partition: 0 }, { subTopology: sub, partition: 1 }],
      isActive: (id) => activeHere.has(id),
    });
    const id = `${sub}_0`;
    activeHere.add(`${sub}_1`); // runs here as active: no standby of it
    const round = async (): Promise<void> => {
      await standbys.poll();
      await control.idle();
    };
    await round(); // opens
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
    standbys.stop();
    await control.idle();
    await active.manager.closeAll();
    await engine.close();
  });
});
