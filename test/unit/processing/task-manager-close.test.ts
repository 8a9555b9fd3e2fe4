import { afterEach, describe, expect, it, vi } from 'vitest';
import { send, startHarness } from './manager-harness.js';
import { brokerWithTopics, countTopology } from './processing-fixture.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('closing the task manager', () => {
  it('clears the re-open timer of a task whose commit failed, so nothing outlives it', async () => {
    const broker = brokerWithTopics(['in', 'out']);
    const h = await startHarness({ topology: countTopology(), partitions: 1, broker });
    h.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await h.manager.control.idle();
    send(broker, 'in', 0, 'a', 'x');
    await h.pump();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    h.failures.send = true;
    await h.commitAll(); // fails: the task is rolled back and a re-open is scheduled
    expect(h.manager.localTasks()[0]?.state).toBe('SUSPENDED');
    expect(vi.getTimerCount()).toBe(1);
    await h.manager.closeAll();
    expect(vi.getTimerCount()).toBe(0);
    await h.engine.close();
  });
});
