/**
 * Opening a task on fake ports: the restore waits for a transaction still open on the task's
 * changelog partition (its previous owner's last one) and then includes what it committed.
 */
import { describe, expect, it } from 'vitest';
import { changelogTopic } from '../../../src/processing/topic-names.js';
import { serdes } from '../../../src/store/serdes.js';
import { brokerWithTopics, countTopology, harnessesClosedAfterEach, waitFor } from './processing-fixture.js';

const harnesses = harnessesClosedAfterEach();

describe.each([['exactly-once v2', true], ['exactly-once v1', false]])('opening a task (%s)', (_name, eosV2) => {
  it('restores to the changelog\'s end only once the transaction open on it has ended, and then includes its records', async () => {
    const h = await harnesses.start({ topology: countTopology(), partitions: 2, broker: brokerWithTopics(['in', 'out'], 2), eosV2 });
    const changelog = changelogTopic('app', 'counts');
    h.broker.createTopic(changelog, 2);
    const previous = h.ports.producers.create('previous-owner');
    await previous.init();
    await previous.send([{ topic: changelog, partition: 0, key: Buffer.from('a'), value: Buffer.from(serdes.int32.serialize(5)) }]);

    h.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const task = h.manager.localTasks().find((t) => t.partition === 0)!;
    expect(task.state, 'the stable end stands before the open transaction: not at the end yet').toBe('RESTORING');

    await previous.commit();
    await waitFor(() => task.state === 'RUNNING');
    expect(await h.counts('counts', 0)).toEqual(new Map([['a', 5]]));
  });
});
