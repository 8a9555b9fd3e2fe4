/**
 * How far a store partition is behind its input: the dashboard's `lag` (monitor-resolvers.ts)
 * and the `iqgate_input_lag` gauge on /metrics (runtime/processing-metrics-exporter.ts) both read it.
 */
import type { Position } from '../store/position.js';

/** Input offsets not processed yet, summed over the input topics; undefined when unknown. */
export function inputLag(end: Position, processed: Position, partition: number): number | undefined {
  let lag = 0;
  for (const [topic, partitions] of Object.entries(end.toJSON())) {
    const endOffset = partitions[String(partition)];
    if (endOffset === undefined) continue;
    const offset = processed.offset(topic, partition);
    if (offset === undefined) {
      if (endOffset > 0) return undefined;
      continue;
    }
    lag += Math.max(0, endOffset - (offset + 1));
  }
  return lag;
}

