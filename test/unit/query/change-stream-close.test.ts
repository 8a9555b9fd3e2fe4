/**
 * A change stream whose partition closes under it ends with the closer's coded error, after the
 * events it still holds, instead of going silent; a partition that stays open (a task rolled
 * back and restored after a failed commit) keeps its streams going.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { IqgateError, isIqgateError } from '../../../src/errors.js';
import { openChangeStream, type ChangeEvent } from '../../../src/query/change-stream.js';
import { Position } from '../../../src/store/position.js';
import { createKvFixture, type KvFixture } from './change-stream-fixture.js';

let kv: KvFixture | undefined;

async function setup(partitions = 2): Promise<KvFixture> {
  kv = await createKvFixture(partitions);
  return kv;
}

afterEach(async () => {
  await kv?.close();
  kv = undefined;
});

const revoked = (taskId: string): IqgateError => new IqgateError('PARTITION_REVOKED', `task ${taskId} left`, { retriable: true, details: { taskId } });

/** Reads events until the stream rejects; returns them with the error (fails on a normal end). */
async function readToError(stream: AsyncIterableIterator<ChangeEvent>): Promise<{ events: ChangeEvent[]; error: unknown }> {
  const events: ChangeEvent[] = [];
  for (;;) {
    try {
      const result = await stream.next();
      if (result.done === true) throw new Error('the stream ended without an error');
      events.push(result.value);
    } catch (error) {
      return { events, error };
    }
  }
}

describe('a change stream whose partition closes', () => {
  it('hands out the events of the last commit, then ends with the closer\'s code, store, partition and resumeAfter', async () => {
    const { provider, tasks, put, commit, partitionOf } = await setup(2);
    const stream = openChangeStream(provider, { store: 'kv', selector: { type: 'range' }, readCommitted: true, maxBuffered: 100 });
    const p = partitionOf('a');
    put('a', '1');
    await commit();
    const first = (await stream.next()).value!;
    put('a', '2');
    await commit(); // buffered: nobody is reading
    await tasks[p]!.close(revoked(`t${p}`));
    const { events, error } = await readToError(stream);
    expect(events.map((e) => e.value?.toString())).toEqual(['2']);
    expect(isIqgateError(error, 'PARTITION_REVOKED')).toBe(true);
    const coded = error as IqgateError;
    expect(coded.retriable).toBe(true);
    expect(coded.details).toMatchObject({ taskId: `t${p}`, store: 'kv', partition: p });
    // resumeAfter covers every event handed out, the last one included.
    expect(coded.details.resumeAfter).toEqual(events[0]!.resumeAfter.toJSON());
    expect(Position.fromJSON(coded.details.resumeAfter as never).dominates(first.position)).toBe(true);
    // The whole stream ended: the other partition's listener is gone too, and it stays ended.
    expect(tasks[1 - p]!.store('kv').listenerCount()).toBe(0);
    expect((await stream.next()).done).toBe(true);
  });

  it('rejects a reader that is already waiting at once', async () => {
    const { provider, tasks } = await setup(1);
    const stream = openChangeStream(provider, { store: 'kv', selector: { type: 'keys', keys: [Buffer.from('k')] }, readCommitted: false, maxBuffered: 100 });
    const waiting = stream.next();
    await tasks[0]!.close(revoked('t0'));
    await expect(waiting).rejects.toMatchObject({ code: 'PARTITION_REVOKED', details: { store: 'kv', partition: 0 } });
  });

  it('says STORE_CLOSED when the store closes without a reason (the store engine closing)', async () => {
    const { provider, tasks } = await setup(1);
    const stream = openChangeStream(provider, { store: 'kv', selector: { type: 'range' }, readCommitted: true, maxBuffered: 100 });
    await tasks[0]!.close();
    const { events, error } = await readToError(stream);
    expect(events).toEqual([]);
    expect(isIqgateError(error, 'STORE_CLOSED')).toBe(true);
    // No event was handed out and no `after` given: there is nothing to resume from.
    expect((error as IqgateError).details.resumeAfter).toBeUndefined();
  });

  it('ends in the middle of an initial listing without the rest of it', async () => {
    const { provider, tasks, put, commit } = await setup(1);
    for (let i = 0; i < 5; i++) put(`k${i}`, String(i));
    await commit();
    const stream = openChangeStream(provider, { store: 'kv', selector: { type: 'range' }, readCommitted: true, initial: true, maxBuffered: 100 });
    const firstEntry = (await stream.next()).value!;
    expect(firstEntry.initial).toBe(true);
    await tasks[0]!.close(revoked('t0'));
    const { events, error } = await readToError(stream);
    expect(events).toEqual([]);
    expect(error).toMatchObject({ code: 'PARTITION_REVOKED' });
    // The partition's listing did not finish: its position is not part of resumeAfter.
    expect((error as IqgateError).details.resumeAfter).toBeUndefined();
  });

  it('keeps the `after` it was opened with as resumeAfter when nothing newer was handed out', async () => {
    const { provider, tasks } = await setup(1);
    const after = Position.empty();
    after.advance('in', 0, 41);
    const stream = openChangeStream(provider, { store: 'kv', selector: { type: 'range' }, readCommitted: true, after, maxBuffered: 100 });
    await tasks[0]!.close(revoked('t0'));
    await expect(stream.next()).rejects.toMatchObject({ details: { resumeAfter: after.toJSON() } });
  });

  it('follows a partition rolled back and restored in place (a failed commit): no end, the restored tail arrives as committed', async () => {
    const { provider, tasks, put, commit, partitionOf } = await setup(1);
    const stream = openChangeStream(provider, { store: 'kv', selector: { type: 'range' }, readCommitted: true, maxBuffered: 100 });
    put('a', '1');
    await commit();
    const seen = (await stream.next()).value!;
    // The task fails its next commit: what it processed is dropped (never on the committed
    // feed), then restore replays the changelog tail that the Kafka transaction did commit.
    put('a', 'dropped');
    tasks[0]!.flush();
    tasks[0]!.abort();
    const restoredAt = seen.position.copy().merge(Position.fromJSON({ in: { [String(partitionOf('a'))]: 2 } }));
    await tasks[0]!.restore('kv', [{ key: Buffer.from('a'), value: Buffer.from('restored') }], 2, restoredAt);
    put('a', 'after');
    await commit();
    const next = [(await stream.next()).value!, (await stream.next()).value!];
    expect(next.map((e) => e.value?.toString())).toEqual(['restored', 'after']);
    expect(tasks[0]!.store('kv').listenerCount()).toBe(1);
    await stream.return!();
  });
});
