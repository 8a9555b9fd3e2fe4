/**
 * The LevelDB StoreEngine: the layered stack of store-engine.ts over one LevelDB database in
 * `directory` (the process state directory). Reopening the directory after a crash yields
 * exactly the data, changelog offsets and Positions of the last completed commit.
 */
import { LevelCommittedStore } from './level-committed-store.js';
import { LayeredStoreEngine } from './store-engine.js';
import { resolveStoreOptions } from './store-options.js';
import type { StoreEngine, StoreEngineOptions } from './types.js';

/**
 * `onWipe`: told why, when the directory's LevelDB files were found damaged and wiped
 * (corrupt-state.ts); the stores then open empty and restore from their changelogs.
 */
export async function openLevelStoreEngine(options: { directory: string; onWipe?: (reason: string) => void } & StoreEngineOptions): Promise<StoreEngine> {
  const resolved = resolveStoreOptions(options);
  if (typeof options.directory !== 'string' || options.directory.length === 0) {
    throw new TypeError('directory must be a non-empty path');
  }
  return new LayeredStoreEngine(await LevelCommittedStore.open(options.directory, options.onWipe), resolved);
}
