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

describe('a task revoked, assigned again and revoked again while its first close waits in the control queue', () => {
  it('closes the second task object too (its close does not coalesce into the first one\'s)', async () => {
    const broker = brokerWithTopics(['in', 'out'], 2);
    const h = await startHarness({ topology: countTopology(), partitions: 2, broker });
    const both = [{ topic: 'in', partition: 0 }, { topic: 'in', partition: 1 }];
    h.ports.consumer.assign(both);
    await h.manager.control.idle();
    const first = h.manager.localTasks().find((t) => t.partition === 1)!;
    expect(first.state).toBe('RUNNING');
    // Task 0_1's operations run in order: everything asked of it below waits behind this.
    let release!: () => void;
    h.manager.control.enqueue({ key: 'test:hold-0_1', group: '0_1', run: () => new Promise<void>((resolve) => { release = resolve; }) });
    h.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    h.ports.consumer.assign(both);
    const second = h.manager.localTasks().find((t) => t.partition === 1)!;
    expect(second, 'a new task object under the same id').not.toBe(first);
    h.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    expect(h.manager.control.pendingIn('0_1'), 'the hold, the first close, the second open and the second close').toEqual([
      'test:hold-0_1', expect.stringMatching(/^close:0_1#/), expect.stringMatching(/^open:0_1#/), expect.stringMatching(/^close:0_1#/),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 0)); // the queue starts the hold
    release();
    await h.manager.control.idle();
    expect(first.state).toBe('CLOSED');
    expect(second.state).toBe('CLOSED');
    await h.manager.closeAll();
    await h.engine.close();
  });
});
