/**
 * Engine harnesses for the shared store tests: each opens engines over one storage (a fresh
 * in-memory database or a fresh temporary LevelDB directory), so a test can close an engine
 * without committing and reopen the same storage, as after a crash.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInMemoryDatabase, createInMemoryStoreEngine, openLevelStoreEngine } from '../../../src/store/index.js';
import type { StoreEngine, StoreEngineOptions } from '../../../src/store/index.js';

export interface EngineHarness {
  /** Opens an engine over this harness's storage (one open engine at a time). */
  open(options?: StoreEngineOptions): Promise<StoreEngine>;
  /** Closes engines still open and deletes the storage. */
  cleanup(): Promise<void>;
}

export type HarnessFactory = () => Promise<EngineHarness>;

function tracking(openEngine: (options: StoreEngineOptions) => Promise<StoreEngine>, remove: () => Promise<void>): EngineHarness {
  const engines: StoreEngine[] = [];
  return {
    async open(options = {}) {
      const engine = await openEngine(options);
      engines.push(engine);
      return engine;
    },
    async cleanup() {
      await Promise.allSettled(engines.map((engine) => engine.close()));
      await remove();
    },
  };
}

export const inMemoryHarness: HarnessFactory = async () => {
  const database = createInMemoryDatabase();
  return tracking(async (options) => createInMemoryStoreEngine({ ...options, database }), async () => {});
};

export const levelHarness: HarnessFactory = async () => {
  const directory = await mkdtemp(join(tmpdir(), 'iqgate-store-'));
  return tracking(
    (options) => openLevelStoreEngine({ ...options, directory }),
    () => rm(directory, { recursive: true, force: true }),
  );
};

export const b = (text: string): Buffer => Buffer.from(text, 'latin1');

export function source(offset: number, topic = 'input', partition = 0): { topic: string; partition: number; offset: number } {
  return { topic, partition, offset };
}

export async function collect(iterator: AsyncIterableIterator<{ key: Buffer; value: Buffer }>): Promise<string[]> {
  const out: string[] = [];
  for await (const { key, value } of iterator) out.push(`${key.toString('latin1')}=${value.toString('latin1')}`);
  return out;
}
