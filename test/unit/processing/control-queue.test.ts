import { describe, expect, it } from 'vitest';
import { ControlQueue } from '../../../src/processing/control-queue.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => { resolve = r; });
  return { promise, resolve };
}

describe('control queue', () => {
  it('coalesces a request whose key is already waiting', async () => {
    const queue = new ControlQueue(1, () => undefined);
    const gate = deferred();
    let runs = 0;
    queue.enqueue({ key: 'block', group: 'x', run: () => gate.promise });
    expect(queue.enqueue({ key: 'commit:0_1', group: '0_1', run: async () => { runs += 1; } })).toBe(true);
    expect(queue.enqueue({ key: 'commit:0_1', group: '0_1', run: async () => { runs += 1; } })).toBe(false);
    expect(queue.enqueue({ key: 'commit:0_1', group: '0_1', run: async () => { runs += 1; } })).toBe(false);
    expect(queue.stats.coalesced).toBe(2);
    gate.resolve();
    await queue.idle();
    expect(runs).toBe(1);
  });

  it('starts nothing synchronously inside enqueue', () => {
    const queue = new ControlQueue(4, () => undefined);
    let started = false;
    queue.enqueue({ key: 'commit:a', group: 'a', run: async () => { started = true; } });
    expect(started).toBe(false);
  });

  it('accepts the same key again once it has started running (a new request after the commit began)', async () => {
    const queue = new ControlQueue(4, () => undefined);
    const gate = deferred();
    let runs = 0;
    queue.enqueue({ key: 'commit:a', group: 'a', run: async () => { runs += 1; await gate.promise; } });
    expect(queue.has('commit:a')).toBe(true); // not started inside the caller's synchronous code
    await Promise.resolve();
    expect(queue.has('commit:a')).toBe(false); // started right after
    expect(queue.enqueue({ key: 'commit:a', group: 'a', run: async () => { runs += 1; } })).toBe(true);
    gate.resolve();
    await queue.idle();
    expect(runs).toBe(2);
  });

  it('runs the operations of one task one at a time and in order, other tasks alongside', async () => {
    const queue = new ControlQueue(8, () => undefined);
    const order: string[] = [];
    const gate = deferred();
    queue.enqueue({ key: 'open:a', group: 'a', run: async () => { order.push('open:a start'); await gate.promise; order.push('open:a end'); } });
    queue.enqueue({ key: 'close:a', group: 'a', run: async () => { order.push('close:a'); } });
    queue.enqueue({ key: 'open:b', group: 'b', run: async () => { order.push('open:b'); } });
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['open:a start', 'open:b']);
    gate.resolve();
    await queue.idle();
    expect(order).toEqual(['open:a start', 'open:b', 'open:a end', 'close:a']);
  });

  it('keeps going after a failing operation and reports it', async () => {
    const failed: string[] = [];
    const queue = new ControlQueue(2, (op) => failed.push(op.key));
    let ran = false;
    queue.enqueue({ key: 'bad', group: 'a', run: async () => { throw new Error('boom'); } });
    queue.enqueue({ key: 'good', group: 'a', run: async () => { ran = true; } });
    await queue.idle();
    expect(failed).toEqual(['bad']);
    expect(ran).toBe(true);
    expect(queue.stats.failed).toBe(1);
  });

  it('drains 1000 tasks whose operations really block, with duplicates coalesced, in well under a second', async () => {
    // The Druid lesson: 1000 tasks, callbacks that take time, duplicate notices.
    const queue = new ControlQueue(64, () => undefined);
    let runs = 0;
    const started = Date.now();
    for (let round = 0; round < 3; round += 1) {
      for (let t = 0; t < 1000; t += 1) {
        queue.enqueue({ key: `commit:${t}`, group: String(t), run: () => new Promise((r) => setTimeout(() => { runs += 1; r(); }, 5)) });
      }
    }
    expect(queue.stats.maxDepth).toBeLessThanOrEqual(1000);
    await queue.idle();
    expect(runs).toBeLessThanOrEqual(1064 + 64); // at most one queued duplicate per task behind one running op
    expect(runs).toBeGreaterThanOrEqual(1000);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
