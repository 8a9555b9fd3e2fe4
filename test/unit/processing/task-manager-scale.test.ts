import { describe, expect, it } from 'vitest';
import { send } from './manager-harness.js';
import { brokerWithTopics, countTopology, harnessesClosedAfterEach } from './processing-fixture.js';

const PARTITIONS = 1000;

const harnesses = harnessesClosedAfterEach();

describe('1000 tasks in one process', () => {
  it('opens, processes, commits and revokes 1000 tasks in seconds, through one coalescing control queue', async () => {
    const broker = brokerWithTopics(['in', 'out'], PARTITIONS);
    const h = await harnesses.start({ topology: countTopology(), partitions: PARTITIONS, broker });
    const all = Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: 'in', partition }));

    let started = Date.now();
    h.ports.consumer.assign(all);
    await h.manager.control.idle();
    const assignMs = Date.now() - started;
    expect(h.manager.localTasks().filter((t) => t.state === 'RUNNING')).toHaveLength(PARTITIONS);

    for (let p = 0; p < PARTITIONS; p += 1) send(broker, 'in', p, `k${p}`, 'v');
    await h.pump();
    started = Date.now();
    // Every task asks twice: the duplicates coalesce.
    for (const task of h.manager.localTasks()) h.manager.requestCommit(task);
    for (const task of h.manager.localTasks()) h.manager.requestCommit(task);
    await h.manager.control.idle();
    const commitMs = Date.now() - started;
    expect(h.manager.control.stats.coalesced).toBeGreaterThan(0);
    expect([...broker.groupOffsets.values()].filter((o) => o === 1)).toHaveLength(PARTITIONS);

    started = Date.now();
    h.ports.consumer.assign([]);
    await h.manager.control.idle();
    const revokeMs = Date.now() - started;
    expect(h.manager.localTasks()).toHaveLength(0);
    expect(assignMs + commitMs + revokeMs).toBeLessThan(10_000);
  });
});
