/**
 * An eager rebalance (kafkajs) as the task manager takes it: at onRebalancing every task stops
 * processing and commits what it has processed, and the promise it returns — which the kafkajs
 * adapter's rejoin waits for — settles only once those commits are done; the next assignment
 * lets the retained tasks process again, from their buffers.
 */
import { describe, expect, it } from 'vitest';
import { send, startHarness } from './manager-harness.js';
import { brokerWithTopics, countTopology } from './processing-fixture.js';

const settle = async (): Promise<void> => {
  for (let i = 0; i < 50; i += 1) await new Promise((r) => setImmediate(r));
};

describe('an eager rebalance', () => {
  it('holds processing and commits every task before onRebalancing settles; the new assignment resumes the retained task from its buffer', async () => {
    const broker = brokerWithTopics(['in', 'out'], 2);
    const h = await startHarness({ topology: countTopology(), partitions: 2, broker });
    h.ports.consumer.assign([{ topic: 'in', partition: 0 }, { topic: 'in', partition: 1 }]);
    await h.manager.control.idle();
    for (const key of ['x', 'x', 'y']) {
      send(broker, 'in', 0, key, 'v');
      send(broker, 'in', 1, key, 'v');
    }
    await h.pump();
    expect(h.commits).toEqual([]); // the commit interval is an hour: nothing committed yet

    const rebalanced = h.manager.onRebalancing();
    expect(rebalanced).toBeInstanceOf(Promise);
    // Fetched while the group rebalances: buffered, not processed.
    send(broker, 'in', 0, 'z', 'v');
    h.ports.consumer.deliver();
    await settle();
    await rebalanced;
    // Settled: both tasks' work is committed in Kafka and in their stores, the late record is not.
    expect(h.commits.sort()).toEqual([3, 3]);
    expect(broker.groupOffsets.get('app:in:0')).toBe(3);
    expect(broker.groupOffsets.get('app:in:1')).toBe(3);
    expect(await h.counts('counts', 0, false)).toEqual(new Map([['x', 2], ['y', 1]]));
    expect(h.manager.localTasks().find((t) => t.partition === 0)?.buffered()).toBe(1);

    // The new assignment keeps partition 0: its task processes the buffered record.
    h.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await h.manager.control.idle();
    await settle();
    expect(await h.counts('counts', 0, false)).toEqual(new Map([['x', 2], ['y', 1], ['z', 1]]));
    expect(h.fatal).toEqual([]);
  });
});
