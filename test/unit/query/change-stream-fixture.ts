/**
 * A string → string store `kv` over N in-memory task partitions, for the change-stream tests:
 * puts go to the key's murmur2 partition with the next input offset of that partition.
 */
import { partitionForKey } from '../../../src/murmur2.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';
import { createInMemoryStoreEngine } from '../../../src/store/in-memory-engine.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Serde, StoreEngine, TaskStores } from '../../../src/store/types.js';

export interface KvFixture {
  readonly provider: StaticStateProvider;
  readonly tasks: readonly TaskStores[];
  partitionOf(key: string): number;
  /** A put, or a delete for null, uncommitted. */
  put(key: string, value: string | null): void;
  /** Commits every task. */
  commit(): Promise<void>;
  close(): Promise<void>;
}

export async function createKvFixture(partitions: number): Promise<KvFixture> {
  const engine: StoreEngine = createInMemoryStoreEngine();
  const provider = new StaticStateProvider({
    stores: [{ name: 'kv', keySerde: serdes.string as Serde<unknown>, valueSerde: serdes.string as Serde<unknown>, partitions }],
  });
  const tasks: TaskStores[] = [];
  for (let p = 0; p < partitions; p++) {
    const task = await engine.openTask(`t${p}`, [{ name: 'kv', partition: p }]);
    tasks.push(task);
    provider.addTask(task);
  }
  const offsets = new Array<number>(partitions).fill(0);
  const partitionOf = (key: string): number => partitionForKey(Buffer.from(key), partitions);
  return {
    provider,
    tasks,
    partitionOf,
    put(key, value) {
      const p = partitionOf(key);
      const source = { topic: 'in', partition: p, offset: offsets[p]!++ };
      if (value === null) tasks[p]!.store('kv').delete(Buffer.from(key), source);
      else tasks[p]!.store('kv').put(Buffer.from(key), Buffer.from(value), source);
    },
    async commit() {
      for (const t of tasks) await t.commit({});
    },
    async close() {
      for (const task of tasks) await task.close();
      await engine.close();
    },
  };
}
