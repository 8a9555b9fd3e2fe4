import { describe, expect, it } from 'vitest';
import type { ProcessingPacer } from '../../../src/processing/task-manager.js';
import { send } from './manager-harness.js';
import { brokerWithTopics, countTopology, harnessesClosedAfterEach, waitFor } from './processing-fixture.js';

const harnesses = harnessesClosedAfterEach();

/** A pacer the test switches between resting and running. */
class SwitchPacer implements ProcessingPacer {
  resting = false;
  asked = 0;
  sharing(): boolean {
    return this.resting;
  }
  budgetMs(): number {
    this.asked += 1;
    return this.resting ? 0 : 5;
  }
  restMs(): number {
    return 1;
  }
}

describe('TaskManager: processing paced by the runtime (queries waiting)', () => {
  it('processes nothing and asks for no records while the pacer rests, then goes on where it stopped', async () => {
    const pacer = new SwitchPacer();
    const broker = brokerWithTopics(['in', 'out'], 1);
    const h = await harnesses.start({ topology: countTopology(), partitions: 1, broker, pacer });
    h.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await h.manager.control.idle();
    send(broker, 'in', 0, 'a', 'v');
    await h.pump();
    expect((await h.counts('counts', 0, false)).get('a')).toBe(1);

    pacer.resting = true;
    expect(h.manager.readyForMore()).toBe(false);
    expect(h.manager.maxRecordsPerFetch()).toBe(250);
    for (let i = 0; i < 5; i += 1) send(broker, 'in', 0, 'a', 'v');
    h.ports.consumer.deliver();
    const askedBefore = pacer.asked;
    await waitFor(() => pacer.asked > askedBefore + 3); // the loop keeps asking, and keeps resting
    expect((await h.counts('counts', 0, false)).get('a')).toBe(1);
    expect(h.manager.localTasks()[0]!.buffered()).toBe(5);

    pacer.resting = false;
    expect(h.manager.readyForMore()).toBe(true);
    expect(h.manager.maxRecordsPerFetch()).toBe(Infinity);
    await waitFor(() => h.manager.localTasks()[0]!.buffered() === 0);
    expect((await h.counts('counts', 0, false)).get('a')).toBe(6);
  });
});
