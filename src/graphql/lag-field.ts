/**
 * A standby's lag as GraphQL's `Lag` shows it (offsets and milliseconds, Int), or null where
 * it is not known: a standby whose first poll has not read its changelogs' ends reports
 * Infinity offsets behind (standby-tasks.ts), and a peer's answer may carry anything.
 */
import type { ReplicaLag } from '../query/query-types.js';

export function lagField(lag: ReplicaLag | null | undefined): ReplicaLag | null {
  if (lag == null || !Number.isSafeInteger(lag.offsets) || !Number.isSafeInteger(lag.timeMs)) return null;
  return { offsets: lag.offsets, timeMs: lag.timeMs };
}
