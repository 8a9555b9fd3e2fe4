/**
 * A task's own commit (exactly-once v1, one transaction per task; at-least-once) cuts the
 * transaction when it starts and lets the task process on while the rest of it runs: the commit
 * carries exactly what was processed before the cut, what comes after is the next transaction's
 * (its output held until the commit has ended), and a commit that fails takes both back.
 */
import { describe, expect, it } from 'vitest';
import { parseProcessingOptions } from '../../../src/processing/processing-options.js';
import { TopologyBuilder } from '../../../src/processing/topology.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Harness } from './manager-harness.js';
import { send, startHarness } from './manager-harness.js';
import { brokerWithTopics, countTopology, waitFor } from './processing-fixture.js';
import type { FakeBroker } from './fake-kafka.js';

/** Every record in the output partition, committed or not, and the committed ones (read_committed). */
function outputOf(broker: FakeBroker): { all: number; committed: string[] } {
  const all = broker.logs.get('out')?.[0]?.length ?? 0;
  const committed = broker.readCommitted('out', 0, 0).records.map((r) => `${r.key?.toString()}=${r.value?.readInt32BE(0)}`);
  return { all, committed };
}

async function startWithThreeRecords(guarantee: 'exactly_once' | 'at_least_once'): Promise<{ h: Harness; broker: FakeBroker; release: () => void }> {
  const broker = brokerWithTopics(['in', 'out'], 1);
  const h = await startHarness({ topology: countTopology(), partitions: 1, broker, options: { processingGuarantee: guarantee, commitIntervalMs: 3_600_000, sendAheadRecords: 1 } });
  h.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
  await h.manager.control.idle();
  for (const key of ['x', 'x', 'y']) send(broker, 'in', 0, key, 'v');
  await h.pump();
  // Exactly-once holds the transaction's commit, at-least-once the consumer's offset commit.
  const exactlyOnce = guarantee === 'exactly_once';
  const consumer = h.ports.consumer;
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = () => {
      delete h.failures.commitGate;
      delete consumer.commitGate;
      r();
    };
  });
  if (exactlyOnce) h.failures.commitGate = gate;
  else consumer.commitGate = gate;
  const task = h.manager.localTasks()[0]!;
  h.manager.requestCommit(task);
  await waitFor(() => task.committing && (exactlyOnce ? broker.calls.includes('commit') : consumer.offsetCommitsStarted === 1));
  // Fetched and processed while the commit waits in Kafka.
  for (const key of ['x', 'z']) send(broker, 'in', 0, key, 'v');
  await h.pump();
  return { h, broker, release };
}

describe('a commit in flight', () => {
  it('exactly-once: the task processes on; the commit carries what came before it, the next one the rest, whose output waits for the first', async () => {
    const { h, broker, release } = await startWithThreeRecords('exactly_once');
    expect(await h.counts('counts', 0, false)).toEqual(new Map([['x', 3], ['y', 1], ['z', 1]]));
    expect(await h.counts('counts', 0, true)).toEqual(new Map());
    // The second transaction's output is not sent while the first commits.
    expect(outputOf(broker).all).toBe(3);

    release();
    await waitFor(() => h.commits.length === 1);
    expect(h.commits).toEqual([3]);
    expect(await h.counts('counts', 0, true)).toEqual(new Map([['x', 2], ['y', 1]]));
    expect(broker.groupOffsets.get('app:in:0')).toBe(3);
    expect(outputOf(broker).committed).toEqual(['x=1', 'x=2', 'y=1']);

    await h.commitAll();
    expect(h.commits).toEqual([3, 2]);
    expect(await h.counts('counts', 0, true)).toEqual(new Map([['x', 3], ['y', 1], ['z', 1]]));
    expect(broker.groupOffsets.get('app:in:0')).toBe(5);
    expect(outputOf(broker).committed).toEqual(['x=1', 'x=2', 'y=1', 'x=3', 'z=1']);
    expect(h.fatal).toEqual([]);
  });

  it('exactly-once: a commit that fails drops what was processed meanwhile too; the re-opened task processes everything once', async () => {
    const { h, broker, release } = await startWithThreeRecords('exactly_once');
    h.failures.commitFailures = 1;
    release();
    // Rolled back and re-opened from what is committed (nothing): all five records again.
    await waitFor(() => h.manager.localTasks()[0]?.state === 'RUNNING' && broker.calls.filter((c) => c.startsWith('init:')).length === 2);
    await h.pump();
    await h.commitAll();
    expect(h.commits).toEqual([5]);
    expect(await h.counts('counts', 0, true)).toEqual(new Map([['x', 3], ['y', 1], ['z', 1]]));
    expect(broker.groupOffsets.get('app:in:0')).toBe(5);
    expect(outputOf(broker).committed).toEqual(['x=1', 'x=2', 'y=1', 'x=3', 'z=1']);
  });

  it('at-least-once: the task processes on, and the offsets committed are those of the cut', async () => {
    const { h, broker, release } = await startWithThreeRecords('at_least_once');
    expect(await h.counts('counts', 0, false)).toEqual(new Map([['x', 3], ['y', 1], ['z', 1]]));
    release();
    await waitFor(() => h.commits.length === 1);
    expect(broker.groupOffsets.get('app:in:0')).toBe(3);
    expect(await h.counts('counts', 0, true)).toEqual(new Map([['x', 2], ['y', 1]]));
    await h.commitAll();
    expect(broker.groupOffsets.get('app:in:0')).toBe(5);
    expect(await h.counts('counts', 0, true)).toEqual(new Map([['x', 3], ['y', 1], ['z', 1]]));
  });
});

describe('a commit in flight when an eager rebalance moves its task', () => {
  it('fenced by the new owner: logged at info as expected, not as a warning, and the task is not re-opened here', async () => {
    const logged: Array<{ level: string; msg: string }> = [];
    const logger = {
      warn: (_o: unknown, msg?: string) => { logged.push({ level: 'warn', msg: msg ?? '' }); },
      info: (_o: unknown, msg?: string) => { logged.push({ level: 'info', msg: msg ?? '' }); },
      error: (_o: unknown, msg?: string) => { logged.push({ level: 'error', msg: msg ?? '' }); },
      debug: () => undefined,
    };
    const broker = brokerWithTopics(['in', 'out'], 1);
    const h = await startHarness({ topology: countTopology(), partitions: 1, broker, logger, options: { commitIntervalMs: 3_600_000 } });
    h.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await h.manager.control.idle();
    for (const key of ['x', 'y']) send(broker, 'in', 0, key, 'v');
    await h.pump();
    let release!: () => void;
    h.failures.commitGate = new Promise((r) => { release = r; });
    const task = h.manager.localTasks()[0]!;
    h.manager.requestCommit(task);
    await waitFor(() => task.committing && broker.calls.includes('commit'));
    // The new owner's InitProducerId, then this member's new assignment without the task.
    const id = broker.calls.find((c) => c.startsWith('init:'))!.slice('init:'.length);
    broker.initProducer(id);
    h.ports.consumer.assign([]);
    delete h.failures.commitGate;
    release();
    await h.manager.control.idle();
    await new Promise((r) => setTimeout(r, 300)); // past the first re-open back-off (200 ms)
    await h.manager.control.idle();
    expect(logged.filter((l) => l.level === 'info' && l.msg.startsWith('commit of a revoked task fenced'))).toHaveLength(1);
    expect(logged.filter((l) => l.level === 'warn')).toEqual([]);
    expect(broker.calls.filter((c) => c.startsWith('init:'))).toHaveLength(1); // not re-opened
    expect(h.manager.localTasks()).toEqual([]);
  });
});

describe('a commit that must first abort its transaction in Kafka (a processor asked to abort it)', () => {
  it('lets its task process nothing until the cut, so a record failing meanwhile is dead-lettered and nothing is lost', async () => {
    const b = new TopologyBuilder();
    b.addSource('src', 'in', serdes.string, serdes.string);
    b.addStore('counts', serdes.string, serdes.int32);
    b.addProcessor<string, string>('count', (record, ctx) => {
      if (record.value === 'boom') throw new Error('boom');
      const store = ctx.store<string, number>('counts');
      store.put(record.key, (store.get(record.key) ?? 0) + 1);
      ctx.forward({ key: record.key, value: 1, timestamp: record.timestamp });
      if (record.value === 'abort') ctx.abortTransaction('asked');
    }, ['src'], ['counts']);
    b.addSink('sink', 'out', serdes.string, serdes.int32, ['count']);
    const broker = brokerWithTopics(['in', 'out'], 1);
    const h = await startHarness({ topology: b.build(), partitions: 1, broker, options: { commitIntervalMs: 3_600_000, sendAheadRecords: 1, processingErrors: 'dead-letter' } });
    h.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await h.manager.control.idle();
    send(broker, 'in', 0, 'k', 'a');
    send(broker, 'in', 0, 'k', 'abort');
    await h.pump(); // both sent ahead: the abort needs Kafka
    let release!: () => void;
    h.failures.abortGate = new Promise((r) => { release = r; });
    const task = h.manager.localTasks()[0]!;
    h.manager.requestCommit(task);
    await waitFor(() => broker.calls.includes('abort'));
    send(broker, 'in', 0, 'k', 'boom');
    send(broker, 'in', 0, 'k', 'c');
    await h.pump();
    delete h.failures.abortGate;
    release();
    await h.manager.control.idle();
    await h.pump();
    await h.commitAll();
    expect(broker.groupOffsets.get('app:in:0')).toBe(4);
    expect(await h.counts('counts', 0, true)).toEqual(new Map([['k', 2]])); // a and c; abort consumed without effect
    const deadLetters = broker.readCommitted(parseProcessingOptions({ applicationId: 'app' }).deadLetterTopic, 0, 0).records;
    expect(deadLetters.map((r) => r.value?.toString())).toEqual(['boom']);
    expect(h.fatal).toEqual([]);
  });
});
