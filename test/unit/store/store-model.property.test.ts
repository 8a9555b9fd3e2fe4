/**
 * Property: random sequences of put, delete, flush, get, range, prefix, commit, abort,
 * crash-and-reopen (close without commit, reopen the same storage) and held read views,
 * checked at both isolation levels against a simple model: committed = a map, uncommitted =
 * the committed map overlaid with pending writes (null = delete). Runs on both engines.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ReadView, StoreEngine, TaskStores } from '../../../src/store/index.js';
import { inMemoryHarness, levelHarness, type HarnessFactory } from './store-harness.js';

type Model = Map<string, string>;

type Op =
  | { op: 'put'; key: string; value: string }
  | { op: 'delete'; key: string }
  | { op: 'flush' }
  | { op: 'get'; key: string }
  | { op: 'range'; from?: string | undefined; to?: string | undefined; desc: boolean; limit?: number | undefined; readCommitted: boolean }
  | { op: 'prefix'; prefix: string; desc: boolean; limit?: number | undefined; readCommitted: boolean }
  | { op: 'commit' }
  | { op: 'abort' }
  | { op: 'crash' }
  | { op: 'hold'; readCommitted: boolean }
  | { op: 'check-held' };

// A small alphabet with the edge bytes, so keys collide, nest as prefixes and sort subtly.
const keyArb = fc.array(fc.constantFrom('\x00', 'a', 'b', '\xff'), { maxLength: 3 }).map((chars) => chars.join(''));
const optionalKey = fc.option(keyArb, { nil: undefined });
const limitArb = fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined });

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ op: fc.constant('put' as const), key: keyArb, value: fc.string({ maxLength: 4 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), key: keyArb }) },
  { weight: 1, arbitrary: fc.constant({ op: 'flush' as const }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('get' as const), key: keyArb }) },
  {
    weight: 3,
    arbitrary: fc.record(
      { op: fc.constant('range' as const), from: optionalKey, to: optionalKey, desc: fc.boolean(), limit: limitArb, readCommitted: fc.boolean() },
      { requiredKeys: ['op', 'desc', 'readCommitted'] },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.record(
      { op: fc.constant('prefix' as const), prefix: keyArb, desc: fc.boolean(), limit: limitArb, readCommitted: fc.boolean() },
      { requiredKeys: ['op', 'prefix', 'desc', 'readCommitted'] },
    ),
  },
  { weight: 2, arbitrary: fc.constant({ op: 'commit' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'abort' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'crash' as const }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('hold' as const), readCommitted: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ op: 'check-held' as const }) },
);

const b = (s: string) => Buffer.from(s, 'latin1');

function sortedEntries(model: Model): Array<[string, string]> {
  // latin1 strings compare like the key bytes.
  return [...model.entries()].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
}

function expectedRange(model: Model, from: string | undefined, to: string | undefined, desc: boolean, limit: number | undefined): string[] {
  let entries = sortedEntries(model).filter(([k]) => (from === undefined || k >= from) && (to === undefined || k <= to));
  if (desc) entries = entries.reverse();
  return entries.slice(0, limit ?? Infinity).map(([k, v]) => `${k}=${v}`);
}

async function read(iterator: AsyncIterableIterator<{ key: Buffer; value: Buffer }>): Promise<string[]> {
  const out: string[] = [];
  for await (const { key, value } of iterator) out.push(`${key.toString('latin1')}=${value.toString('latin1')}`);
  return out;
}

const STORES = [{ name: 's', partition: 3 }];

async function run(factory: HarnessFactory, cacheMaxBytes: number, ops: readonly Op[]): Promise<void> {
  const harness = await factory();
  const held: Array<{ view: ReadView; expected: string[] }> = [];
  try {
    let engine: StoreEngine = await harness.open({ cacheMaxBytes });
    let task: TaskStores = await engine.openTask('t', STORES);
    let committed: Model = new Map();
    let pending = new Map<string, string | null>();
    let offset = 0;
    const uncommitted = (): Model => {
      const merged = new Map(committed);
      for (const [k, v] of pending) {
        if (v === null) merged.delete(k);
        else merged.set(k, v);
      }
      return merged;
    };
    const modelFor = (readCommitted: boolean) => (readCommitted ? committed : uncommitted());

    for (const op of ops) {
      const store = task.store('s');
      switch (op.op) {
        case 'put':
          store.put(b(op.key), b(op.value), { topic: 'in', partition: 0, offset: offset++ });
          pending.set(op.key, op.value);
          break;
        case 'delete':
          store.delete(b(op.key), { topic: 'in', partition: 0, offset: offset++ });
          pending.set(op.key, null);
          break;
        case 'flush':
          task.flush();
          break;
        case 'get':
          expect(store.get(b(op.key))?.toString('latin1')).toBe(uncommitted().get(op.key));
          for (const readCommitted of [true, false]) {
            const view = store.view({ readCommitted });
            expect((await view.get(b(op.key)))?.toString('latin1')).toBe(modelFor(readCommitted).get(op.key));
            expect((await view.getMany([b(op.key)]))[0]?.toString('latin1')).toBe(modelFor(readCommitted).get(op.key));
            await view.close();
          }
          break;
        case 'range': {
          const view = store.view({ readCommitted: op.readCommitted });
          try {
            if (op.from !== undefined && op.to !== undefined && op.from > op.to) {
              expect(() => view.range({ from: b(op.from!), to: b(op.to!) })).toThrow(/sorts after/);
              break;
            }
            const options = {
              ...(op.from === undefined ? {} : { from: b(op.from) }),
              ...(op.to === undefined ? {} : { to: b(op.to) }),
              ...(op.limit === undefined ? {} : { limit: op.limit }),
              order: op.desc ? ('desc' as const) : ('asc' as const),
            };
            expect(await read(view.range(options))).toEqual(expectedRange(modelFor(op.readCommitted), op.from, op.to, op.desc, op.limit));
          } finally {
            await view.close();
          }
          break;
        }
        case 'prefix': {
          const view = store.view({ readCommitted: op.readCommitted });
          const options = { ...(op.limit === undefined ? {} : { limit: op.limit }), order: op.desc ? ('desc' as const) : ('asc' as const) };
          let expected = sortedEntries(modelFor(op.readCommitted)).filter(([k]) => k.startsWith(op.prefix));
          if (op.desc) expected = expected.reverse();
          expect(await read(view.prefix(b(op.prefix), options))).toEqual(expected.slice(0, op.limit ?? Infinity).map(([k, v]) => `${k}=${v}`));
          await view.close();
          break;
        }
        case 'commit':
          await task.commit({ s: offset });
          committed = uncommitted();
          pending = new Map();
          break;
        case 'abort':
          task.abort();
          pending = new Map();
          break;
        case 'crash':
          for (const h of held.splice(0)) await h.view.close();
          await engine.close();
          engine = await harness.open({ cacheMaxBytes });
          task = await engine.openTask('t', STORES);
          pending = new Map();
          expect(task.changelogOffsets().s ?? 0).toBeLessThanOrEqual(offset);
          break;
        case 'hold': {
          const view = store.view({ readCommitted: op.readCommitted });
          held.push({ view, expected: expectedRange(modelFor(op.readCommitted), undefined, undefined, false, undefined) });
          break;
        }
        case 'check-held':
          for (const h of held) expect(await read(h.view.range())).toEqual(h.expected);
          break;
      }
    }
    // At the end, both isolation levels agree with the model, and so do held views.
    for (const readCommitted of [true, false]) {
      const view = task.store('s').view({ readCommitted });
      expect(await read(view.range())).toEqual(expectedRange(modelFor(readCommitted), undefined, undefined, false, undefined));
      await view.close();
    }
    for (const h of held) expect(await read(h.view.range({ order: 'desc' }))).toEqual([...h.expected].reverse());
  } finally {
    for (const h of held) await h.view.close();
    await harness.cleanup();
  }
}

const cacheSizes = fc.constantFrom(0, 150, 400, 10 * 1024 * 1024);
const opsArb = fc.array(opArb, { minLength: 1, maxLength: 60 });

describe('store model property', () => {
  it('the in-memory engine behaves like the model at both isolation levels', async () => {
    await fc.assert(fc.asyncProperty(cacheSizes, opsArb, (cache, ops) => run(inMemoryHarness, cache, ops)), { numRuns: 150 });
  });

  it('the LevelDB engine behaves like the model at both isolation levels, across crashes', async () => {
    await fc.assert(fc.asyncProperty(cacheSizes, opsArb, (cache, ops) => run(levelHarness, cache, ops)), { numRuns: 120 });
  }, 60_000);
});
