import { afterEach, describe, expect, it, vi } from 'vitest';
import { send, startHarness } from './manager-harness.js';
import { brokerWithTopics, countTopology } from './processing-fixture.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('re-opening a task after failed commits', () => {
  it('backs off more after each failure, and re-opens at once, backing off from the start, when an assignment comes', async () => {
    const broker = brokerWithTopics(['in', 'out']);
    const h = await startHarness({ topology: countTopology(), partitions: 1, broker });
    const tp = { topic: 'in', partition: 0 };
    h.ports.consumer.assign([tp]);
    await h.manager.control.idle();
    const task = () => h.manager.localTasks()[0]!;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    h.failures.send = true; // the broker is away: every commit fails
    for (let attempt = 1; attempt <= 4; attempt++) {
      send(broker, 'in', 0, 'a', `x${attempt}`);
      h.ports.consumer.resume([tp]);
      await h.pump();
      await h.commitAll();
      expect(task().state).toBe('SUSPENDED');
      expect(h.manager.failedAttempts(task().id)).toBe(attempt);
      await vi.advanceTimersByTimeAsync(100 * 2 ** attempt); // this attempt's back-off: then re-opened
      await h.manager.control.idle();
      expect(task().state).toBe('RUNNING');
      await vi.runOnlyPendingTimersAsync();
    }
    // A fifth failure would wait 3.2 s; the group coming back (a new assignment) re-opens now.
    send(broker, 'in', 0, 'a', 'x5');
    h.ports.consumer.resume([tp]);
    await h.pump();
    await h.commitAll();
    expect(task().state).toBe('SUSPENDED');
    expect(h.manager.failedAttempts(task().id)).toBe(5);
    h.failures.send = false; // the broker is back
    h.ports.consumer.assign([tp]);
    await h.manager.control.idle();
    expect(task().state).toBe('RUNNING');
    expect(h.manager.failedAttempts(task().id)).toBe(0);
    await h.manager.closeAll();
    await h.engine.close();
  });
});
