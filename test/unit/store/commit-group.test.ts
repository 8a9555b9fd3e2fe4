/**
 * One committed-store batch for many tasks (commit-group.ts), and what it is for: the committed
 * views of several tasks taken in one step never show part of an instance commit.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CommitGroup } from '../../../src/store/commit-group.js';
import type { CommittedStore, CommittedWrite } from '../../../src/store/committed-store.js';
import type { CapturedCommit, ReadView, TaskStores } from '../../../src/store/index.js';
import { b, levelHarness, source, type EngineHarness, type HarnessFactory } from './store-harness.js';

/** A committed store that records each batch it is asked to write (and fails when told to). */
function recordingStore(fail = false): CommittedStore & { batches: string[][] } {
  const batches: string[][] = [];
  return {
    batches,
    keyspace: () => Promise.reject(new Error('unused')),
    readMeta: () => Promise.resolve(undefined),
    commit: (writes: readonly CommittedWrite[]) => {
      batches.push(writes.map((write) => write.taskId));
      return fail ? Promise.reject(new Error('disk full')) : Promise.resolve();
    },
    close: () => Promise.resolve(),
  };
}

const write = (taskId: string) => [{ taskId } as unknown as CommittedWrite];

describe('CommitGroup', () => {
  it('writes its members as one batch once it is sealed and every member has joined or withdrawn', async () => {
    const store = recordingStore();
    const group = new CommitGroup();
    const a = group.register();
    const b = group.register();
    const c = group.register();
    group.seal();
    const joinedA = a.join(store, write('0_0'));
    await Promise.resolve();
    expect(store.batches).toEqual([]); // b and c have not had their turn yet
    c.withdraw(); // its earlier commit failed: the group goes on without it
    const joinedB = b.join(store, write('0_1'));
    await Promise.all([joinedA, joinedB]);
    expect(store.batches).toEqual([['0_0', '0_1']]);
  });

  it('waits for the seal: members joined before it are written with the ones after', async () => {
    const store = recordingStore();
    const group = new CommitGroup();
    const joined = group.register().join(store, write('0_0'));
    const later = group.register();
    await Promise.resolve();
    expect(store.batches).toEqual([]);
    group.seal();
    expect(() => group.register()).toThrow(/sealed/);
    await Promise.all([joined, later.join(store, write('0_1'))]);
    expect(store.batches).toEqual([['0_0', '0_1']]);
  });

  it('fails every member when the batch fails: none of them is written', async () => {
    const store = recordingStore(true);
    const group = new CommitGroup();
    const members = [group.register(), group.register()];
    group.seal();
    const results = await Promise.allSettled(members.map((member, i) => member.join(store, write(`0_${i}`))));
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(store.batches).toEqual([['0_0', '0_1']]);
  });
});

// LevelDB only: the in-memory store applies a commit in one synchronous step, so no reader can
// meet one in flight.
const harnesses: Record<string, HarnessFactory> = { LevelDB: levelHarness };
const opened: EngineHarness[] = [];
afterEach(async () => {
  for (const harness of opened.splice(0)) await harness.cleanup();
});

describe.each(Object.entries(harnesses))('an instance commit through a commit group (%s engine)', (_name, factory) => {
  it('is one cut: committed views of all tasks taken in one step always agree, while commits land', async () => {
    const harness = await factory();
    opened.push(harness);
    const engine = await harness.open({ cacheMaxBytes: 0 });
    const TASKS = 4;
    const tasks: TaskStores[] = [];
    for (let t = 0; t < TASKS; t++) tasks.push(await engine.openTask(`0_${t}`, [{ name: 'counts', partition: t }]));
    // Bulk per commit, so each batch takes a while to land and the reader meets it in flight.
    const filler = Buffer.alloc(200, 0x61);
    const CYCLES = 60;
    let done = false;
    const observed: string[] = [];
    let torn = 0;
    const reader = (async () => {
      while (!done) {
        // As the query engine opens a query's partitions: all views in one synchronous step.
        const views: ReadView[] = tasks.map((task) => task.store('counts').view({ readCommitted: true }));
        const values = await Promise.all(views.map((view) => view.get(b('cycle'))));
        const seen = values.map((value) => value?.toString('latin1') ?? '-');
        if (new Set(seen).size > 1) torn++;
        observed.push(seen[0]!);
        await Promise.all(views.map((view) => view.close()));
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    let offset = 0;
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      const captures: CapturedCommit[] = tasks.map((task, t) => {
        const store = task.store('counts');
        store.put(b('cycle'), b(String(cycle)), source(++offset, 'input', t));
        for (let i = 0; i < 300; i++) store.put(b(`filler-${cycle % 3}-${i}`), filler, source(++offset, 'input', t));
        return task.capture();
      });
      const group = new CommitGroup();
      const writes = captures.map((capture) => capture.write({}, group));
      group.seal();
      await Promise.all(writes);
    }
    done = true;
    await reader;
    expect(torn).toBe(0);
    // The reader did meet the commits: it saw more than the first and the last cycle.
    expect(new Set(observed).size).toBeGreaterThan(2);
    for (const task of tasks) expect((await task.store('counts').view({ readCommitted: true }).get(b('cycle')))?.toString()).toBe(String(CYCLES));
  });
});
