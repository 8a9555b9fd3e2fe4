/**
 * Change feeds over the task manager's stores (fake ports, in-memory stores): a feed whose
 * partition leaves the instance ends with PARTITION_REVOKED after the partition's last commit,
 * on the eager (kafkajs) and the cooperative (exactly-once v2) path; one whose instance stops
 * ends with STORE_CLOSED; one whose task rolls back and re-opens after a failed commit, or
 * whose member lost the partition and got it back, carries on.
 */
import { describe, expect, it } from 'vitest';
import { IqgateError } from '../../../src/errors.js';
import { openChangeStream, type ChangeEvent } from '../../../src/query/change-stream.js';
import type { StateProvider, StoreDescriptor } from '../../../src/query/state-provider.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Serde } from '../../../src/store/types.js';
import { send, type Harness } from './manager-harness.js';
import { brokerWithTopics, countTopology, harnessesClosedAfterEach, waitFor } from './processing-fixture.js';

const harnesses = harnessesClosedAfterEach();
const TP = [{ topic: 'in', partition: 0 }, { topic: 'in', partition: 1 }];

const counts: StoreDescriptor = { name: 'counts', keySerde: serdes.string as Serde<unknown>, valueSerde: serdes.int32 as Serde<unknown>, partitions: 2 };

/** What the runtime's provider gives the query layer, over the harness's task manager. */
function providerOf(h: Harness): StateProvider {
  return {
    instanceState: () => 'RUNNING',
    stores: () => [counts],
    store: (name) => (name === counts.name ? counts : undefined),
    localPartition: (storeName, partition) => {
      const task = h.manager.localTasks().find((t) => t.partition === partition && t.stores !== null);
      return task === undefined ? undefined : { store: task.stores!.store(storeName), taskId: task.id, taskState: task.state, active: true };
    },
    tasks: () => [],
  };
}

async function startTwoPartitions(eosV2: boolean): Promise<Harness> {
  const h = await harnesses.start({ topology: countTopology(), partitions: 2, broker: brokerWithTopics(['in', 'out'], 2), eosV2 });
  h.ports.consumer.assign(TP);
  await h.manager.control.idle();
  await waitFor(() => h.manager.localTasks().length === 2 && h.manager.localTasks().every((t) => t.state === 'RUNNING'));
  return h;
}

/** A committed feed of one partition of `counts`. */
function feed(h: Harness, partition: number): AsyncIterableIterator<ChangeEvent> {
  return openChangeStream(providerOf(h), { store: 'counts', selector: { type: 'range' }, partitions: [partition], readCommitted: true, maxBuffered: 100 });
}

const countOf = (event: ChangeEvent): [string, number] => [event.key.toString(), serdes.int32.deserialize(event.value!)];

/** Reads `n` events, failing if the feed ends or errs first. */
async function take(stream: AsyncIterableIterator<ChangeEvent>, n: number): Promise<Array<[string, number]>> {
  const out: Array<[string, number]> = [];
  for (let i = 0; i < n; i++) {
    const result = await stream.next();
    if (result.done === true) throw new Error('the feed ended');
    out.push(countOf(result.value));
  }
  return out;
}

/** The error the feed ends with once its remaining events are read; those events too. */
async function ending(stream: AsyncIterableIterator<ChangeEvent>): Promise<{ events: Array<[string, number]>; error: IqgateError }> {
  const events: Array<[string, number]> = [];
  for (;;) {
    try {
      const result = await stream.next();
      if (result.done === true) throw new Error('the feed ended without an error');
      events.push(countOf(result.value));
    } catch (error) {
      if (!(error instanceof IqgateError)) throw error;
      return { events, error };
    }
  }
}

/** A committed feed of partition 1 that has read the first commit there: b → 1. */
async function feedPastFirstCommit(h: Harness): Promise<AsyncIterableIterator<ChangeEvent>> {
  const stream = feed(h, 1);
  send(h.broker, 'in', 1, 'b', 'y0');
  await h.pump();
  await h.commitAll();
  expect(await take(stream, 1)).toEqual([['b', 1]]);
  return stream;
}

describe('change feeds over the task manager', () => {
  it('a feed whose task was revoked ends with PARTITION_REVOKED even when a stop begins before the task has closed (exactly-once v2)', async () => {
    const h = await startTwoPartitions(true);
    const revokedFeed = await feedPastFirstCommit(h);
    // onRevoked settles before the revoked task closes; its close waits behind this operation.
    let release!: () => void;
    const held = new Promise<void>((resolve) => { release = resolve; });
    h.manager.control.enqueue({ key: 'test:hold-0_1', group: '0_1', run: () => held });
    await h.manager.onRevoked([TP[1]!], false);
    const stopping = h.manager.commitAll(); // the instance starts stopping meanwhile
    release();
    await stopping;
    const { error } = await ending(revokedFeed);
    expect(error.code).toBe('PARTITION_REVOKED');
  });

  it.each([
    // The task's last commit on its way out carries y1.
    ['eager (per-task transactions)', false, [['b', 2]], 1],
    // y1 was never cut into a transaction: the revocation drops it (the next owner counts it).
    ['cooperative (exactly-once v2)', true, [], 0],
  ])('end with PARTITION_REVOKED after the revoked task\'s last commit, %s; the retained partition\'s feed carries on', async (_name, eosV2, lastEvents, lastOffset) => {
    const h = await startTwoPartitions(eosV2);
    const revokedFeed = feed(h, 1);
    const retainedFeed = feed(h, 0);
    send(h.broker, 'in', 1, 'b', 'y0');
    send(h.broker, 'in', 0, 'a', 'x0');
    await h.pump();
    await h.commitAll();
    expect(await take(revokedFeed, 1)).toEqual([['b', 1]]);
    expect(await take(retainedFeed, 1)).toEqual([['a', 1]]);
    // Processed, not committed.
    send(h.broker, 'in', 1, 'b', 'y1');
    await h.pump();
    if (eosV2) await h.manager.onRevoked([TP[1]!], false);
    else h.ports.consumer.assign([TP[0]!]); // kafkajs' eager rebalance: the new assignment without partition 1
    await h.manager.control.idle();

    const { events, error } = await ending(revokedFeed);
    expect(events).toEqual(lastEvents);
    expect(error.code).toBe('PARTITION_REVOKED');
    expect(error.retriable).toBe(true);
    expect(error.details).toMatchObject({ store: 'counts', partition: 1, taskId: '0_1' });
    expect(error.details.resumeAfter).toEqual({ in: { '1': lastOffset } }); // the offset of the last change handed out

    send(h.broker, 'in', 0, 'a', 'x1');
    await h.pump();
    await h.commitAll();
    expect(await take(retainedFeed, 1)).toEqual([['a', 2]]);
    await retainedFeed.return!();
  });

  it('end with STORE_CLOSED, marked as a shutdown, when the instance stops, after its last commit', async () => {
    const h = await startTwoPartitions(true);
    const stream = feed(h, 0);
    send(h.broker, 'in', 0, 'a', 'x0');
    await h.pump();
    await h.manager.commitAll();
    await h.manager.closeAll();
    const { events, error } = await ending(stream);
    expect(events).toEqual([['a', 1]]);
    expect(error.code).toBe('STORE_CLOSED');
    expect(error.details).toMatchObject({ store: 'counts', partition: 0, shutdown: true });
  });

  it('carry on through a failed commit: the task rolls back and re-opens on the same stores, and later commits arrive', async () => {
    const h = await startTwoPartitions(false);
    const stream = feed(h, 0);
    send(h.broker, 'in', 0, 'a', 'x0');
    await h.pump();
    h.failures.send = true;
    await h.commitAll(); // fails: rolled back, re-opened after a back-off
    h.failures.send = false;
    expect(h.manager.localTasks().find((t) => t.partition === 0)?.state).toBe('SUSPENDED');
    await waitFor(() => h.manager.localTasks().every((t) => t.state === 'RUNNING'));
    await h.pump(); // re-reads x0 from the committed offset
    await h.commitAll();
    // The aborted attempt never reached the committed feed; the re-processed one did, once.
    expect(await take(stream, 1)).toEqual([['a', 1]]);
    send(h.broker, 'in', 0, 'a', 'x1');
    await h.pump();
    await h.commitAll();
    expect(await take(stream, 1)).toEqual([['a', 2]]);
    await stream.return!();
  });

  it('carry on while a lost partition waits for the next assignment, and end with PARTITION_REVOKED when it does not come back', async () => {
    const h = await startTwoPartitions(true);
    const stream = await feedPastFirstCommit(h);
    // The member's session expired: the task rolls back and waits, its stores open.
    await h.manager.onRevoked(TP, true);
    h.ports.consumer.assign(TP); // the same member gets it back: re-opened on the same stores
    await h.manager.control.idle();
    await waitFor(() => h.manager.localTasks().every((t) => t.state === 'RUNNING'));
    send(h.broker, 'in', 1, 'b', 'y1');
    await h.pump();
    await h.commitAll();
    expect(await take(stream, 1)).toEqual([['b', 2]]);
    await h.manager.onRevoked(TP, true);
    h.ports.consumer.assign([TP[0]!]); // this time it went elsewhere
    await h.manager.control.idle();
    const { events, error } = await ending(stream);
    expect(events).toEqual([]);
    expect(error.code).toBe('PARTITION_REVOKED');
  });
});
