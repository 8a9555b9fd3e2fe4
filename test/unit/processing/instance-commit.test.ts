/**
 * Exactly-once v2 on fake ports: every task commits in the instance's one transaction, and
 * processing goes on while it commits (InstanceCommitter).
 */
import { describe, expect, it } from 'vitest';
import { serdes } from '../../../src/store/serdes.js';
import { COMMIT_STEPS } from '../../../src/processing/stream-task.js';
import type { TopicPartitionOffset } from '../../../src/processing/ports.js';
import type { FakeStreamProducer } from './fake-kafka.js';
import { send, type Harness } from './manager-harness.js';
import { brokerWithTopics, countTopology, harnessesClosedAfterEach, waitFor } from './processing-fixture.js';

const harnesses = harnessesClosedAfterEach();

async function startTwoPartitions(): Promise<Harness & { producer: FakeStreamProducer }> {
  const h = await harnesses.start({ topology: countTopology(), partitions: 2, broker: brokerWithTopics(['in', 'out'], 2), eosV2: true });
  h.ports.consumer.assign([{ topic: 'in', partition: 0 }, { topic: 'in', partition: 1 }]);
  await h.manager.control.idle();
  await waitFor(() => h.manager.localTasks().every((t) => t.state === 'RUNNING'));
  const producer = h.ports.streamProducer;
  if (producer === undefined) throw new TypeError('eosV2 harness without a stream producer');
  return Object.assign(h, { producer });
}

/** The committed counts of `key` on the output topic, in order (one key lands in one partition). */
function outputCounts(h: Harness, key: string): number[] {
  return outputCountsIn(h, 2, key);
}

/** The committed counts of `key` on the output topic of `partitions` partitions, in order. */
function outputCountsIn(h: Harness, partitions: number, key: string): number[] {
  return Array.from({ length: partitions }, (_v, partition) => h.broker.readCommitted('out', partition, 0).records)
    .flat()
    .filter((r) => r.key?.toString() === key)
    .map((r) => serdes.int32.deserialize(r.value as Buffer));
}

/** Holds the instance producer's commit() (`hold`) or sendOffsets() (`holdOffsets`) until the returned function is called. */
function held(h: Harness & { producer: FakeStreamProducer }, step: 'hold' | 'holdOffsets'): () => void {
  let release!: () => void;
  h.producer[step] = new Promise((resolve) => { release = resolve; });
  return () => {
    h.producer[step] = null;
    release();
  };
}

/** y0 (partition 1) processed and cut into a cycle that is held before its offsets go out, and again at its commit. */
async function y0CutAndHeld(h: Harness & { producer: FakeStreamProducer }): Promise<{ releaseOffsets: () => void; releaseCommit: () => void; inFlight: Promise<void> }> {
  send(h.broker, 'in', 1, 'b', 'y0');
  await h.pump();
  const releaseOffsets = held(h, 'holdOffsets');
  const releaseCommit = held(h, 'hold');
  const inFlight = h.commitAll();
  await waitFor(() => h.steps.includes('0_1:after-send'));
  return { releaseOffsets, releaseCommit, inFlight };
}

/** a → 1 and b → 1 committed; a → 2 and b → 2 processed, not committed. */
async function commitOneThenProcessAnother(h: Harness): Promise<void> {
  send(h.broker, 'in', 0, 'a', 'x0');
  send(h.broker, 'in', 1, 'b', 'y0');
  await h.pump();
  await h.commitAll();
  send(h.broker, 'in', 0, 'a', 'x1');
  send(h.broker, 'in', 1, 'b', 'y1');
  await h.pump();
}

/**
 * a → 1 committed; x1 and x2 cut into a transaction held at its commit, which then fails with a
 * confirmed abort; x3 processed while it is held. `finish` lets the commit go and awaits the cycle.
 */
async function failingCommitHeldWhileX3IsProcessed(h: Harness & { producer: FakeStreamProducer }): Promise<{ finish: () => Promise<void> }> {
  send(h.broker, 'in', 0, 'a', 'x0');
  await h.pump();
  await h.commitAll();
  send(h.broker, 'in', 0, 'a', 'x1');
  send(h.broker, 'in', 0, 'a', 'x2');
  await h.pump();
  const release = held(h, 'hold');
  h.failures.commitFailures = 1;
  const inFlight = h.commitAll();
  await waitFor(() => h.steps.includes('0_0:after-send-offsets'));
  // Processing goes on meanwhile: x3 is processed after the cut, into the next transaction.
  send(h.broker, 'in', 0, 'a', 'x3');
  await h.pump();
  return {
    finish: async () => {
      release();
      await inFlight;
    },
  };
}

describe('exactly-once v2: one transaction for the instance', () => {
  it('commits the work of every task in one transaction, with the input offsets of all of them', async () => {
    const h = await startTwoPartitions();
    for (let i = 0; i < 3; i += 1) send(h.broker, 'in', 0, 'a', `x${i}`);
    for (let i = 0; i < 2; i += 1) send(h.broker, 'in', 1, 'b', `y${i}`);
    await h.pump();
    h.broker.calls.length = 0;
    await h.commitAll();

    expect(h.broker.calls.filter((c) => c === 'commit')).toEqual(['commit']); // one transaction, not one per task
    expect(h.producer.committedSizes).toEqual([10]); // 5 changelog + 5 output records
    expect(h.commits).toEqual([5]);
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(3);
    expect(h.broker.groupOffsets.get('app:in:1')).toBe(2);
    expect(await h.counts('counts', 0)).toEqual(new Map([['a', 3]]));
    expect(await h.counts('counts', 1)).toEqual(new Map([['b', 2]]));
    expect(outputCounts(h, 'a')).toEqual([1, 2, 3]);
    expect(outputCounts(h, 'b')).toEqual([1, 2]);
    // Every step of the protocol is reached by each task of the cut, in order.
    for (const id of ['0_0', '0_1']) expect(h.steps.filter((s) => s.startsWith(`${id}:`))).toEqual(COMMIT_STEPS.map((s) => `${id}:${s}`));
  });

  it('keeps processing while the transaction commits; what it processed meanwhile goes into the next one', async () => {
    const h = await startTwoPartitions();
    send(h.broker, 'in', 0, 'a', 'x0');
    await h.pump();
    const release = held(h, 'hold');
    const first = h.commitAll();
    await waitFor(() => h.steps.includes('0_0:after-send-offsets'));

    // The commit is in flight: new records are processed at once, into fresh write batches.
    send(h.broker, 'in', 0, 'a', 'x1');
    send(h.broker, 'in', 0, 'a', 'x2');
    await h.pump();
    expect(await h.counts('counts', 0, false)).toEqual(new Map([['a', 3]]));
    expect(await h.counts('counts', 0, true)).toEqual(new Map()); // nothing committed yet
    expect(outputCounts(h, 'a')).toEqual([]);

    release();
    await first;
    expect(await h.counts('counts', 0, true)).toEqual(new Map([['a', 1]])); // exactly the cut
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(1);
    expect(outputCounts(h, 'a')).toEqual([1]);

    await h.commitAll();
    expect(await h.counts('counts', 0, true)).toEqual(new Map([['a', 3]]));
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(3);
    expect(outputCounts(h, 'a')).toEqual([1, 2, 3]);
    expect(h.producer.committedSizes).toEqual([2, 4]);
  });

  it('stores the changelog end it counted, equal to the broker\'s (commit marker included)', async () => {
    const h = await startTwoPartitions();
    for (let round = 0; round < 3; round += 1) {
      send(h.broker, 'in', 0, `k${round}`, 'v');
      send(h.broker, 'in', 0, 'a', 'v');
      await h.pump();
      await h.commitAll();
      const task = h.manager.localTasks().find((t) => t.partition === 0);
      // The fake broker has no markers: its log length plus one per committed transaction is Kafka's end.
      const logLength = h.broker.logs.get('app-counts-changelog')?.[0]?.length ?? 0;
      expect(task?.stores?.changelogOffsets()).toEqual({ counts: logLength + round + 1 });
    }
  });

  it('rewinds every task of a transaction whose abort the broker confirmed, in memory: they stay RUNNING and re-process exactly once', async () => {
    const h = await startTwoPartitions();
    await commitOneThenProcessAnother(h);
    h.broker.calls.length = 0;
    const seeks: TopicPartitionOffset[] = [];
    const seek = h.ports.consumer.seek.bind(h.ports.consumer);
    h.ports.consumer.seek = (position) => {
      seeks.push(position);
      seek(position);
    };
    h.failures.commit = true;
    await h.commitAll();
    h.failures.commit = false;
    // Known outcome: no re-open (no SUSPENDED, no restore), the uncommitted work is gone; the
    // producer alone is initialised again, before the next transaction.
    expect(h.manager.localTasks().map((t) => t.state)).toEqual(['RUNNING', 'RUNNING']);
    expect(h.broker.calls.filter((c) => c.startsWith('init:'))).toEqual([]);
    expect(await h.counts('counts', 0, false)).toEqual(new Map([['a', 1]]));
    expect(await h.counts('counts', 1, false)).toEqual(new Map([['b', 1]]));

    await h.pump(); // the records of the aborted transaction, processed again from memory
    expect(seeks, 'no seek: nothing is fetched again').toEqual([]);
    await h.commitAll();
    expect(h.broker.calls.filter((c) => c.startsWith('init:'))).toEqual(['init:app-instance-1']);
    expect(await h.counts('counts', 0, true)).toEqual(new Map([['a', 2]]));
    expect(await h.counts('counts', 1, true)).toEqual(new Map([['b', 2]]));
    expect(outputCounts(h, 'a')).toEqual([1, 2]);
    expect(outputCounts(h, 'b')).toEqual([1, 2]);
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(2);
  });

  it('processes again, in order and once, both the aborted cut\'s records and those processed while it was committing', async () => {
    const h = await startTwoPartitions();
    const held = await failingCommitHeldWhileX3IsProcessed(h);
    send(h.broker, 'in', 0, 'a', 'x4'); // fetched, not processed
    await held.finish();
    expect(h.manager.localTasks().find((t) => t.partition === 0)?.state).toBe('RUNNING');
    // Back to the last commit: a → 1, and x1..x3 wait in memory again, before x4.
    expect(await h.counts('counts', 0, false)).toEqual(new Map([['a', 1]]));
    await h.pump();
    await h.commitAll();
    expect(await h.counts('counts', 0, true)).toEqual(new Map([['a', 5]]));
    expect(outputCounts(h, 'a')).toEqual([1, 2, 3, 4, 5]);
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(5);
  });

  it('never commits past the records of an aborted transaction for a task revoked while it was in flight', async () => {
    const h = await startTwoPartitions();
    const held = await failingCommitHeldWhileX3IsProcessed(h);
    // A cooperative rebalance takes partition 0 while its transaction commits — and fails.
    const revoked = h.manager.onRevoked([{ topic: 'in', partition: 0 }], false);
    await held.finish();
    await revoked;
    expect(h.failures.commitFailures).toBe(0);
    // The records of the aborted transaction are not committed, and neither is an offset past
    // them (the task's last commit on close would otherwise carry x3's position): the next
    // owner starts at x1.
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(1);
    expect(outputCounts(h, 'a')).toEqual([1]);
  });

  it('gives revoked partitions up at once when no cycle is under way: their uncommitted work is dropped, never committed', async () => {
    const partitions = [0, 1, 2, 3, 4, 5];
    const h = await harnesses.start({
      topology: countTopology(), partitions: 6, broker: brokerWithTopics(['in', 'out'], 6), eosV2: true,
      options: { maxConcurrentControlOps: 2 },
    });
    h.ports.consumer.assign(partitions.map((partition) => ({ topic: 'in', partition })));
    await h.manager.control.idle();
    await waitFor(() => h.manager.localTasks().length === 6 && h.manager.localTasks().every((t) => t.state === 'RUNNING'));
    for (const partition of partitions) send(h.broker, 'in', partition, `k${partition}`, 'v');
    await h.pump();
    h.broker.calls.length = 0;
    await h.manager.onRevoked([1, 2, 3, 4, 5].map((partition) => ({ topic: 'in', partition })), false);
    // librdkafka holds every partition's fetches, the staying ones too, until onRevoked settles:
    // no transaction is waited for when none carries offsets of the revoked partitions.
    expect(h.broker.calls).toEqual([]);
    expect(h.manager.localTasks().map((t) => t.partition)).toEqual([0]);
    await h.manager.control.idle();
    await h.commitAll();
    // The next owner processes k1..k5 again from the committed offsets (none): nothing of them
    // may be committed here, ever.
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(1);
    for (const partition of [1, 2, 3, 4, 5]) expect(h.broker.groupOffsets.get(`app:in:${partition}`)).toBeUndefined();
    for (const partition of [1, 2, 3, 4, 5]) expect(outputCountsIn(h, 6, `k${partition}`)).toEqual([]);
    expect(outputCountsIn(h, 6, 'k0')).toEqual([1]);
  });

  it('waits for the cycle under way to send its offsets, not for its commit; its cut stays in it, later work of the revoked task is dropped, and the task closes after the cycle', async () => {
    const h = await startTwoPartitions();
    const { releaseOffsets, releaseCommit, inFlight } = await y0CutAndHeld(h);
    // After the cut: y1 goes into the revoked task's next transaction, which never comes.
    send(h.broker, 'in', 1, 'b', 'y1');
    send(h.broker, 'in', 0, 'a', 'x0');
    await h.pump();
    const task = h.manager.localTasks().find((t) => t.partition === 1);
    let settled = false;
    const revoked = h.manager.onRevoked([{ topic: 'in', partition: 1 }], false).then(() => { settled = true; });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(settled, 'the cut\'s offsets are not the transaction\'s yet').toBe(false);
    releaseOffsets();
    await revoked;
    expect(h.steps).toContain('0_1:after-send-offsets');
    expect(h.steps).not.toContain('0_1:after-kafka-commit');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(task?.state, 'closed only after the cycle, whose store write it still needs').toBe('RUNNING');
    releaseCommit();
    await inFlight;
    await h.manager.control.idle();
    expect(task?.state).toBe('CLOSED');
    await h.pump();
    await h.commitAll();
    expect(h.broker.groupOffsets.get('app:in:1')).toBe(1);
    expect(outputCounts(h, 'b')).toEqual([1]);
    expect(outputCounts(h, 'a')).toEqual([1]);
  });

  it('never cuts a revoked task, whatever it still holds', async () => {
    const h = await startTwoPartitions();
    send(h.broker, 'in', 1, 'b', 'y0');
    await h.pump();
    const task = h.manager.localTasks().find((t) => t.partition === 1)!;
    expect(task.hasUncommitted()).toBe(true);
    // A cycle computes the tasks it cuts when it starts and cuts them one slice at a time: one
    // revoked in between must not be cut (its offsets would go out under the current generation).
    task.revoke();
    expect(task.cut()).toBeNull();
  });

  it('drops a revoked task\'s uncommitted work at the revocation: its uncommitted view shows the committed state while it waits to close', async () => {
    const h = await startTwoPartitions();
    send(h.broker, 'in', 1, 'b', 'y0');
    await h.pump();
    await h.commitAll();
    send(h.broker, 'in', 1, 'b', 'y1');
    await h.pump();
    const task = h.manager.localTasks().find((t) => t.partition === 1)!;
    const uncommitted = async (): Promise<number | null> => {
      const value = await task.stores!.store('counts').view({ readCommitted: false }).get(Buffer.from('b'));
      return value === null || value === undefined ? null : serdes.int32.deserialize(value);
    };
    expect(await uncommitted()).toBe(2);
    let releaseClose!: () => void;
    // Task 0_1's operations run in order: its close waits behind this one.
    h.manager.control.enqueue({ key: 'test:hold-0_1', group: '0_1', run: () => new Promise<void>((resolve) => { releaseClose = resolve; }) });
    await h.manager.onRevoked([{ topic: 'in', partition: 1 }], false);
    expect(task.state).toBe('RUNNING');
    expect(await uncommitted()).toBe(1);
    releaseClose();
    await h.manager.control.idle();
    expect(task.state).toBe('CLOSED');
  });

  it('commits nothing of a revoked task whose transaction aborts after the partition was given up; the staying task rewinds and commits once', async () => {
    const h = await startTwoPartitions();
    send(h.broker, 'in', 0, 'a', 'x0');
    send(h.broker, 'in', 1, 'b', 'y0');
    await h.pump();
    const releaseCommit = held(h, 'hold');
    h.failures.commitFailures = 1;
    const inFlight = h.commitAll();
    await waitFor(() => h.steps.includes('0_1:after-send-offsets'));
    await h.manager.onRevoked([{ topic: 'in', partition: 1 }], false);
    releaseCommit();
    await inFlight;
    await h.manager.control.idle();
    await h.pump();
    await h.commitAll();
    expect(h.broker.groupOffsets.get('app:in:1')).toBeUndefined();
    expect(outputCounts(h, 'b')).toEqual([]);
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(1);
    expect(outputCounts(h, 'a')).toEqual([1]);
  });

  it('settles a loss only once the cycle under way has sent the lost task\'s offsets, and re-opens the task only after that cycle: it starts from the offsets the cycle committed', async () => {
    const h = await startTwoPartitions();
    const { releaseOffsets, releaseCommit, inFlight } = await y0CutAndHeld(h);
    // Lost (the session expired) while the cut's offsets are unsent: librdkafka rejoins once
    // onRevoked settles, and offsets sent after that would carry the generation it rejoins with.
    let settled = false;
    const lost = h.manager.onRevoked([{ topic: 'in', partition: 1 }], true).then(() => { settled = true; });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled, 'the cut\'s offsets are not sent yet').toBe(false);
    releaseOffsets();
    await lost;
    // Assigned again while the cycle commits: the opening must wait for the cycle's end, or it
    // reads the offsets from before the cut.
    h.ports.consumer.assign([{ topic: 'in', partition: 0 }, { topic: 'in', partition: 1 }]);
    const task = h.manager.localTasks().find((t) => t.partition === 1)!;
    // The opening has started (it left the queue's pending operations): without the wait it
    // would be RESTORING at once.
    await waitFor(() => !h.manager.control.pendingIn('0_1').some((key) => key.startsWith('open:')));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(task.state, 'not re-opened while the cycle holds its cut').toBe('SUSPENDED');
    releaseCommit();
    await inFlight;
    await waitFor(() => task.state === 'RUNNING');
    await h.pump();
    await h.commitAll();
    expect(h.broker.groupOffsets.get('app:in:1')).toBe(1);
    expect(outputCounts(h, 'b')).toEqual([1]);
    expect(await h.counts('counts', 1)).toEqual(new Map([['b', 1]]));
  });

  it('rolls back and re-opens every task of a transaction with an unknown outcome, and re-processes exactly once', async () => {
    const h = await startTwoPartitions();
    h.failures.abortUnknown = true;
    await commitOneThenProcessAnother(h);
    h.broker.calls.length = 0;
    h.failures.commit = true;
    await h.commitAll();
    h.failures.commit = false;
    // Both tasks were in the failed transaction: rolled back to their last commit, then re-opened
    // after a new InitProducerId.
    expect(h.manager.localTasks().some((t) => t.state !== 'RUNNING')).toBe(true);
    expect(await h.counts('counts', 0, false)).toEqual(new Map([['a', 1]]));
    expect(await h.counts('counts', 1, false)).toEqual(new Map([['b', 1]]));
    await waitFor(() => h.manager.localTasks().every((t) => t.state === 'RUNNING'));

    await h.pump();
    await h.commitAll();
    expect(await h.counts('counts', 0, true)).toEqual(new Map([['a', 2]]));
    expect(await h.counts('counts', 1, true)).toEqual(new Map([['b', 2]]));
    // The aborted transaction's output is never read; each update is there once.
    expect(outputCounts(h, 'a')).toEqual([1, 2]);
    expect(outputCounts(h, 'b')).toEqual([1, 2]);
    expect(h.broker.calls.filter((c) => c.startsWith('init:'))).toEqual(['init:app-instance-1']);
    expect(h.fatal).toEqual([]);
  });

  it('initialises the instance producer once for all tasks, before any task reads its offsets', async () => {
    const h = await startTwoPartitions();
    expect(h.broker.calls.filter((c) => c.startsWith('init:'))).toEqual(['init:app-instance-1']);
  });
});
