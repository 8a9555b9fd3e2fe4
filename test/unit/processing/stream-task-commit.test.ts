import { describe, expect, it } from 'vitest';
import { serdes } from '../../../src/store/serdes.js';
import { createInMemoryDatabase } from '../../../src/store/index.js';
import { COMMIT_STEPS } from '../../../src/processing/stream-task.js';
import { send, startHarness, type Harness } from './manager-harness.js';
import { brokerWithTopics, countTopology, harnessesClosedAfterEach, waitFor } from './processing-fixture.js';

const harnesses = harnessesClosedAfterEach();

/** A running count task that has processed one record (a → x) it has not committed yet. */
async function startWithUncommittedRecord(): Promise<Harness> {
  const h = await harnesses.startOnInput();
  send(h.broker, 'in', 0, 'a', 'x');
  await h.pump();
  return h;
}

describe('the commit protocol of a task', () => {
  it('runs flush → send → offsets → Kafka commit → store commit, in that order, and the store commit only after Kafka', async () => {
    const committedAt = new Map<string, number | undefined>();
    const h = await harnesses.startOnInput({
      onCommitStep: (step, taskId, harness) => {
        const task = harness.manager.localTasks().find((t) => t.id === taskId);
        committedAt.set(step, task?.stores?.store('counts').committedPosition().offset('in', 0));
      },
    });
    const { broker } = h;
    for (let i = 0; i < 5; i += 1) send(broker, 'in', 0, 'a', `x${i}`);
    await h.pump();
    broker.calls.length = 0;
    await h.commitAll();

    expect(h.steps).toEqual(COMMIT_STEPS.map((s) => `0_0:${s}`));
    expect(broker.calls).toEqual(['send:10', 'sendOffsets', 'commit']); // 5 changelog + 5 output records
    // Before the store commit the committed store has not moved; after it, it has the position.
    expect(committedAt.get('after-kafka-commit')).toBeUndefined();
    expect(committedAt.get('after-store-commit')).toBe(4);
    expect(await h.counts('counts', 0)).toEqual(new Map([['a', 5]]));
    expect(broker.groupOffsets.get('app:in:0')).toBe(5);
    expect(broker.readCommitted('out', 0, 0).records.map((r) => serdes.int32.deserialize(r.value as Buffer))).toEqual([1, 2, 3, 4, 5]);
    // The changelog carries the input record of each write in its headers.
    const changelog = broker.readCommitted('app-counts-changelog', 0, 0).records;
    expect(changelog.map((r) => r.headers['iqgate-src-offset'])).toEqual(['0', '1', '2', '3', '4']);
  });

  it('keeps uncommitted writes out of the committed store until the commit', async () => {
    const h = await startWithUncommittedRecord();
    expect(await h.counts('counts', 0, false)).toEqual(new Map([['a', 1]]));
    expect(await h.counts('counts', 0, true)).toEqual(new Map());
    expect(h.broker.readCommitted('out', 0, 0).records).toEqual([]);
  });

  it('repairs a commit that failed after the Kafka commit: the task re-initialises and restore replays the committed tail', async () => {
    let failOnce = true;
    const h = await harnesses.startOnInput({
      onCommitStep: (step) => {
        if (step === 'after-kafka-commit' && failOnce) {
          failOnce = false;
          throw new Error('crash between the Kafka commit and the store commit');
        }
      },
    });
    const { broker } = h;
    for (let i = 0; i < 3; i += 1) send(broker, 'in', 0, 'a', 'x');
    await h.pump();
    await h.commitAll();
    // Kafka committed (offsets, output), the store did not: the stored changelog offset is behind.
    expect(broker.groupOffsets.get('app:in:0')).toBe(3);
    const task = h.manager.localTasks()[0];
    await waitFor(() => task?.state === 'RUNNING' && h.restores.some((r) => r.done && r.restored > 0));
    expect(h.restores.filter((r) => r.done).at(-1)?.restored).toBe(3); // only the tail
    expect(await h.counts('counts', 0)).toEqual(new Map([['a', 3]]));
    // Processing continues from the committed offsets, without duplicates.
    send(broker, 'in', 0, 'a', 'x');
    await h.pump();
    await h.commitAll();
    expect(await h.counts('counts', 0)).toEqual(new Map([['a', 4]]));
    expect(broker.readCommitted('out', 0, 0).records.map((r) => serdes.int32.deserialize(r.value as Buffer))).toEqual([1, 2, 3, 4]);
  });

  it('aborts a commit whose send fails: the store stays at the last commit and the records are processed again', async () => {
    const h = await startWithUncommittedRecord();
    h.failures.send = true;
    await h.commitAll();
    h.failures.send = false;
    expect(await h.counts('counts', 0)).toEqual(new Map());
    const task = h.manager.localTasks()[0];
    await waitFor(() => task?.state === 'RUNNING');
    await h.pump();
    await h.commitAll();
    expect(await h.counts('counts', 0)).toEqual(new Map([['a', 1]]));
    expect(h.broker.readCommitted('out', 0, 0).records).toHaveLength(1);
  });

  it('restores only the changelog tail after a restart on the same committed data', async () => {
    const broker = brokerWithTopics(['in', 'out']);
    const database = createInMemoryDatabase();
    const first = await startHarness({ topology: countTopology(), partitions: 1, broker, database });
    first.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await first.manager.control.idle();
    for (let i = 0; i < 4; i += 1) send(broker, 'in', 0, 'k', 'x');
    await first.pump();
    await first.commitAll();
    await first.manager.closeAll();
    await first.engine.close();

    const second = await harnesses.start({ topology: countTopology(), partitions: 1, broker, database });
    second.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await second.manager.control.idle();
    expect(second.restores.filter((r) => r.done).map((r) => r.restored)).toEqual([0]);
    expect(await second.counts('counts', 0)).toEqual(new Map([['k', 4]]));
  });
});

describe('at-least-once', () => {
  it('commits input offsets through the consumer, with no transaction, then the store', async () => {
    const h = await harnesses.startOnInput({ options: { processingGuarantee: 'at_least_once' } });
    const { broker } = h;
    send(broker, 'in', 0, 'a', 'x');
    send(broker, 'in', 0, 'a', 'y');
    await h.pump();
    broker.calls.length = 0;
    await h.commitAll();
    expect(broker.calls).toEqual(['send:4']); // no sendOffsets / commit: offsets went through the consumer
    expect(h.steps.filter((s) => s.endsWith('after-send-offsets'))).toEqual([]);
    expect(broker.groupOffsets.get('app:in:0')).toBe(2);
    expect(await h.counts('counts', 0)).toEqual(new Map([['a', 2]]));
  });
});

describe('the uncommitted-bytes limit (KIP-892)', () => {
  it('stops processing when the limit is crossed and commits early, long before the commit interval', async () => {
    const h = await harnesses.startOnInput({ uncommittedMaxBytes: 2_000 });
    const { broker } = h;
    for (let i = 0; i < 300; i += 1) send(broker, 'in', 0, `key-${i}`, 'x');
    h.ports.consumer.deliver();
    const task = h.manager.localTasks()[0];
    for (let i = 0; i < 500 && (task?.buffered() ?? 0) > 0; i += 1) {
      await new Promise((r) => setImmediate(r));
      await h.manager.control.idle();
    }
    // Several early commits, each stopped near the limit (~2 KB of entries, far fewer than 300 records).
    const early = [...h.commits];
    expect(early.length).toBeGreaterThan(3);
    expect(Math.max(...early)).toBeLessThan(100);
    await h.commitAll(); // the tail below the limit waits for the commit interval (here: an explicit commit)
    expect(h.commits.reduce((a, b) => a + b, 0)).toBe(300);
    expect(await h.counts('counts', 0)).toHaveProperty('size', 300);
  });
});
