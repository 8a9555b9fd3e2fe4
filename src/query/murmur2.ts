/** Moved to src/murmur2.ts (shared with src/kafka); kept while query/ modules are migrated. */
export { murmur2, partitionForKey, toPositive } from '../murmur2.js';
