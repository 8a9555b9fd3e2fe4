/**
 * What an operator's view of the instance needs beyond the state itself (the /dashboard page,
 * or any GraphQL client): the application's identity, the commit rhythm, figures per interval
 * over the last minutes, and how far each partition's input is ahead of its processing. The
 * runtime implements it (src/runtime/runtime-monitor.ts); a StateProvider without it reports
 * these fields as null.
 */
import type { Position } from '../store/position.js';

/** Figures of one interval of the recent history (MetricsHistory in src/runtime/). */
export interface MetricsInterval {
  /** Start of the interval, epoch milliseconds. */
  readonly start: number;
  readonly durationMs: number;
  readonly commits: number;
  readonly recordsCommitted: number;
  /** Mean and longest commit in the interval; undefined without a commit. */
  readonly commitLatencyAvgMs: number | undefined;
  readonly commitLatencyMaxMs: number | undefined;
  /**
   * The longest event-loop stall in the interval: while it lasted no record was processed, no
   * commit progressed and no query was answered (perf_hooks' event-loop delay, as bench:processing's
   * `pause` figure).
   */
  readonly pauseMaxMs: number;
}

export interface InstanceMonitor {
  readonly applicationId: string;
  /** `librdkafka`, `kafkajs`, `fake`; undefined before start. */
  kafkaClient(): string | undefined;
  readonly processingGuarantee: string;
  readonly commitIntervalMs: number;
  commits(): number;
  commitLatencyPercentileMs(p: number): number;
  /** Epoch ms of the last completed commit of the instance (any task), undefined before the first. */
  lastCommitAt(): number | undefined;
  /** Epoch ms of the last commit that included this task, undefined before its first. */
  taskLastCommitAt(taskId: string): number | undefined;
  /** Intervals that started within the last `ms`, oldest first, the running one last. */
  history(ms: number): readonly MetricsInterval[];
  /**
   * The read_committed end offsets of the input topics of a store's partition, as a Position
   * (topic → partition → end offset). Reads Kafka (cached briefly); rejects when it cannot.
   */
  inputEnds(storeName: string, partition: number): Promise<Position>;
}
