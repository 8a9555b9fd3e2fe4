/**
 * An uncommitted change stream follows the uncommitted view: writes as they land, rollbacks as
 * one event per dropped key with the value now visible — even where Positions went backwards —
 * so a client applying the events holds what an uncommitted read returns.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import { openChangeStream, type ChangeEvent, type ChangeStreamRequest } from '../../../src/query/change-stream.js';
import type { KeyValueStorePartition } from '../../../src/store/types.js';
import { createKvFixture, type KvFixture } from './change-stream-fixture.js';

let kv: KvFixture | undefined;

afterEach(async () => {
  await kv?.close();
  kv = undefined;
});

async function setup(partitions: number) {
  kv = await createKvFixture(partitions);
  const fixture = kv;
  const open = (request: Partial<ChangeStreamRequest>) =>
    openChangeStream(fixture.provider, { store: 'kv', selector: { type: 'range' }, readCommitted: false, maxBuffered: 100, ...request });
  /** A write at an explicit input offset (a replay writes at offsets already seen). */
  const write = (key: string, value: string, offset: number): void => {
    const p = fixture.partitionOf(key);
    fixture.tasks[p]!.store('kv').put(Buffer.from(key), Buffer.from(value), { topic: 'in', partition: p, offset });
  };
  return { ...fixture, open, write };
}

/** Reads `n` events. */
async function take(stream: AsyncIterableIterator<ChangeEvent>, n: number): Promise<ChangeEvent[]> {
  const events: ChangeEvent[] = [];
  for (let i = 0; i < n; i++) {
    const result = await stream.next();
    if (result.done === true) throw new Error(`stream ended after ${i} events`);
    events.push(result.value);
  }
  return events;
}

/** An event ready by the next macrotask, or 'none' (the in-memory store reads through promises only). */
async function ready(stream: AsyncIterableIterator<ChangeEvent>): Promise<'none' | 'some'> {
  const next = stream.next();
  const result = await Promise.race([next, new Promise<'none'>((resolve) => setImmediate(() => resolve('none')))]);
  return result === 'none' ? 'none' : 'some';
}

const brief = (e: ChangeEvent) => [e.key.toString(), e.value?.toString() ?? null, e.initial];

function apply(state: Map<string, string>, events: readonly ChangeEvent[]): Map<string, string> {
  for (const e of events) {
    if (e.value === null) state.delete(e.key.toString());
    else state.set(e.key.toString(), e.value.toString());
  }
  return state;
}

async function uncommittedRead(stores: readonly KeyValueStorePartition[]): Promise<Map<string, string>> {
  const state = new Map<string, string>();
  for (const store of stores) {
    const view = store.view({ readCommitted: false });
    for await (const { key, value } of view.range()) state.set(key.toString(), value.toString());
    await view.close();
  }
  return state;
}

describe('an uncommitted change stream', () => {
  it('hears an abort take back what its initial view listed, below the view position, and then the replayed writes', async () => {
    const { put, commit, open, write, tasks } = await setup(1);
    put('a', 'committed'); // offset 0
    await commit();
    write('a', 'doomed', 1);
    write('b', 'doomed', 2);
    const stream = open({ initial: true });
    expect((await take(stream, 2)).map(brief)).toEqual([
      ['a', 'doomed', true],
      ['b', 'doomed', true],
    ]);
    tasks[0]!.abort();
    // Read now: the rollback comes out before the replay (which would replace b's waiting change).
    const events = await take(stream, 2);
    write('b', 'replayed', 2); // the replay without the aborted record at offset 1
    events.push(...(await take(stream, 1)));
    expect(events.map(brief)).toEqual([
      ['a', 'committed', false],
      ['b', null, false],
      ['b', 'replayed', false],
    ]);
    // A rollback's Position is the committed one; resumeAfter never goes back.
    expect(events[0]!.position.toJSON()).toEqual({ in: { '0': 0 } });
    expect(events[1]!.position.toJSON()).toEqual({ in: { '0': 0 } });
    expect(events[2]!.resumeAfter.toJSON()).toEqual({ in: { '0': 2 } });
    expect(await ready(stream)).toBe('none');
    expect(apply(new Map([['a', 'doomed'], ['b', 'doomed']]), events)).toEqual(await uncommittedRead([tasks[0]!.store('kv')]));
    await stream.return!();
  });

  it('resumed with after and initial after a rollback, lists the partition again instead of trusting the Position', async () => {
    const { open, write, tasks } = await setup(1);
    const selector = { type: 'keys' as const, keys: [Buffer.from('a')] };
    write('a', 'doomed', 5);
    const first = open({ selector, initial: true });
    const [seen] = await take(first, 1);
    expect(brief(seen!)).toEqual(['a', 'doomed', true]);
    await first.return!();
    tasks[0]!.abort(); // nothing committed: 'a' is gone, the position back below `after`
    const resumed = open({ selector, initial: true, after: seen!.resumeAfter });
    expect((await take(resumed, 1)).map(brief)).toEqual([['a', null, true]]);
    await resumed.return!();
  });

  it('ends with SUBSCRIPTION_OVERFLOW when writes outrun the reader, as a committed stream does', async () => {
    const { put, open } = await setup(1);
    const stream = open({ maxBuffered: 2 });
    for (let i = 0; i < 5; i++) put(`k${i}`, 'v');
    await take(stream, 2);
    await expect(stream.next()).rejects.toSatisfy((e) => isIqgateError(e, 'SUBSCRIPTION_OVERFLOW'));
  });

  it('hands a slow reader each key\'s latest change: rewrites of waiting keys replace them instead of filling the buffer', async () => {
    const { open, write, tasks } = await setup(1);
    const stream = open({ maxBuffered: 2 });
    for (let i = 0; i < 50; i++) {
      write('a', `a${i}`, 2 * i);
      write('b', `b${i}`, 2 * i + 1);
    }
    tasks[0]!.abort(); // and the rollback replaces them once more: both absent, at the empty committed Position
    write('a', 'last', 100);
    // One change per key, where the key first waited, with its latest value and Position.
    const events = await take(stream, 2);
    expect(events.map(brief)).toEqual([
      ['a', 'last', false],
      ['b', null, false],
    ]);
    expect(events.map((e) => e.position.toJSON())).toEqual([{ in: { '0': 100 } }, {}]);
    expect(await ready(stream)).toBe('none');
    await stream.return!();
  });

  it('does not change the committed stream: it never hears writes, aborts or rollbacks', async () => {
    const { put, commit, open, tasks } = await setup(2);
    const stream = open({ readCommitted: true });
    put('a', 'doomed');
    for (const task of tasks) task.abort();
    put('a', 'kept');
    await commit();
    expect((await take(stream, 1)).map(brief)).toEqual([['a', 'kept', false]]);
    expect(await ready(stream)).toBe('none');
    await stream.return!();
  });
});
