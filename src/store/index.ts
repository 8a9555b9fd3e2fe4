/** The public API of the state store (docs/architecture.md §3). */
export * from './types.js';
export { Position, type PositionJSON } from './position.js';
export {
  serdes,
  serdeByName,
  isSerdeName,
  type SerdeName,
  stringSerde,
  jsonSerde,
  int32Serde,
  int64Serde,
  float64Serde,
  sortableInt32Serde,
  sortableInt64Serde,
  sortableFloat64Serde,
  bytesSerde,
} from './serdes.js';
export { CommitGroup } from './commit-group.js';
export { createInMemoryStoreEngine, type InMemoryStoreEngineOptions } from './in-memory-engine.js';
export { createInMemoryDatabase, type InMemoryDatabase } from './memory-committed-store.js';
export { openLevelStoreEngine } from './level-engine.js';
export { DEFAULT_STORE_OPTIONS, type ResolvedStoreOptions } from './store-options.js';
