import { afterEach, describe, expect, it } from 'vitest';
import { StreamsBuilder } from '../../../src/processing/stream-builder.js';
import { serdes } from '../../../src/store/serdes.js';
import { FakeBroker } from './fake-kafka.js';
import { send, startHarness, type Harness } from './manager-harness.js';

const PARTITIONS = 1000;

function countTopology() {
  const b = new StreamsBuilder();
  b.stream('in', { key: serdes.string, value: serdes.string }).groupByKey().count({ store: 'counts', value: serdes.int32 }).toStream().to('out');
  return b.build();
}

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    await h.manager.closeAll();
    await h.engine.close();
  }
});

describe('1000 tasks in one process', () => {
  it('opens, processes, commits and revokes 1000 tasks in seconds, through one coalescing control queue', async () => {
    const broker = new FakeBroker();
    broker.createTopic('in', PARTITIONS);
    broker.createTopic('out', PARTITIONS);
    const h = await startHarness({ topology: countTopology(), partitions: PARTITIONS, broker });
    harnesses.push(h);
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
