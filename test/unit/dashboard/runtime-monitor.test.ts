/**
 * RuntimeMonitor's reads of the input ends (for lag) through a fake admin port: shared while in
 * flight, reused for a second, not kept when they fail, and never holding a query longer than
 * ENDS_WAIT_MS when the broker does not answer. Last commits are per task.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AdminPort } from '../../../src/processing/ports.js';
import { StreamsBuilder } from '../../../src/processing/stream-builder.js';
import { ProcessingMetrics } from '../../../src/runtime/processing-metrics.js';
import { RuntimeMonitor } from '../../../src/runtime/runtime-monitor.js';
import { serdes } from '../../../src/store/serdes.js';

function topology() {
  const builder = new StreamsBuilder();
  builder.table('accounts', { store: 'balances', key: serdes.string, value: serdes.json });
  return builder.build();
}

function monitorWith(endOffsets: AdminPort['endOffsets'], clock: () => number): RuntimeMonitor {
  const admin = { endOffsets } as unknown as AdminPort;
  return new RuntimeMonitor({
    options: { applicationId: 'bank', processingGuarantee: 'exactly_once', commitIntervalMs: 100 },
    topology: topology(),
    metrics: new ProcessingMetrics(),
    kafka: () => ({ admin, client: 'fake' }),
    clock,
  });
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('RuntimeMonitor', () => {
  it('reads the input ends once per second and shares a read in flight', async () => {
    let now = 0;
    const calls: string[] = [];
    const monitor = monitorWith(async (topic) => {
      calls.push(topic);
      return new Map([[0, 10 + calls.length], [1, 5]]);
    }, () => now);
    const [a, b] = await Promise.all([monitor.inputEnds('balances', 0), monitor.inputEnds('balances', 1)]);
    expect(a.toJSON()).toEqual({ accounts: { 0: 11 } });
    expect(b.toJSON()).toEqual({ accounts: { 1: 5 } });
    now = 999;
    expect((await monitor.inputEnds('balances', 0)).toJSON()).toEqual({ accounts: { 0: 11 } });
    expect(calls).toEqual(['accounts']);
    now = 1_000;
    expect((await monitor.inputEnds('balances', 0)).toJSON()).toEqual({ accounts: { 0: 12 } });
    expect(calls).toHaveLength(2);
  });

  it('gives up waiting for a broker that does not answer, and does not keep a failed read', async () => {
    let answer: ((ends: Map<number, number>) => void) | undefined;
    let calls = 0;
    const monitor = monitorWith(() => {
      calls += 1;
      return new Promise((resolve) => { answer = resolve; });
    }, () => 0);
    const first = monitor.inputEnds('balances', 0);
    const second = monitor.inputEnds('balances', 0);
    const settled = Promise.allSettled([first, second]);
    await vi.advanceTimersByTimeAsync(1_500);
    expect((await settled).map((s) => s.status)).toEqual(['rejected', 'rejected']);
    expect(calls).toBe(1); // the read in flight is shared, not repeated
    answer!(new Map([[0, 3]]));
    expect((await monitor.inputEnds('balances', 0)).toJSON()).toEqual({ accounts: { 0: 3 } });
    expect(calls).toBe(1);

    const failing = monitorWith(() => {
      calls += 1;
      return Promise.reject(new Error('broker away'));
    }, () => 0);
    await expect(failing.inputEnds('balances', 0)).rejects.toThrow('broker away');
    await expect(failing.inputEnds('balances', 0)).rejects.toThrow('broker away');
    expect(calls).toBe(3);
  });

  it('remembers the last commit of each task and of the instance', () => {
    let now = 5_000;
    const monitor = monitorWith(async () => new Map(), () => now);
    expect(monitor.lastCommitAt()).toBeUndefined();
    monitor.committed(['0_0', '0_1'], 12, 40);
    now = 6_000;
    monitor.committed(['0_1'], 8, 2);
    expect(monitor.taskLastCommitAt('0_0')).toBe(5_000);
    expect(monitor.taskLastCommitAt('0_1')).toBe(6_000);
    expect(monitor.taskLastCommitAt('0_2')).toBeUndefined();
    expect(monitor.lastCommitAt()).toBe(6_000);
    expect(monitor.history(60_000).reduce((n, i) => n + i.commits, 0)).toBe(2);
  });
});
