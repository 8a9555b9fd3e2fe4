/**
 * Processing options with their defaults, in one place, validated once at start-up (the edge
 * validates, the inside trusts). Names follow Kafka Streams' configs where one exists.
 */
import { z } from 'zod';
import { IqgateError } from '../errors.js';

export const errorPolicySchema = z.enum(['fail', 'skip', 'dead-letter']);
/**
 * What to do with a record that cannot be deserialized or whose processing throws
 * (Kafka Streams' DeserializationExceptionHandler / ProcessingExceptionHandler):
 * - `fail`: stop the runtime with the error; nothing of the open transaction is committed;
 * - `skip`: log and continue after the record;
 * - `dead-letter`: send the raw record (with error headers) to the dead-letter topic inside the
 *   same transaction, then continue.
 */
export type ErrorPolicy = z.infer<typeof errorPolicySchema>;

export const processingOptionsSchema = z.object({
  /** Kafka Streams' application.id: the group id, and the prefix of internal topics and transactional ids. */
  applicationId: z.string().regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, . _ - only'),
  /** processing.guarantee. */
  processingGuarantee: z.enum(['exactly_once', 'at_least_once']).default('exactly_once'),
  /** commit.interval.ms; default 100 under exactly-once and 5000 under at-least-once (Kafka Streams: 100 / 30000). */
  commitIntervalMs: z.number().int().positive().optional(),
  /** Output records a task buffers before sending them ahead of its commit, inside the open transaction. */
  sendAheadRecords: z.number().int().positive().default(1000),
  /** Records buffered per task before its partitions are paused (buffered.records.per.partition). */
  maxBufferedRecordsPerTask: z.number().int().positive().default(1000),
  /** Longest synchronous processing slice before yielding to I/O, timers and queries. */
  processingSliceMs: z.number().positive().default(5),
  /**
   * The share of the event loop kept for gateway requests while any waits for its answer:
   * processing then runs only in the first (1 − queryShare) of every 10 ms (0 turns it off;
   * bench:query:busy on librdkafka, docs/engine.md: 0.7 keeps queries at 0.63–0.69× their idle
   * rate and their p99 at 1.5–1.7× idle).
   */
  queryShare: z.number().min(0).max(0.9).default(0.7),
  /**
   * Write repartition topics as packs of records (src/processing/record-pack.ts): one Kafka
   * record carries up to 128 of them, which the task downstream unpacks. Fewer Kafka records is
   * what makes a repartitioning topology fast (docs/engine.md, "Packed repartition topics"); false
   * writes one Kafka record per record, as Kafka Streams does. Readers take both.
   */
  packRepartition: z.boolean().default(true),
  /** Control operations (task open/close, commits) running at once. */
  maxConcurrentControlOps: z.number().int().positive().default(64),
  deserializationErrors: errorPolicySchema.default('fail'),
  processingErrors: errorPolicySchema.default('fail'),
  /** Dead-letter topic; default `<applicationId>-dlq`. Created with 1 partition if missing. */
  deadLetterTopic: z.string().optional(),
  /** How long a fenced task waits for a rebalance before it tries to take its partition back. */
  fencedRetryMs: z.number().int().positive().default(10_000),
  /** Start-up back-off (broker unreachable, topic missing): first delay and cap. */
  startupRetryInitialMs: z.number().int().positive().default(500),
  startupRetryMaxMs: z.number().int().positive().default(30_000),
  /** Give up start-up after this many attempts (default: retry until stopped). */
  startupMaxAttempts: z.number().int().positive().optional(),
  /**
   * Standby replicas of each task kept on other instances (num.standby.replicas; default 0):
   * they tail the task's changelogs into their own state directory, answer queries when the
   * active owner cannot (with their lag), and make a move of the task restore only the tail
   * (standby-tasks.ts). Needs advertisedUrl on every instance: the owner map they are placed by
   * is learned from the advertised URLs.
   */
  numStandbyReplicas: z.number().int().min(0).max(16).default(0),
  /** How often a standby reads its changelogs' ends and catches up to them (ms). */
  standbyPollMs: z.number().int().min(10).max(60_000).default(100),
  /**
   * Warm joins (join-warmup.ts): an instance joining a group whose members already run the
   * application first tails every task's changelogs, as a standby, for at most this long
   * (ms), and joins once each is within acceptableRecoveryLag; 0 joins at once.
   */
  warmupTimeoutMs: z.number().int().min(0).max(3_600_000).default(60_000),
  /** Records behind its changelog's end within which a warming task counts as caught up (Kafka Streams' acceptable.recovery.lag). */
  acceptableRecoveryLag: z.number().int().min(0).default(10_000),
});

export type ProcessingOptionsInput = z.input<typeof processingOptionsSchema>;

export interface ProcessingOptions extends Omit<z.output<typeof processingOptionsSchema>, 'commitIntervalMs' | 'deadLetterTopic'> {
  readonly commitIntervalMs: number;
  readonly deadLetterTopic: string;
}

export function parseProcessingOptions(input: ProcessingOptionsInput): ProcessingOptions {
  const parsed = processingOptionsSchema.safeParse(input);
  if (!parsed.success) {
    throw new IqgateError('INVALID_CONFIG', `invalid processing options: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`, { cause: parsed.error });
  }
  const o = parsed.data;
  return {
    ...o,
    commitIntervalMs: o.commitIntervalMs ?? (o.processingGuarantee === 'exactly_once' ? 100 : 5000),
    deadLetterTopic: o.deadLetterTopic ?? `${o.applicationId}-dlq`,
  };
}
