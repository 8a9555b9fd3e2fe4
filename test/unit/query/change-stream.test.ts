import { afterEach, describe, expect, it } from 'vitest';
import { openChangeStream } from '../../../src/query/change-stream.js';
import type { StateProvider } from '../../../src/query/state-provider.js';
import type { TaskStores } from '../../../src/store/types.js';
import { createKvFixture, type KvFixture } from './change-stream-fixture.js';
import { isIqgateError } from '../../../src/errors.js';

let kv: KvFixture | undefined;
let tasks: readonly TaskStores[] = [];

async function setup(partitions = 2) {
  kv = await createKvFixture(partitions);
  tasks = kv.tasks;
  return { provider: kv.provider, put: kv.put, commit: kv.commit };
}

afterEach(async () => {
  await kv?.close();
  kv = undefined;
});

describe('openChangeStream', () => {
  it('delivers committed changes of the watched keys in commit order, deletes as null, nothing else', async () => {
    const { provider, put, commit } = await setup();
    const stream = openChangeStream(provider, { store: 'kv', selector: { type: 'keys', keys: [Buffer.from('a')] }, readCommitted: true, maxBuffered: 100 });
    put('a', '1');
    put('b', 'x');
    await commit();
    put('a', '2');
    await commit();
    put('a', null);
    await commit();
    const values: Array<string | null> = [];
    for (let i = 0; i < 3; i++) {
      const { value } = await stream.next();
      expect(value!.committed).toBe(true);
      values.push(value!.value?.toString() ?? null);
    }
    expect(values).toEqual(['1', '2', null]);
    await stream.return!();
    expect((await stream.next()).done).toBe(true);
  });

  it('delivers uncommitted changes as they are written, before any flush or commit', async () => {
    const { provider, put } = await setup(1);
    const stream = openChangeStream(provider, { store: 'kv', selector: { type: 'range', from: Buffer.from('a'), to: Buffer.from('b') }, readCommitted: false, maxBuffered: 100 });
    put('a1', 'x');
    put('c', 'outside');
    const { value } = await stream.next();
    expect(value).toMatchObject({ committed: false, partition: 0 });
    expect(value!.key.toString()).toBe('a1');
    await stream.return!();
  });

  it('never delivers aborted writes on the committed feed', async () => {
    const { provider, put, commit } = await setup();
    const stream = openChangeStream(provider, { store: 'kv', selector: { type: 'range' }, readCommitted: true, maxBuffered: 100 });
    put('a', 'aborted');
    for (const t of tasks) {
      t.flush();
      t.abort();
    }
    put('a', 'kept');
    await commit();
    expect((await stream.next()).value!.value?.toString()).toBe('kept');
    await stream.return!();
  });

  it('skips events at or below the resume position', async () => {
    const { provider, put, commit } = await setup(1);
    const first = openChangeStream(provider, { store: 'kv', selector: { type: 'prefix', prefix: Buffer.from('k') }, readCommitted: true, maxBuffered: 100 });
    put('k1', '1');
    await commit();
    const seen = (await first.next()).value!;
    await first.return!();
    const resumed = openChangeStream(provider, { store: 'kv', selector: { type: 'prefix', prefix: Buffer.from('k') }, readCommitted: true, after: seen.resumeAfter, maxBuffered: 100 });
    // Replaying an already-seen commit (a restore of the same offsets) is skipped…
    await tasks[0]!.restore('kv', [{ key: Buffer.from('k1'), value: Buffer.from('1') }], 1, seen.position);
    put('k2', '2');
    await commit();
    // …and the next new commit comes through.
    expect((await resumed.next()).value!.key.toString()).toBe('k2');
    await resumed.return!();
  });

  it('gives a client that left in the middle of a commit the rest of it when it resumes from resumeAfter', async () => {
    const { provider, put, commit } = await setup(1);
    const first = openChangeStream(provider, { store: 'kv', selector: { type: 'prefix', prefix: Buffer.from('k') }, readCommitted: true, maxBuffered: 100 });
    for (const key of ['ka', 'kb', 'kc', 'kd', 'ke']) put(key, 'v'); // one commit, one position
    await commit();
    const taken = [(await first.next()).value!, (await first.next()).value!];
    await first.return!();
    expect(taken.map((e) => e.key.toString())).toEqual(['ka', 'kb']);
    // Resuming from where it was (as after an overflow, or a dropped connection) with the current state first.
    const resumed = openChangeStream(provider, { store: 'kv', selector: { type: 'prefix', prefix: Buffer.from('k') }, readCommitted: true, after: taken[1]!.resumeAfter, initial: true, maxBuffered: 100 });
    const keys: string[] = [];
    for (;;) {
      const { value } = await resumed.next();
      keys.push(value!.key.toString());
      if (!value!.initial || keys.length === 5) break;
    }
    await resumed.return!();
    expect(keys).toEqual(expect.arrayContaining(['kc', 'kd', 'ke']));
  });

  it('ends a subscriber that falls too far behind with SUBSCRIPTION_OVERFLOW', async () => {
    const { provider, put, commit } = await setup(1);
    const stream = openChangeStream(provider, { store: 'kv', selector: { type: 'range' }, readCommitted: true, maxBuffered: 2 });
    for (let i = 0; i < 5; i++) put(`k${i}`, 'v');
    await commit();
    await stream.next();
    await stream.next();
    // Where to resume, as the other endings say: none of the one commit the five share was handed
    // out whole, so no position yet — resuming takes the commit again.
    await expect(stream.next()).rejects.toSatisfy((e) => isIqgateError(e, 'SUBSCRIPTION_OVERFLOW') && e.details.store === 'kv' && !('resumeAfter' in e.details));
  });
});

describe('openChangeStream partitions', () => {
  it('delivers each change once when a partition is listed twice, and ignores partitions the store does not have', async () => {
    const { provider, put, commit } = await setup();
    const stream = openChangeStream(provider, {
      store: 'kv',
      selector: { type: 'range' },
      partitions: [0, 0, 1, 1, -1, 7],
      readCommitted: true,
      maxBuffered: 100,
    });
    expect(tasks.map((t) => t.store('kv').listenerCount())).toEqual([1, 1]);
    put('a', '1');
    put('b', '2');
    await commit();
    put('c', '3');
    await commit();
    const keys: string[] = [];
    for (let i = 0; i < 3; i++) keys.push((await stream.next()).value!.key.toString());
    expect(keys.sort()).toEqual(['a', 'b', 'c']);
    const extra = await Promise.race([stream.next().then(() => 'event'), new Promise((resolve) => setImmediate(() => resolve('none')))]);
    expect(extra).toBe('none');
    await stream.return!();
    expect(tasks.map((t) => t.store('kv').listenerCount())).toEqual([0, 0]);
  });
});

describe('a partition of the selector that opens here after the subscription', () => {
  // The StaticStateProvider says when a partition opens (onPartitionHosted); a provider without that is asked on a timer.
  for (const told of [true, false]) {
    it(`ends the stream with a retriable PARTITION_ASSIGNED naming it and where to resume, after the events of the partitions it had (${told ? 'told by the provider' : 'a provider that cannot tell'})`, async () => {
      const { provider: full, put, commit } = await setup();
      const listening = { count: 0 };
      const provider = told ? countingListeners(full, listening) : withoutHostedNotice(full);
      const later = kv!.partitionOf('d');
      const first = kv!.partitionOf('a');
      expect(later, 'the fixture keys sit on different partitions').not.toBe(first);
      full.removeTask(tasks[later]!.taskId); // its task is still opening
      const stream = openChangeStream(provider, { store: 'kv', selector: { type: 'keys', keys: [Buffer.from('a'), Buffer.from('d')] }, readCommitted: true, maxBuffered: 100 });
      put('a', '1');
      await commit();
      const event = await stream.next();
      expect(event.value!.key.toString()).toBe('a');
      // Nothing ends it while the partition stays away.
      const next = stream.next().then(() => undefined, (error: unknown) => error);
      const quiet = await Promise.race([next.then(() => 'ended'), new Promise((resolve) => setTimeout(resolve, 500, 'open'))]);
      expect(quiet).toBe('open');
      if (told) expect(listening.count).toBe(1);
      full.addTask(tasks[later]!);
      const ending = await next;
      expect(isIqgateError(ending, 'PARTITION_ASSIGNED')).toBe(true);
      expect(ending).toMatchObject({ retriable: true, details: { store: 'kv', partition: later, resumeAfter: expect.anything() } });
      // The ended stream listens no more.
      if (told) expect(listening.count).toBe(0);
    });
  }

  it('lets go of the provider\'s notice when the client closes a stream still missing a partition', async () => {
    const { provider: full } = await setup();
    const listening = { count: 0 };
    const provider = countingListeners(full, listening);
    full.removeTask(tasks[1]!.taskId);
    const stream = openChangeStream(provider, { store: 'kv', selector: { type: 'range' }, readCommitted: true, maxBuffered: 100 });
    expect(listening.count).toBe(1);
    await stream.return!();
    expect(listening.count).toBe(0);
    // Opening it afterwards reaches no stream.
    expect(() => full.addTask(tasks[1]!)).not.toThrow();
    expect((await stream.next()).done).toBe(true);
  });

  it('only the partition it misses ends it: one it has, registered again, does not', async () => {
    const { provider: full } = await setup();
    full.removeTask(tasks[1]!.taskId);
    const stream = openChangeStream(full, { store: 'kv', selector: { type: 'range' }, readCommitted: true, maxBuffered: 100 });
    const next = stream.next().then(() => 'event', (error: unknown) => error);
    // Told of partition 0, which the stream has.
    full.addTask(tasks[0]!);
    const quiet = await Promise.race([next, new Promise((resolve) => setTimeout(resolve, 300, 'open'))]);
    expect(quiet).toBe('open');
    full.addTask(tasks[1]!);
    expect(isIqgateError(await next, 'PARTITION_ASSIGNED')).toBe(true);
  });
});

/** `provider` with its methods, counting the onPartitionHosted listeners not yet let go. */
function countingListeners(provider: StateProvider, listening: { count: number }): StateProvider {
  return new Proxy(provider, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (key !== 'onPartitionHosted' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
      return (listener: (storeName: string, partition: number) => void) => {
        listening.count += 1;
        const stop = (value as StateProvider['onPartitionHosted'])!.call(target, listener);
        let stopped = false;
        return () => {
          if (!stopped) listening.count -= 1;
          stopped = true;
          stop();
        };
      };
    },
  });
}

/** `provider` as one that cannot tell when a partition opens. */
function withoutHostedNotice(provider: StateProvider): StateProvider {
  return new Proxy(provider, {
    get(target, key) {
      if (key === 'onPartitionHosted') return undefined;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('openChangeStream failures', () => {
  it('releases the listeners it already added when subscribing to a later partition fails', async () => {
    const { provider } = await setup();
    const second = tasks[1]!.store('kv');
    second.subscribe = () => {
      throw new Error('partition closing');
    };
    expect(() => openChangeStream(provider, { store: 'kv', selector: { type: 'range' }, readCommitted: true, maxBuffered: 10 })).toThrow(/closing/);
    expect(tasks[0]!.store('kv').listenerCount()).toBe(0);
  });
});
