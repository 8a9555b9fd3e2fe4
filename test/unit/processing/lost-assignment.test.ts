/**
 * A lost assignment (TaskManager.onRevoked with `lost`: the member's session ran out) while a
 * task's own transaction commits (exactly-once v1, PerTaskCommits, as on kafkajs). The task stops
 * answering as active at once, but rolls back only once that commit has settled, in the control
 * queue: rolled back under it, the store commit would write a batch the rollback had emptied, or
 * the rollback would drop work the Kafka transaction then committed.
 */
import { describe, expect, it } from 'vitest';
import { serdes } from '../../../src/store/serdes.js';
import type { StreamTask } from '../../../src/processing/stream-task.js';
import type { Harness } from './manager-harness.js';
import { send } from './manager-harness.js';
import { harnessesClosedAfterEach, waitFor } from './processing-fixture.js';

const TP = { topic: 'in', partition: 0 };
const harnesses = harnessesClosedAfterEach();

/** The read_committed counts the task sent to `out`, in order. */
function output(h: Harness): number[] {
  return h.broker.readCommitted('out', 0, 0).records.map((r) => serdes.int32.deserialize(r.value!));
}

/** Holds the task producer's next Kafka commit until `release()`; `reached` once it is under way, `settled` once it has ended. */
function holdCommit(h: Harness): { release: () => void; reached: () => boolean; settled: () => boolean } {
  const producer = h.manager.localTasks()[0]!.producer!;
  const commit = producer.commit.bind(producer);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => { release = resolve; });
  let reached = false;
  let settled = false;
  producer.commit = async () => {
    reached = true;
    await gate;
    try {
      await commit();
    } finally {
      settled = true;
    }
  };
  return { release, reached: () => reached, settled: () => settled };
}

/** Starts the task's commit, holds its Kafka commit under way, and reports the assignment lost meanwhile. */
async function loseWhileCommitting(h: Harness, task: StreamTask): Promise<{ held: ReturnType<typeof holdCommit>; lost: Promise<void> }> {
  const held = holdCommit(h);
  h.manager.requestCommit(task);
  await waitFor(held.reached);
  return { held, lost: h.manager.onRevoked([TP], true) };
}

/** The member is back in its group with the partition: the task re-opens and runs. */
async function assignAgain(h: Harness, task: StreamTask): Promise<void> {
  h.ports.consumer.assign([TP]);
  await h.manager.control.idle();
  await waitFor(() => task.state === 'RUNNING');
}

describe('a lost assignment while the task\'s own transaction commits', () => {
  it('stops answering as active at once and rolls back after the commit: the store holds what Kafka committed, and the task counts on from it when assigned again', async () => {
    const h = await harnesses.startOnInput();
    const task = h.manager.localTasks()[0]!;
    send(h.broker, 'in', 0, 'a', 'x0');
    send(h.broker, 'in', 0, 'a', 'x1');
    await h.pump();
    const { held, lost } = await loseWhileCommitting(h, task);
    expect(task.state).toBe('SUSPENDED'); // no longer answers as active
    expect(task.revoked).toBe(true); // takes no records
    expect(h.manager.onBatch(TP, [])).toBe(false);
    held.release();
    await lost;
    await h.manager.control.idle();
    expect(h.commits).toEqual([2]);
    expect(output(h)).toEqual([1, 2]);
    expect(await h.counts('counts', 0)).toEqual(new Map([['a', 2]]));
    expect(task.producer).toBeNull(); // discarded once the commit had settled

    await assignAgain(h, task);
    send(h.broker, 'in', 0, 'a', 'x2');
    await h.pump();
    await h.commitAll();
    expect(output(h)).toEqual([1, 2, 3]);
    expect(await h.counts('counts', 0)).toEqual(new Map([['a', 3]]));
  });

  it('takes nothing a failed commit leaves behind for committed: the task re-opens from Kafka\'s committed state', async () => {
    const h = await harnesses.startOnInput();
    const task = h.manager.localTasks()[0]!;
    send(h.broker, 'in', 0, 'a', 'x0');
    await h.pump();
    await h.commitAll();
    send(h.broker, 'in', 0, 'a', 'x1');
    await h.pump();
    const { held, lost } = await loseWhileCommitting(h, task);
    h.failures.commit = true; // the new owner's InitProducerId fenced it, say
    held.release();
    await lost;
    await h.manager.control.idle();
    expect(output(h)).toEqual([1]);
    expect(await h.counts('counts', 0)).toEqual(new Map([['a', 1]]));
    h.failures.commit = false;
    await assignAgain(h, task);
    await h.pump(); // x1 again, from the committed offset
    await h.commitAll();
    expect(output(h)).toEqual([1, 2]);
    expect(await h.counts('counts', 0)).toEqual(new Map([['a', 2]]));
  });

  // The zombie rule (task-recovery.ts) waits fencedRetryMs (10 s) after a fence under the
  // assignment the task was opened with: a fence of the commit that was in flight at the loss
  // must not hold the re-open the next assignment asks for, whichever comes first.
  for (const order of ['fenced while lost, then assigned again', 'assigned again, then fenced'] as const) {
    it(`re-opens on the next assignment when the commit in flight at the loss is fenced (${order})`, async () => {
      const h = await harnesses.startOnInput();
      const task = h.manager.localTasks()[0]!;
      const transactionalId = task.producer!.transactionalId!;
      send(h.broker, 'in', 0, 'a', 'x0');
      await h.pump();
      const { held, lost } = await loseWhileCommitting(h, task);
      const fence = async (): Promise<void> => {
        h.broker.initProducer(transactionalId); // the partition's new owner opened the task
        held.release();
        await waitFor(held.settled);
      };
      if (order === 'fenced while lost, then assigned again') await fence();
      h.ports.consumer.assign([TP]); // the partition is this member's again
      if (order === 'assigned again, then fenced') await fence();
      await lost;
      await waitFor(() => task.state === 'RUNNING', 2_000);
      expect(output(h)).toEqual([]);
      await h.pump(); // x0 again, from the committed offset
      await h.commitAll();
      expect(output(h)).toEqual([1]);
      expect(await h.counts('counts', 0)).toEqual(new Map([['a', 1]]));
    });
  }
});
