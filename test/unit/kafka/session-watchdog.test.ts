/**
 * The kafkajs session check (session-watchdog.ts) on fake timers: it reports the assignment lost
 * once the session has passed without an answer from the coordinator, and only in a stable group.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SessionWatchdog } from '../../../src/kafka/session-watchdog.js';
import type { TopicPartition } from '../../../src/processing/ports.js';

const SESSION_MS = 6_000;
const ASSIGNMENT: TopicPartition[] = [{ topic: 'in', partition: 0 }, { topic: 'in', partition: 1 }];

function watchdog(): { dog: SessionWatchdog; seen: string[] } {
  const seen: string[] = [];
  const names = (assignment: readonly TopicPartition[]): string => assignment.map((tp) => `${tp.topic}/${tp.partition}`).join(',');
  const dog = new SessionWatchdog({
    sessionTimeoutMs: SESSION_MS,
    onLost: (assignment) => seen.push(`lost ${names(assignment)} at ${Date.now()}`),
    onRegained: (assignment) => seen.push(`regained ${names(assignment)} at ${Date.now()}`),
  });
  return { dog, seen };
}

/** Heartbeats answered every `everyMs` for `forMs`. */
async function heartbeats(dog: SessionWatchdog, everyMs: number, forMs: number): Promise<void> {
  for (let t = 0; t < forMs; t += everyMs) {
    await vi.advanceTimersByTimeAsync(everyMs);
    dog.heartbeat();
  }
}

beforeEach(() => {
  vi.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'Date'] });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('the session watchdog', () => {
  it('reports the assignment lost once, a session timeout after the last answer, and not again while none comes', async () => {
    const { dog, seen } = watchdog();
    dog.joined(ASSIGNMENT, 'm1');
    await heartbeats(dog, 2_000, 4_000); // answered at 2 s and 4 s, then silence
    await vi.advanceTimersByTimeAsync(SESSION_MS);
    expect(seen).toEqual([]); // the deadline: it looks once more after the I/O waiting now
    await vi.advanceTimersByTimeAsync(1); // (fake timers run that a millisecond later)
    expect(seen).toEqual([`lost in/0,in/1 at ${4_000 + SESSION_MS + 1}`]);
    expect(dog.state).toBe('LOST');
    await vi.advanceTimersByTimeAsync(10 * SESSION_MS);
    expect(seen).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('says nothing while heartbeats are answered, however long', async () => {
    const { dog, seen } = watchdog();
    dog.joined(ASSIGNMENT, 'm1');
    await heartbeats(dog, SESSION_MS - 1, 20 * SESSION_MS);
    expect(seen).toEqual([]);
    expect(dog.state).toBe('STABLE');
  });

  it('lets a heartbeat answer read in the turn its deadline passed win (a timer runs before the event loop reads its sockets)', async () => {
    const { dog, seen } = watchdog();
    dog.joined(ASSIGNMENT, 'm1');
    setTimeout(() => dog.heartbeat(), SESSION_MS); // after the watchdog's timer, before what it scheduled
    await vi.advanceTimersByTimeAsync(SESSION_MS + 1);
    expect(seen).toEqual([]);
    await vi.advanceTimersByTimeAsync(SESSION_MS);
    expect(seen).toEqual([`lost in/0,in/1 at ${2 * SESSION_MS + 1}`]);
  });

  it('drops its second look when a rebalance starts in between: one timer, for the join after it', async () => {
    const { dog, seen } = watchdog();
    dog.joined(ASSIGNMENT, 'm1');
    setTimeout(() => {
      dog.rebalancing();
      dog.joined(ASSIGNMENT, 'm1');
    }, SESSION_MS);
    await vi.advanceTimersByTimeAsync(SESSION_MS + 1);
    expect(seen).toEqual([]);
    expect(vi.getTimerCount()).toBe(1);
  });

  it('checks nothing during a rebalance, however long, and starts over from the join that ends it', async () => {
    const { dog, seen } = watchdog();
    dog.joined(ASSIGNMENT, 'm1');
    await vi.advanceTimersByTimeAsync(SESSION_MS - 1_000);
    dog.rebalancing(); // kafkajs sends no heartbeat until it has rejoined
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10 * SESSION_MS); // up to the rebalance timeout, say
    expect(seen).toEqual([]);
    dog.joined([ASSIGNMENT[1]!], 'm1');
    await vi.advanceTimersByTimeAsync(SESSION_MS - 1);
    expect(seen).toEqual([]);
    await vi.advanceTimersByTimeAsync(2);
    expect(seen).toEqual([`lost in/1 at ${11 * SESSION_MS - 1_000 + SESSION_MS + 1}`]);
  });

  it('re-arms on the assignment of the next join after a loss', async () => {
    const { dog, seen } = watchdog();
    dog.joined(ASSIGNMENT, 'm1');
    await vi.advanceTimersByTimeAsync(SESSION_MS + 1);
    expect(seen).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(14_000); // the link is back; the coordinator answers UNKNOWN_MEMBER_ID, kafkajs rejoins
    dog.joined([ASSIGNMENT[0]!], 'm2');
    expect(dog.state).toBe('STABLE');
    expect(seen).toHaveLength(1); // lost already: not said twice
    await heartbeats(dog, 2_000, 10_000);
    expect(seen).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(SESSION_MS + 1);
    expect(seen).toEqual([`lost in/0,in/1 at ${SESSION_MS + 1}`, `lost in/0 at ${SESSION_MS + 1 + 24_000 + SESSION_MS + 1}`]);
  });

  it('gives the assignment back when a heartbeat goes through after a loss with no join in between (the coordinator still knew the member)', async () => {
    const { dog, seen } = watchdog();
    dog.joined(ASSIGNMENT, 'm1');
    await vi.advanceTimersByTimeAsync(SESSION_MS + 500);
    dog.heartbeat();
    expect(seen).toEqual([`lost in/0,in/1 at ${SESSION_MS + 1}`, `regained in/0,in/1 at ${SESSION_MS + 500}`]);
    expect(dog.state).toBe('STABLE');
    await vi.advanceTimersByTimeAsync(SESSION_MS + 1);
    expect(seen).toHaveLength(3); // and checked again from that answer on
  });

  it('reports what the last member held lost when a join comes back with a new member id (the coordinator had let it go), unless it said so already', async () => {
    const { dog, seen } = watchdog();
    dog.joined(ASSIGNMENT, 'm1');
    await vi.advanceTimersByTimeAsync(1_000);
    dog.joined(ASSIGNMENT, 'm1'); // a rebalance kept the member
    dog.rebalancing();
    dog.joined([ASSIGNMENT[1]!], 'm2'); // rejoined after UNKNOWN_MEMBER_ID
    expect(seen).toEqual(['lost in/0,in/1 at 1000']);
    expect(dog.state).toBe('STABLE');
  });

  it('holds no timer without an assignment, and none once stopped', async () => {
    const { dog, seen } = watchdog();
    dog.joined([], 'm1');
    expect(vi.getTimerCount()).toBe(0);
    dog.joined(ASSIGNMENT, 'm1');
    expect(vi.getTimerCount()).toBe(1);
    dog.stop();
    expect(vi.getTimerCount()).toBe(0);
    dog.joined(ASSIGNMENT, 'm1');
    dog.heartbeat();
    await vi.advanceTimersByTimeAsync(10 * SESSION_MS);
    expect(seen).toEqual([]);
    expect(dog.state).toBe('STOPPED');
  });

  it('unrefs its timer: it never keeps the process alive', () => {
    vi.useRealTimers();
    const unref = vi.spyOn(globalThis, 'setTimeout');
    const { dog } = watchdog();
    dog.joined(ASSIGNMENT, 'm1');
    const timer = unref.mock.results.at(-1)?.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    dog.stop();
    unref.mockRestore();
  });
});
