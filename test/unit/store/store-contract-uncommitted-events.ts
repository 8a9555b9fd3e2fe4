/**
 * Uncommitted events follow the uncommitted view: an event at each write, and at each rollback
 * (abort, abandoned or failed commit, close) one change per dropped key with the value an
 * uncommitted read returns afterwards, at the committed Position. Part of the store contract
 * suite (store-contract.ts): runs on the in-memory and the LevelDB engine.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { Position } from '../../../src/store/index.js';
import type { KeyValueStorePartition, StoreChangeEvent, TaskStores } from '../../../src/store/index.js';
import { openTaskForEachTest } from './store-contract-support.js';
import { b, collect, source, type HarnessFactory } from './store-harness.js';

/** An event as [kind, [[key, value|null]...], position, rolledBack]. */
function shown(event: StoreChangeEvent): unknown {
  return [
    event.kind,
    event.changes.map((c) => [c.key.toString('latin1'), c.value?.toString('latin1') ?? null]),
    event.position.toJSON(),
    event.kind === 'uncommitted' && event.rolledBack === true,
  ];
}

/** Everything an uncommitted read of the partition returns, as key=value lines. */
async function uncommittedState(store: KeyValueStorePartition): Promise<string[]> {
  const view = store.view({ readCommitted: false });
  try {
    return await collect(view.range());
  } finally {
    await view.close();
  }
}

/** What a subscriber that applies the events in order holds, as key=value lines. */
function applied(events: readonly StoreChangeEvent[]): string[] {
  const state = new Map<string, string>();
  for (const event of events) {
    for (const change of event.changes) {
      const key = change.key.toString('latin1');
      if (change.value === null) state.delete(key);
      else state.set(key, change.value.toString('latin1'));
    }
  }
  return [...state.keys()].sort().map((key) => `${key}=${state.get(key)!}`);
}

export function describeUncommittedEventsContract(factory: HarnessFactory): void {
  const fx = openTaskForEachTest(factory);

  describe('uncommitted events follow the uncommitted view', () => {
    it('a write flushed then aborted is taken back: the subscriber hears the key go absent, at the committed Position', async () => {
      const store = fx.task.store('counts');
      const events: StoreChangeEvent[] = [];
      store.subscribe((event) => events.push(event), { kind: 'uncommitted' });
      store.put(b('k'), b('1'), source(1));
      fx.task.flush();
      fx.task.abort();
      expect(store.get(b('k'))).toBeUndefined();
      expect(events.map(shown)).toEqual([
        ['uncommitted', [['k', '1']], { input: { '0': 1 } }, false],
        ['uncommitted', [['k', null]], {}, true],
      ]);
    });

    it('an abort reports each dropped key once, from the cache and the write batch, with its committed value or null', async () => {
      const store = fx.task.store('counts');
      store.put(b('a'), b('1'), source(1));
      store.put(b('gone'), b('1'), source(2));
      await fx.task.commit({ counts: 1 });
      const events: StoreChangeEvent[] = [];
      store.subscribe((event) => events.push(event), { kind: 'uncommitted' });
      store.put(b('a'), b('2'), source(3));
      store.put(b('b'), b('1'), source(4));
      store.delete(b('gone'), source(5));
      fx.task.flush(); // a, b, gone now in the write batch
      store.put(b('a'), b('3'), source(6)); // and a again in the cache
      store.put(b('c'), b('1'), source(7));
      expect(events).toHaveLength(5);
      fx.task.abort();
      expect(events).toHaveLength(6);
      const rollback = events[5]!;
      expect(rollback.kind === 'uncommitted' && rollback.rolledBack).toBe(true);
      expect(rollback.position.toJSON()).toEqual({ input: { '0': 2 } });
      expect(rollback.position.equals(store.committedPosition())).toBe(true);
      const changes = rollback.changes.map((c) => [c.key.toString(), c.value?.toString() ?? null]);
      expect(changes.sort()).toEqual([['a', '1'], ['b', null], ['c', null], ['gone', '1']]);
      expect(await uncommittedState(store)).toEqual(['a=1', 'gone=1']);
    });

    it('an abandoned capture takes back its writes; a newer write of the same key stays what is shown', async () => {
      const store = fx.task.store('counts');
      store.put(b('a'), b('1'), source(1));
      await fx.task.commit({ counts: 1 });
      const events: StoreChangeEvent[] = [];
      store.subscribe((event) => events.push(event), { kind: 'uncommitted' });
      store.put(b('a'), b('2'), source(2));
      store.put(b('b'), b('1'), source(3));
      const captured = fx.task.capture(); // a=2, b=1 now in the committing layer
      store.put(b('a'), b('3'), source(4)); // newer than the capture
      captured.abandon();
      const rollback = events.at(-1)!;
      expect(shown(rollback)).toEqual(['uncommitted', expect.arrayContaining([['a', '3'], ['b', null]]), { input: { '0': 1 } }, true]);
      expect(rollback.changes).toHaveLength(2);
      expect(store.get(b('a'))?.toString()).toBe('3');
      expect(await uncommittedState(store)).toEqual(['a=3']);
      expect(applied([{ kind: 'committed', changes: [{ key: b('a'), value: b('1') }], position: Position.empty() }, ...events])).toEqual(['a=3']);
    });

    it('closing the task takes back what is uncommitted before the subscriber hears the close', async () => {
      const store = fx.task.store('counts');
      const heard: string[] = [];
      store.subscribe((event) => heard.push(JSON.stringify(shown(event))), { kind: 'uncommitted', onClose: (reason) => heard.push(reason.code) });
      store.put(b('x'), b('1'), source(1));
      await fx.task.close();
      expect(heard).toEqual([
        JSON.stringify(['uncommitted', [['x', '1']], { input: { '0': 1 } }, false]),
        JSON.stringify(['uncommitted', [['x', null]], {}, true]),
        'STORE_CLOSED',
      ]);
    });

    it('a restore is an uncommitted change for the keys no uncommitted write hides', async () => {
      const store = fx.task.store('counts');
      const events: StoreChangeEvent[] = [];
      store.subscribe((event) => events.push(event), { kind: 'uncommitted' });
      store.put(b('hidden'), b('mine'), source(1));
      const restored = new Position().advance('input', 0, 9);
      await fx.task.restore('counts', [{ key: b('hidden'), value: b('old') }, { key: b('r'), value: b('1') }], 10, restored);
      expect(events.map(shown).at(-1)).toEqual(['uncommitted', [['r', '1']], { input: { '0': 9 } }, false]);
      expect(applied(events)).toEqual(await uncommittedState(store));
    });

    it('a committed-only subscription costs the write path nothing and hears no uncommitted event', async () => {
      const store = fx.task.store('counts');
      const kinds: string[] = [];
      const unsubscribe = store.subscribe((event) => kinds.push(event.kind), { kind: 'committed' });
      // A Position copy is what an uncommitted event costs a write: none without such a subscriber.
      const copies = vi.spyOn(Position.prototype, 'copy');
      try {
        for (let i = 0; i < 100; i++) store.put(b(`k${i % 10}`), b(String(i)), source(i));
        expect(copies).not.toHaveBeenCalled();
        fx.task.abort();
        const off = store.subscribe(() => {}, { kind: 'uncommitted' });
        copies.mockClear();
        for (let i = 0; i < 100; i++) store.put(b(`k${i % 10}`), b(String(i)), source(i));
        expect(copies).toHaveBeenCalledTimes(100);
        off();
        off(); // twice: still one subscription fewer, not two
        copies.mockClear();
        store.put(b('z'), b('1'), source(200));
        expect(copies).not.toHaveBeenCalled();
      } finally {
        copies.mockRestore();
      }
      fx.task.abort();
      store.put(b('a'), b('1'), source(300));
      await fx.task.commit({ counts: 1 });
      expect(kinds).toEqual(['committed']);
      unsubscribe();
    });

    it('property: a subscriber applying the uncommitted events holds what an uncommitted read returns, after any sequence', async () => {
      type Op =
        | { op: 'put'; key: string; value: string }
        | { op: 'delete'; key: string }
        | { op: 'flush' | 'commit' | 'abort' | 'capture' | 'abandon' | 'write-capture' };
      const keyArb = fc.constantFrom('a', 'b', 'c', 'd');
      const opArb: fc.Arbitrary<Op> = fc.oneof(
        { weight: 6, arbitrary: fc.record({ op: fc.constant('put' as const), key: keyArb, value: fc.string({ maxLength: 3 }) }) },
        { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), key: keyArb }) },
        { weight: 4, arbitrary: fc.record({ op: fc.constantFrom('flush' as const, 'commit' as const, 'abort' as const, 'capture' as const, 'abandon' as const, 'write-capture' as const) }) },
      );
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { maxLength: 30 }), async (ops) => {
          const task: TaskStores = await fx.engine.openTask(`prop-${run++}`, [{ name: 'prop', partition: run }]);
          try {
            const store = task.store('prop');
            const events: StoreChangeEvent[] = [];
            store.subscribe((event) => events.push(event), { kind: 'uncommitted' });
            const captures: Array<ReturnType<TaskStores['capture']>> = [];
            let offset = 0;
            for (const op of ops) {
              if (op.op === 'put') store.put(b(op.key), b(op.value), source(offset++));
              else if (op.op === 'delete') store.delete(b(op.key), source(offset++));
              else if (op.op === 'flush') task.flush();
              else if (op.op === 'commit') {
                if (captures.length === 0) await task.commit({}); // v1 commits and v2 captures do not mix
              }
              else if (op.op === 'abort') task.abort();
              else if (op.op === 'capture') captures.push(task.capture());
              else if (op.op === 'abandon') captures.shift()?.abandon(); // captures settle in order
              else await captures.shift()?.write({});
              expect(applied(events)).toEqual(await uncommittedState(store));
            }
            for (const captured of captures) captured.abandon();
            expect(applied(events)).toEqual(await uncommittedState(store));
          } finally {
            await task.close();
          }
        }),
        { numRuns: 40 },
      );
    });
  });
}
