import { afterEach, describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import { openChangeStream, type ChangeEvent, type ChangeStreamRequest } from '../../../src/query/change-stream.js';
import { Position } from '../../../src/store/position.js';
import type { KeyValue, ReadView, TaskStores } from '../../../src/store/types.js';
import { createKvFixture, type KvFixture } from './change-stream-fixture.js';

let kv: KvFixture | undefined;
let tasks: readonly TaskStores[] = [];

async function setup(partitions = 3) {
  kv = await createKvFixture(partitions);
  tasks = kv.tasks;
  const provider = kv.provider;
  const open = (request: Partial<ChangeStreamRequest> & Pick<ChangeStreamRequest, 'selector'>) =>
    reader(openChangeStream(provider, { store: 'kv', readCommitted: true, maxBuffered: 100, initial: true, ...request }));
  return { provider, put: kv.put, commit: kv.commit, open, partitionOf: kv.partitionOf };
}

afterEach(async () => {
  await kv?.close();
  kv = undefined;
});

const keys = (...list: string[]) => ({ type: 'keys' as const, keys: list.map((k) => Buffer.from(k)) });

/**
 * Reads a stream without losing events: a next() that `ready` left pending is the one the
 * following read gets.
 */
function reader(stream: AsyncIterableIterator<ChangeEvent>) {
  let pending: Promise<IteratorResult<ChangeEvent>> | undefined;
  const next = (): Promise<IteratorResult<ChangeEvent>> => {
    const result = pending ?? stream.next();
    pending = undefined;
    return result;
  };
  return {
    async take(n: number): Promise<ChangeEvent[]> {
      const events: ChangeEvent[] = [];
      for (let i = 0; i < n; i++) {
        const result = await next();
        if (result.done === true) throw new Error(`stream ended after ${i} events`);
        events.push(result.value);
      }
      return events;
    },
    /**
     * An event ready now, or 'none'. The in-memory store reads through promises only, so by
     * the next macrotask every entry and every buffered event has been handed out.
     */
    async ready(): Promise<ChangeEvent | 'none'> {
      pending ??= stream.next();
      const result = await Promise.race([pending, new Promise<'none'>((resolve) => setImmediate(() => resolve('none')))]);
      if (result === 'none') return 'none';
      pending = undefined;
      return result.done === true ? 'none' : result.value;
    },
    next,
    return: () => stream.return!(),
  };
}

const brief = (e: ChangeEvent) => ({ key: e.key.toString(), value: e.value?.toString() ?? null, partition: e.partition, initial: e.initial });

/** The order initial entries must come in: ascending partition, then key bytes. */
function listingOrder(entries: ReadonlyArray<[string, string | null]>, partitionOf: (key: string) => number) {
  return [...entries]
    .sort(([a], [b]) => partitionOf(a) - partitionOf(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)))
    .map(([key, value]) => ({ key, value, partition: partitionOf(key), initial: true }));
}

/** Records every view the partitions hand out, whether it was closed, and whether its iterators ended. */
function spyOnViews(): { views: Array<{ partition: number; closed: boolean; openIterators: number }> } {
  const views: Array<{ partition: number; closed: boolean; openIterators: number }> = [];
  for (const task of tasks) {
    const store = task.store('kv');
    const view = store.view.bind(store);
    store.view = (options) => {
      const v = view(options);
      const record = { partition: v.partition, closed: false, openIterators: 0 };
      views.push(record);
      const tracked = (iterator: AsyncIterableIterator<KeyValue>): AsyncIterableIterator<KeyValue> => {
        record.openIterators++;
        let open = true;
        const end = () => {
          if (open) record.openIterators--;
          open = false;
        };
        const wrapped: AsyncIterableIterator<KeyValue> = {
          next: async () => {
            const step = await iterator.next();
            if (step.done === true) end();
            return step;
          },
          return: async () => {
            end();
            return (await iterator.return?.()) ?? { done: true, value: undefined };
          },
          [Symbol.asyncIterator]: () => wrapped,
        };
        return wrapped;
      };
      return Object.assign(Object.create(v) as ReadView, {
        getMany: v.getMany.bind(v),
        range: (o?: Parameters<ReadView['range']>[0]) => tracked(v.range(o)),
        prefix: (p: Buffer, o?: Parameters<ReadView['prefix']>[1]) => tracked(v.prefix(p, o)),
        close: async () => {
          record.closed = true;
          await v.close();
        },
      });
    };
  }
  return { views };
}

describe('openChangeStream with initial', () => {
  it('lists every requested key once, present ones with their value and absent ones as deletes, partition after partition in key-byte order, then live changes', async () => {
    const { put, commit, open, partitionOf } = await setup();
    const present = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'];
    for (const key of present) put(key, `v-${key}`);
    put('gone', 'x');
    await commit();
    put('gone', null);
    await commit();
    const requested = [...present, 'gone', 'never', 'k3'];
    const stream = open({ selector: keys(...requested) });
    const expected = listingOrder(
      [...new Set(requested)].map((key): [string, string | null] => [key, present.includes(key) ? `v-${key}` : null]),
      partitionOf,
    );
    const events = await stream.take(expected.length);
    expect(events.map(brief)).toEqual(expected);
    for (const event of events) expect(event.position.equals(tasks[event.partition]!.store('kv').committedPosition())).toBe(true);
    put('k1', 'live');
    await commit();
    expect(brief((await stream.take(1))[0]!)).toEqual({ key: 'k1', value: 'live', partition: partitionOf('k1'), initial: false });
    await stream.return();
  });

  it('lists a range and a prefix partition after partition, each in key-byte order, only the entries in scope', async () => {
    const { put, commit, open, partitionOf } = await setup();
    const all = ['a', 'b1', 'b2', 'b3', 'b10', 'b20', 'b\u00ff', 'c', 'd'];
    for (const key of all) put(key, key.toUpperCase());
    await commit();
    const inRange = all.filter((k) => k >= 'b2' && k <= 'c');
    const range = open({ selector: { type: 'range', from: Buffer.from('b2'), to: Buffer.from('c') } });
    expect((await range.take(inRange.length)).map(brief)).toEqual(listingOrder(inRange.map((k) => [k, k.toUpperCase()]), partitionOf));
    expect(await range.ready()).toBe('none');
    await range.return();

    const withB = all.filter((k) => k.startsWith('b'));
    const prefix = open({ selector: { type: 'prefix', prefix: Buffer.from('b') } });
    expect((await prefix.take(withB.length)).map(brief)).toEqual(listingOrder(withB.map((k) => [k, k.toUpperCase()]), partitionOf));
    await prefix.return();
  });

  it('delivers a commit made right after subscribing exactly once, after the initial entries', async () => {
    const { put, commit, open, partitionOf } = await setup();
    for (const key of ['a', 'b', 'c', 'd']) put(key, 'old');
    await commit();
    const stream = open({ selector: { type: 'range' } });
    put('b', 'new');
    put('e', 'new');
    await commit();
    const events = await stream.take(6);
    expect(events.slice(0, 4).map(brief)).toEqual(listingOrder(['a', 'b', 'c', 'd'].map((k) => [k, 'old']), partitionOf));
    expect(events.slice(4).map(brief).sort((x, y) => x.key.localeCompare(y.key))).toEqual([
      { key: 'b', value: 'new', partition: partitionOf('b'), initial: false },
      { key: 'e', value: 'new', partition: partitionOf('e'), initial: false },
    ]);
    expect(await stream.ready()).toBe('none');
    await stream.return();
  });

  it('does not deliver again a commit whose data the view already holds but whose event comes later', async () => {
    const { put, open, partitionOf } = await setup(1);
    put('a', '1');
    const store = tasks[0]!.store('kv');
    const committing = tasks[0]!.commit({});
    // The commit's data and position reach the committed store a few microtasks before
    // complete() emits its event: open the stream in that window (as a LevelDB snapshot taken
    // while a batch write has not resolved yet would be).
    const probes: ReadView[] = [];
    let stream: ReturnType<typeof open> | undefined;
    while (stream === undefined) {
      const probe = store.view({ readCommitted: true });
      probes.push(probe);
      if (!probe.position.isEmpty() && store.committedPosition().isEmpty()) stream = open({ selector: { type: 'range' } });
      else await Promise.resolve();
      expect(probes.length, 'no window between the write and its event').toBeLessThan(50);
    }
    for (const probe of probes) await probe.close();
    await committing;
    expect((await stream.take(1)).map(brief)).toEqual([{ key: 'a', value: '1', partition: partitionOf('a'), initial: true }]);
    expect(await stream.ready()).toBe('none');
    await stream.return();
  });

  it('on an uncommitted feed, does not re-emit what the view held when the cache flushes with no new writes', async () => {
    const { put, open } = await setup(1);
    put('a', 'dirty');
    const stream = open({ selector: { type: 'range' }, readCommitted: false });
    // The flush emits 'a' at exactly the view's position: it is in the view already.
    tasks[0]!.flush();
    put('b', 'later');
    tasks[0]!.flush();
    const events = await stream.take(2);
    expect(events.map(brief)).toEqual([
      { key: 'a', value: 'dirty', partition: 0, initial: true },
      { key: 'b', value: 'later', partition: 0, initial: false },
    ]);
    expect(events.every((e) => !e.committed)).toBe(true);
    expect(await stream.ready()).toBe('none');
    await stream.return();
  });

  it('with after, lists only the partitions that changed since, and takes their current state', async () => {
    const { put, commit, open, partitionOf } = await setup();
    const all = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    for (const key of all) put(key, '1');
    await commit();
    expect(new Set(all.map(partitionOf)).size).toBe(3);
    const first = open({ selector: { type: 'range' } });
    const listed = await first.take(all.length);
    const resumeAfter = listed.at(-1)!.resumeAfter;
    await first.return();

    const moved = partitionOf('a');
    put('a', '2');
    await commit();
    const spy = spyOnViews();
    const resumed = open({ selector: { type: 'range' }, after: resumeAfter });
    const inMoved = all.filter((k) => partitionOf(k) === moved);
    const events = await resumed.take(inMoved.length);
    expect(events.map(brief)).toEqual(listingOrder(inMoved.map((k) => [k, k === 'a' ? '2' : '1']), partitionOf));
    expect(await resumed.ready()).toBe('none');
    // The unmoved partitions' views were taken (one tick with the listeners) and closed unread.
    expect(spy.views.map((v) => [v.partition, v.closed, v.openIterators])).toEqual([
      [0, true, 0],
      [1, true, 0],
      [2, true, 0],
    ]);
    await resumed.return();

    // With nothing changed since, nothing is listed.
    const again = open({ selector: { type: 'range' }, after: events.at(-1)!.resumeAfter });
    expect(await again.ready()).toBe('none');
    await again.return();
  });

  it('makes a partition part of resumeAfter only with its last initial entry, so resuming in the middle of a partition lists it again', async () => {
    const { put, commit, open, partitionOf } = await setup(2);
    const all = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'];
    for (const key of all) put(key, '1');
    await commit();
    const order = listingOrder(all.map((k) => [k, '1']), partitionOf);
    const inFirst = order.filter((e) => e.partition === 0).length;
    expect(inFirst).toBeGreaterThanOrEqual(2);
    expect(order.length - inFirst).toBeGreaterThanOrEqual(2);

    const stream = open({ selector: { type: 'range' } });
    const events = await stream.take(inFirst + 1);
    const p0 = tasks[0]!.store('kv').committedPosition();
    for (const event of events.slice(0, inFirst - 1)) expect(event.resumeAfter.isEmpty()).toBe(true);
    expect(events[inFirst - 1]!.resumeAfter.equals(p0)).toBe(true);
    // The client goes away in the middle of partition 1's entries.
    const middle = events[inFirst]!;
    expect(middle.partition).toBe(1);
    expect(middle.resumeAfter.equals(p0)).toBe(true);
    await stream.return();

    const resumed = open({ selector: { type: 'range' }, after: middle.resumeAfter });
    const again = await resumed.take(order.length - inFirst);
    expect(again.map(brief)).toEqual(order.slice(inFirst));
    expect(again.at(-1)!.resumeAfter.equals(p0.copy().merge(tasks[1]!.store('kv').committedPosition()))).toBe(true);
    expect(await resumed.ready()).toBe('none');
    await resumed.return();
  });

  it('does not count live events buffered behind the initial entries in resumeAfter before they are handed out', async () => {
    const { put, commit, open, partitionOf } = await setup(2);
    for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) put(key, '1');
    await commit();
    const stream = open({ selector: { type: 'range' } });
    // A live change of the last partition arrives while partition 0 is still being listed.
    const late = ['a', 'b', 'c', 'd', 'e', 'f'].find((k) => partitionOf(k) === 1)!;
    put(late, '2');
    await commit();
    const first = (await stream.take(1))[0]!;
    expect(first.partition).toBe(0);
    expect(first.resumeAfter.offset('in', 1)).toBeUndefined();
    await stream.return();
  });

  it('closes every view and iterator when the client returns in the middle of the listing', async () => {
    const { put, commit, open } = await setup();
    for (let i = 0; i < 30; i++) put(`k${i}`, 'v');
    await commit();
    const spy = spyOnViews();
    const stream = open({ selector: { type: 'prefix', prefix: Buffer.from('k') } });
    expect(spy.views).toHaveLength(3);
    await stream.take(3);
    // A next() in flight when return() comes resolves as done.
    const pending = stream.next();
    await stream.return();
    expect((await pending).done).toBe(true);
    expect(spy.views.every((v) => v.closed && v.openIterators === 0)).toBe(true);
    expect(tasks.map((t) => t.store('kv').listenerCount())).toEqual([0, 0, 0]);
    expect((await stream.next()).done).toBe(true);
  });

  it('closes each view once its entries are listed', async () => {
    const { put, commit, open } = await setup();
    for (let i = 0; i < 12; i++) put(`k${i}`, 'v');
    await commit();
    const spy = spyOnViews();
    const stream = open({ selector: { type: 'range' } });
    await stream.take(12);
    expect(spy.views.every((v) => v.closed && v.openIterators === 0)).toBe(true);
    await stream.return();
  });

  it('ends with SUBSCRIPTION_OVERFLOW and closes the views when live changes overflow the buffer during the listing', async () => {
    const { put, commit, open } = await setup();
    for (let i = 0; i < 12; i++) put(`k${i}`, 'v');
    await commit();
    const spy = spyOnViews();
    const stream = open({ selector: { type: 'range' }, maxBuffered: 2 });
    await stream.take(1);
    for (let i = 0; i < 5; i++) put(`live${i}`, 'v');
    await commit();
    await expect(stream.next()).rejects.toSatisfy((e) => isIqgateError(e, 'SUBSCRIPTION_OVERFLOW'));
    expect(spy.views.every((v) => v.closed && v.openIterators === 0)).toBe(true);
    expect(tasks.map((t) => t.store('kv').listenerCount())).toEqual([0, 0, 0]);
    expect((await stream.next()).done).toBe(true);
  });

  it('ends with the read error and closes the views when reading a view fails', async () => {
    const { put, commit, open } = await setup();
    for (let i = 0; i < 12; i++) put(`k${i}`, 'v');
    await commit();
    const spy = spyOnViews();
    const store = tasks[1]!.store('kv');
    const spied = store.view;
    store.view = (options) =>
      Object.assign(spied(options), {
        range: () => {
          throw new Error('disk on fire');
        },
      });
    const stream = open({ selector: { type: 'range' } });
    const listing = async () => {
      for (;;) await stream.take(1);
    };
    await expect(listing()).rejects.toThrow(/disk on fire/);
    expect(spy.views.every((v) => v.closed && v.openIterators === 0)).toBe(true);
    expect(tasks.map((t) => t.store('kv').listenerCount())).toEqual([0, 0, 0]);
  });

  it('releases the listeners and views already taken when taking a later view fails', async () => {
    const { open } = await setup();
    const spy = spyOnViews();
    tasks[2]!.store('kv').view = () => {
      throw new Error('partition closing');
    };
    expect(() => open({ selector: { type: 'range' } })).toThrow(/closing/);
    await new Promise((resolve) => setImmediate(resolve));
    expect(spy.views.map((v) => v.closed)).toEqual([true, true]);
    expect(tasks.map((t) => t.store('kv').listenerCount())).toEqual([0, 0, 0]);
  });

  it('leaves after without initial as it was: nothing listed, only changes past the position', async () => {
    const { put, commit, open } = await setup(1);
    put('a', '1');
    await commit();
    const stream = open({ selector: { type: 'range' }, initial: false, after: Position.empty() });
    expect(await stream.ready()).toBe('none');
    put('b', '2');
    await commit();
    const [event] = await stream.take(1);
    expect(brief(event!)).toEqual({ key: 'b', value: '2', partition: 0, initial: false });
    expect(event!.resumeAfter.equals(event!.position)).toBe(true);
    await stream.return();
  });
});
