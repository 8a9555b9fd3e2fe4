/**
 * Property: paging a range or prefix scan through the query engine, page by page with the
 * cursor of the last page, returns every matching key exactly once, in order, for both orders
 * and both directions — with keys that are byte-prefixes of each other ("a", "a\x00", "ab"),
 * 0x00 and 0xff bytes, the empty key, prefixes of 0xff bytes and the empty prefix, keys spread
 * over partitions, and committed data masked by uncommitted writes and tombstones.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QueryEngine } from '../../../src/query/query-engine.js';
import type { PageRequest, QueryOptions, ScanSpec } from '../../../src/query/query-types.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';
import { partitionForKey } from '../../../src/murmur2.js';
import { createInMemoryStoreEngine } from '../../../src/store/in-memory-engine.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Serde } from '../../../src/store/types.js';

const PARTITIONS = 3;
const keyArb = fc.array(fc.constantFrom('\x00', 'a', 'b', '\xff'), { maxLength: 3 }).map((chars) => chars.join(''));
const b = (s: string): Buffer => Buffer.from(s, 'latin1');

const writeArb = fc.record({ key: keyArb, value: fc.option(fc.constantFrom('1', '2'), { nil: null }), commit: fc.boolean() });
const scanArb: fc.Arbitrary<{ type: 'range'; from?: string; to?: string } | { type: 'prefix'; prefix: string }> = fc.oneof(
  fc.record({ type: fc.constant('range' as const), from: keyArb, to: keyArb }, { requiredKeys: ['type'] }),
  fc.record({ type: fc.constant('prefix' as const), prefix: keyArb }),
);

describe('pagination property', () => {
  it('pages return every key of the scan exactly once, in order, in every order and direction', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(writeArb, { maxLength: 25 }),
        scanArb,
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom('asc' as const, 'desc' as const),
        fc.constantFrom('forward' as const, 'backward' as const),
        fc.boolean(),
        async (writes, scanArgs, size, order, direction, readCommitted) => {
          if (scanArgs.type === 'range' && scanArgs.from !== undefined && scanArgs.to !== undefined && scanArgs.from > scanArgs.to) return;
          const engine = createInMemoryStoreEngine();
          const provider = new StaticStateProvider({
            stores: [{ name: 's', keySerde: serdes.bytes as Serde<unknown>, valueSerde: serdes.bytes as Serde<unknown>, partitions: PARTITIONS }],
          });
          const tasks = [];
          for (let p = 0; p < PARTITIONS; p++) {
            const task = await engine.openTask(`t${p}`, [{ name: 's', partition: p }]);
            provider.addTask(task);
            tasks.push(task);
          }
          try {
            const committed = new Map<string, string>();
            const uncommitted = new Map<string, string>();
            let offset = 0;
            for (const write of writes) {
              const p = partitionForKey(b(write.key), PARTITIONS);
              const store = tasks[p]!.store('s');
              const source = { topic: 'in', partition: p, offset: offset++ };
              if (write.value === null) store.delete(b(write.key), source);
              else store.put(b(write.key), b(write.value), source);
              if (write.value === null) uncommitted.delete(write.key);
              else uncommitted.set(write.key, write.value);
              if (write.commit) {
                await tasks[p]!.commit({});
                // Committing one partition commits exactly that partition's keys.
                for (const key of new Set([...committed.keys(), ...uncommitted.keys()])) {
                  if (partitionForKey(b(key), PARTITIONS) !== p) continue;
                  const value = uncommitted.get(key);
                  if (value === undefined) committed.delete(key);
                  else committed.set(key, value);
                }
              }
            }
            const model = readCommitted ? committed : uncommitted;
            let expected = [...model.keys()]
              .filter((k) =>
                scanArgs.type === 'prefix'
                  ? k.startsWith(scanArgs.prefix)
                  : (scanArgs.from === undefined || k >= scanArgs.from) && (scanArgs.to === undefined || k <= scanArgs.to),
              )
              .sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
            if (order === 'desc') expected = expected.reverse();

            const scan: ScanSpec =
              scanArgs.type === 'prefix'
                ? { type: 'prefix', prefix: b(scanArgs.prefix) }
                : { type: 'range', ...(scanArgs.from === undefined ? {} : { from: b(scanArgs.from) }), ...(scanArgs.to === undefined ? {} : { to: b(scanArgs.to) }) };
            const options: QueryOptions = { store: 's', boundTimeoutMs: 0, requireActive: false, allowStale: false, readCommitted, executionInfo: false };
            const query = new QueryEngine(provider);
            const seen: string[] = [];
            let cursorKey: Buffer | undefined;
            for (let pages = 0; pages <= expected.length + 1; pages++) {
              const request: PageRequest = { scan, order, direction, size, ...(cursorKey === undefined ? {} : { cursorKey }) };
              const page = await query.page(options, request);
              expect(page.entries.length).toBeLessThanOrEqual(size);
              const keys = page.entries.map((e) => e.key.toString('latin1'));
              for (const entry of page.entries) expect(entry.value.toString('latin1')).toBe(model.get(entry.key.toString('latin1')));
              if (direction === 'forward') seen.push(...keys);
              else seen.unshift(...keys);
              if (!page.hasMore) break;
              expect(page.entries.length).toBe(size);
              cursorKey = direction === 'forward' ? page.entries.at(-1)!.key : page.entries[0]!.key;
            }
            expect(seen).toEqual(expected);
          } finally {
            for (const task of tasks) await task.close();
            await engine.close();
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
