/**
 * The in-memory StoreEngine: the same layered stack as the LevelDB engine (record cache,
 * write batch, read views, commit protocol) over an in-memory committed store. Pass the same
 * `database` to a later engine to simulate a restart: it sees exactly the committed data.
 */
import { MemoryCommittedStore, createInMemoryDatabase, type InMemoryDatabase } from './memory-committed-store.js';
import { LayeredStoreEngine } from './store-engine.js';
import { resolveStoreOptions } from './store-options.js';
import type { StoreEngine, StoreEngineOptions } from './types.js';

export interface InMemoryStoreEngineOptions extends StoreEngineOptions {
  /** Where committed data lives; a fresh database when absent. One open engine per database. */
  readonly database?: InMemoryDatabase;
}

export function createInMemoryStoreEngine(options: InMemoryStoreEngineOptions = {}): StoreEngine {
  const resolved = resolveStoreOptions(options);
  return new LayeredStoreEngine(new MemoryCommittedStore(options.database ?? createInMemoryDatabase()), resolved);
}
