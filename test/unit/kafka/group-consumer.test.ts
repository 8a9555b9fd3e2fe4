/**
 * The group consumer across a kafkajs "crash and restart" (the broker went away): kafkajs drops
 * its ConsumerGroup, so pause/resume/seek would throw "Consumer group was not initialized" —
 * inside the task manager's recovery and processing loop — until the consumer has rejoined.
 */
import { EventEmitter } from 'node:events';
import type { Kafka } from 'kafkajs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KafkaGroupConsumer } from '../../../src/kafka/group-consumer.js';
import type { ConsumerHandlers, TopicPartition } from '../../../src/processing/ports.js';

const EVENTS = { GROUP_JOIN: 'consumer.group_join', REBALANCING: 'consumer.rebalancing', CRASH: 'consumer.crash', STOP: 'consumer.stop', HEARTBEAT: 'consumer.heartbeat' };

/** A kafkajs consumer stand-in with its ConsumerGroup's life cycle: created by run(), dropped by a crash. */
class FakeKafkajsConsumer extends EventEmitter {
  readonly events = EVENTS;
  hasGroup = false;
  readonly calls: string[] = [];
  async connect(): Promise<void> {}
  async subscribe(): Promise<void> {}
  /** What the adapter passed to run() (its eachBatch). */
  runConfig: { eachBatch(payload: unknown): Promise<void> } | undefined;
  async run(config?: { eachBatch(payload: unknown): Promise<void> }): Promise<void> {
    this.runConfig = config;
    this.hasGroup = true;
    this.join({ in: [0, 1] });
  }
  async disconnect(): Promise<void> {}
  async describeGroup(): Promise<never> { throw new Error('not used'); }
  join(memberAssignment: Record<string, number[]>, memberId?: string): void {
    this.hasGroup = true;
    this.emit(EVENTS.GROUP_JOIN, { payload: { memberAssignment, memberId } });
  }
  /** What kafkajs' onCrash does: stop (drop the group, STOP), disconnect, then CRASH. */
  crash(error: Error, restart: boolean): void {
    this.hasGroup = false;
    this.emit(EVENTS.STOP, {});
    this.emit(EVENTS.CRASH, { payload: { error, groupId: 'app', restart } });
  }
  private call(name: string, detail: string): void {
    if (!this.hasGroup) throw Object.assign(new Error('Consumer group was not initialized, consumer#run must be called first'), { name: 'KafkaJSNonRetriableError' });
    this.calls.push(`${name} ${detail}`);
  }
  pause(topics: Array<{ topic: string; partitions: number[] }>): void { this.call('pause', JSON.stringify(topics)); }
  resume(topics: Array<{ topic: string; partitions: number[] }>): void { this.call('resume', JSON.stringify(topics)); }
  seek(position: { topic: string; partition: number; offset: string }): void { this.call('seek', `${position.topic}/${position.partition}@${position.offset}`); }
}

function setup(): { kafkajsConsumer: FakeKafkajsConsumer; consumer: KafkaGroupConsumer; seen: string[] } {
  const kafkajsConsumer = new FakeKafkajsConsumer();
  const kafka = { consumer: () => kafkajsConsumer } as unknown as Kafka;
  const consumer = new KafkaGroupConsumer(kafka, { groupId: 'app', topics: ['in'], taskGroups: [['in']] });
  const seen: string[] = [];
  const handlers: ConsumerHandlers = {
    onBatch: () => true,
    onAssignment: (assignment: readonly TopicPartition[]) => { seen.push(`assignment ${assignment.map((tp) => tp.partition).join(',')}`); },
    onRebalancing: () => undefined,
    onCrash: (error) => { seen.push(`crash ${(error as Error).message}`); },
    onReconnecting: (error) => { seen.push(`reconnecting ${error.code}`); },
  };
  void consumer.run(handlers);
  return { kafkajsConsumer, consumer, seen };
}

const connectionError = (): Error => Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9092'), { name: 'KafkaJSConnectionError', retriable: true });

describe('the group consumer when kafkajs restarts it (the broker went away)', () => {
  it('reports the restart as onReconnecting with BROKER_UNAVAILABLE, and a crash for good as onCrash', async () => {
    const { kafkajsConsumer, seen } = setup();
    await new Promise((r) => setImmediate(r));
    kafkajsConsumer.crash(Object.assign(new Error('retries exhausted'), { name: 'KafkaJSNumberOfRetriesExceeded', cause: connectionError() }), true);
    kafkajsConsumer.join({ in: [0, 1] });
    kafkajsConsumer.crash(Object.assign(new Error('bad'), { name: 'KafkaJSNonRetriableError' }), false);
    expect(seen).toEqual(['assignment 0,1', 'reconnecting BROKER_UNAVAILABLE', 'assignment 0,1', 'crash bad']);
  });

  it('makes pause, resume and seek no-ops until the next join, which the task manager re-applies them after', async () => {
    const { kafkajsConsumer, consumer } = setup();
    await new Promise((r) => setImmediate(r));
    consumer.pause([{ topic: 'in', partition: 0 }]);
    kafkajsConsumer.crash(connectionError(), true);
    // Between the crash and the rejoin: kafkajs has no group; these used to throw.
    expect(() => consumer.pause([{ topic: 'in', partition: 1 }])).not.toThrow();
    expect(() => consumer.resume([{ topic: 'in', partition: 0 }])).not.toThrow();
    expect(() => consumer.seek({ topic: 'in', partition: 0, offset: 7 })).not.toThrow();
    kafkajsConsumer.join({ in: [0, 1] });
    consumer.seek({ topic: 'in', partition: 0, offset: 7 });
    expect(kafkajsConsumer.calls).toEqual(['pause [{"topic":"in","partitions":[0]}]', 'seek in/0@7']);
  });
});

describe('the group consumer while gateway requests wait (readyForMore)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** The adapter's eachBatch over a stand-in kafkajs, with `ready` as the task manager's readyForMore(). */
  async function batchTaker(ready: () => boolean) {
    const kafkajsConsumer = new FakeKafkajsConsumer();
    const consumer = new KafkaGroupConsumer({ consumer: () => kafkajsConsumer } as unknown as Kafka, { groupId: 'app', topics: ['in'], taskGroups: [['in']] });
    const taken: number[] = [];
    await consumer.run({ onBatch: () => { taken.push(Date.now()); return true; }, onAssignment: () => undefined, onRebalancing: () => undefined, onCrash: () => undefined, readyForMore: ready });
    const resolved: string[] = [];
    const state = { stale: false };
    vi.useFakeTimers();
    const eachBatch = () => kafkajsConsumer.runConfig!.eachBatch({
      batch: { topic: 'in', partition: 0, messages: [{ offset: '0', key: null, value: Buffer.from('v'), timestamp: '0', headers: {} }], lastOffset: () => '0' },
      resolveOffset: (offset: string) => resolved.push(offset),
      heartbeat: async () => undefined,
      isRunning: () => true,
      isStale: () => state.stale,
    });
    return { eachBatch, taken, resolved, state };
  }

  it('holds a batch while the tasks take no records, and hands it over once they do', async () => {
    let ready = false;
    const { eachBatch, taken, resolved } = await batchTaker(() => ready);
    const started = Date.now();
    const handled = eachBatch();
    await vi.advanceTimersByTimeAsync(10);
    expect(taken).toEqual([]);
    ready = true;
    await vi.advanceTimersByTimeAsync(1);
    await handled;
    expect(taken).toEqual([started + 11]);
    expect(resolved).toEqual(['0']);
  });

  it('holds it at most READY_WAIT_MAX_MS (kafkajs heartbeats only between batches)', async () => {
    const { eachBatch, taken } = await batchTaker(() => false);
    const started = Date.now();
    const handled = eachBatch();
    await vi.advanceTimersByTimeAsync(19);
    expect(taken).toEqual([]);
    await vi.advanceTimersByTimeAsync(2);
    await handled;
    expect(taken).toHaveLength(1);
    expect(taken[0]! - started).toBeGreaterThanOrEqual(20);
  });

  it('drops a batch that went stale while it waited (a seek is pending), without resolving it', async () => {
    const { eachBatch, taken, resolved, state } = await batchTaker(() => false);
    const handled = eachBatch();
    await vi.advanceTimersByTimeAsync(5);
    state.stale = true;
    await vi.advanceTimersByTimeAsync(1);
    await handled;
    expect(taken).toEqual([]);
    expect(resolved).toEqual([]);
  });
});

describe('the group consumer\'s session watchdog (kafkajs has no session check of its own)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const SESSION_MS = 6_000;

  async function watched() {
    vi.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'Date'] });
    const kafkajsConsumer = new FakeKafkajsConsumer();
    kafkajsConsumer.run = async function run(config) {
      this.runConfig = config;
      this.join({ in: [0, 1] }, 'm1');
    };
    const consumer = new KafkaGroupConsumer({ consumer: () => kafkajsConsumer } as unknown as Kafka, { groupId: 'app', topics: ['in'], taskGroups: [['in']], sessionTimeoutMs: SESSION_MS });
    const seen: string[] = [];
    const parts = (tps: readonly TopicPartition[]): string => tps.map((tp) => tp.partition).join(',');
    await consumer.run({
      onBatch: () => true,
      onAssignment: (assignment) => { seen.push(`assignment ${parts(assignment)} at ${Date.now()}`); },
      onRebalancing: () => { seen.push('rebalancing'); },
      onCrash: () => undefined,
      onRevoked: async (partitions, lost) => { seen.push(`revoked ${parts(partitions)} lost=${lost} at ${Date.now()}`); },
    });
    return { kafkajsConsumer, consumer, seen };
  }

  it('reports the whole assignment lost once no heartbeat was answered for a session, and pauses its partitions', async () => {
    const { kafkajsConsumer, seen } = await watched();
    await vi.advanceTimersByTimeAsync(2_000);
    kafkajsConsumer.emit(EVENTS.HEARTBEAT, {});
    await vi.advanceTimersByTimeAsync(SESSION_MS + 10_000);
    expect(seen).toEqual(['assignment 0,1 at 0', `revoked 0,1 lost=true at ${2_000 + SESSION_MS + 1}`]);
    expect(kafkajsConsumer.calls).toEqual(['pause [{"topic":"in","partitions":[0,1]}]']);
  });

  it('says nothing while heartbeats are answered, nor during a long rebalance', async () => {
    const { kafkajsConsumer, seen } = await watched();
    for (let i = 0; i < 10; i++) {
      await vi.advanceTimersByTimeAsync(3_000);
      kafkajsConsumer.emit(EVENTS.HEARTBEAT, {});
    }
    kafkajsConsumer.emit(EVENTS.REBALANCING, {});
    await vi.advanceTimersByTimeAsync(50_000);
    kafkajsConsumer.join({ in: [1] }, 'm1');
    expect(seen).toEqual(['assignment 0,1 at 0', 'rebalancing', 'assignment 1 at 80000']);
  });

  it('reports what the member held lost before the assignment of a join under a new member id', async () => {
    const { kafkajsConsumer, seen } = await watched();
    await vi.advanceTimersByTimeAsync(1_000);
    kafkajsConsumer.join({ in: [0] }, 'm2');
    expect(seen).toEqual(['assignment 0,1 at 0', 'revoked 0,1 lost=true at 1000', 'assignment 0 at 1000']);
  });

  it('hands the same assignment over again when a heartbeat goes through after the loss with no join in between', async () => {
    const { kafkajsConsumer, seen } = await watched();
    await vi.advanceTimersByTimeAsync(SESSION_MS + 1_000);
    kafkajsConsumer.emit(EVENTS.HEARTBEAT, {});
    expect(seen).toEqual(['assignment 0,1 at 0', `revoked 0,1 lost=true at ${SESSION_MS + 1}`, `assignment 0,1 at ${SESSION_MS + 1_000}`]);
  });

  it('stops checking once the consumer stops, or crashes for good', async () => {
    const a = await watched();
    await a.consumer.stop();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10 * SESSION_MS);
    expect(a.seen).toEqual(['assignment 0,1 at 0']);
    vi.useRealTimers();
    const b = await watched();
    b.kafkajsConsumer.crash(Object.assign(new Error('bad'), { name: 'KafkaJSNonRetriableError' }), false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
