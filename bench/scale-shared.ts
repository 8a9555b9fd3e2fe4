/**
 * What bench/scale.ts (instance A, the orchestrator) and bench/scale-instance.ts (instance B, a
 * process of its own) share: the topology and the per-partition progress it reports.
 *
 * The topology is `builder.table(topic, { store })` written out with the low-level API, plus one
 * line: every record a task processes advances that partition's position (offset + 1) and
 * stamps the time. Processing happens before the commit (records are processed into the open
 * transaction), so this is the input position a task has *processed*, the one that stops moving
 * when a task pauses. A record processed again (after a rollback) does not move it.
 */
import { performance } from 'node:perf_hooks';
import { serdes, TopologyBuilder, type Topology } from '../src/index.js';
import { loadLibrdkafka } from '../src/kafka/librdkafka/native.js';
import { RdkafkaStreamProducer } from '../src/kafka/librdkafka/rdkafka-stream-producer.js';

export const STORE = 'scale-table';

export type ScaleClient = 'librdkafka' | 'kafkajs';

/** Per partition: the highest processed position (next offset) and when it last moved. */
export class ProgressTracker {
  /** Next offset to process, the highest seen (0 = nothing processed yet). */
  readonly position: Float64Array;
  /** performance.now() of the last record that moved the position (NaN: never). */
  readonly lastProgressAt: Float64Array;
  /** performance.now() of the first record that moved the position since the last mark() (NaN: none). */
  readonly firstSinceMark: Float64Array;
  /** Records processed at or below the position already reached (re-processing after a rollback). */
  reprocessed = 0;
  processed = 0;

  constructor(readonly partitions: number) {
    this.position = new Float64Array(partitions);
    this.lastProgressAt = new Float64Array(partitions).fill(Number.NaN);
    this.firstSinceMark = new Float64Array(partitions).fill(Number.NaN);
  }

  record(partition: number, offset: number): void {
    this.processed += 1;
    const next = offset + 1;
    if (next <= this.position[partition]!) {
      this.reprocessed += 1;
      return;
    }
    const now = performance.now();
    this.position[partition] = next;
    this.lastProgressAt[partition] = now;
    if (Number.isNaN(this.firstSinceMark[partition]!)) this.firstSinceMark[partition] = now;
  }
}

/** builder.table(topic, { store: STORE, key: string, value: json }) that also reports each record to `tracker`. */
export function scaleTopology(topic: string, tracker: ProgressTracker): Topology {
  const b = new TopologyBuilder();
  b.addSource('SOURCE', topic, serdes.string, serdes.json);
  b.addStore(STORE, serdes.string, serdes.json);
  b.addProcessor<string, unknown>('TABLE', (record, context) => {
    const store = context.store<string, unknown>(STORE);
    if (record.value === null || record.value === undefined) store.delete(record.key);
    else store.put(record.key, record.value);
    tracker.record(context.partition, context.offset);
  }, ['SOURCE'], [STORE]);
  return b.build();
}

/** librdkafka's CONCURRENT_TRANSACTIONS (broker error 51): the coordinator is still completing the previous transaction. */
const CONCURRENT_TRANSACTIONS = 51;

/** Calls made again by SCALE_EXPERIMENT_RD_RETRY_CONCURRENT in this process. */
export let experimentRetries = 0;

/**
 * Experiments, off by default, applied in both instances, to show what a change in src/ would
 * give (the bench does not change src/; it patches prototypes from here):
 *
 * SCALE_EXPERIMENT_RD_CALL_TIMEOUT_MS=<ms>: the instance producer's transactional calls (init,
 * sendOffsets, commit, abort) wait up to <ms> instead of RdkafkaStreamProducer's 5 s. librdkafka
 * retries CONCURRENT_TRANSACTIONS by itself within that timeout; when the coordinator has not
 * finished the previous transaction in 5 s, the runtime as shipped fails the cycle and rolls back
 * every task of the instance.
 *
 * SCALE_EXPERIMENT_RD_RETRY_CONCURRENT=1: the instance producer's sendOffsets() and init() are
 * called again (every 100 ms, for up to 30 s) when they fail with CONCURRENT_TRANSACTIONS — a
 * retriable error (librdkafka flags it so) that librdkafka sometimes returns at once ("after
 * 29ms") instead of retrying it within the call's timeout — rather than failing the cycle.
 *
 * SCALE_EXPERIMENT_RD_FIRST_MESSAGE_TIMEOUT=1: librdkafka consumers' consume(n) waits its timeout
 * for the first record only, not for each one (setDefaultIsTimeoutOnlyForFirstMessage(true), as
 * bench/txn-loop.ts does). The package's default (false) makes consume(1000) return only once
 * 1000 records have arrived or none came for a whole timeout — with a steady trickle of input,
 * every 1000 / rate seconds.
 */
export function applyExperiments(): string[] {
  const applied: string[] = [];
  const callTimeoutMs = Number(process.env.SCALE_EXPERIMENT_RD_CALL_TIMEOUT_MS ?? 0);
  if (callTimeoutMs > 0) {
    Object.defineProperty(RdkafkaStreamProducer.prototype, 'timeout', { configurable: true, get: () => callTimeoutMs });
    applied.push(`instance producer: transactional calls time out after ${callTimeoutMs} ms`);
  }
  if (process.env.SCALE_EXPERIMENT_RD_RETRY_CONCURRENT === '1') {
    const proto = RdkafkaStreamProducer.prototype as unknown as Record<'sendOffsets' | 'init', (this: unknown, ...args: unknown[]) => Promise<void>>;
    for (const method of ['sendOffsets', 'init'] as const) {
      const original = proto[method];
      proto[method] = async function retried(this: unknown, ...args: unknown[]): Promise<void> {
        for (const limitAt = Date.now() + 30_000; ;) {
          try {
            await original.apply(this, args);
            return;
          } catch (error) {
            const code = (error as { details?: { librdkafkaCode?: number } }).details?.librdkafkaCode;
            if (code !== CONCURRENT_TRANSACTIONS || Date.now() > limitAt) throw error;
            experimentRetries += 1;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
      };
    }
    applied.push('instance producer: sendOffsets()/init() called again on CONCURRENT_TRANSACTIONS');
  }
  if (process.env.SCALE_EXPERIMENT_RD_FIRST_MESSAGE_TIMEOUT === '1') {
    const native = loadLibrdkafka();
    if (native.ok) {
      const proto = native.module.KafkaConsumer.prototype as unknown as {
        setDefaultConsumeTimeout(this: { setDefaultIsTimeoutOnlyForFirstMessage(on: boolean): void }, ms: number): void;
      };
      const original = proto.setDefaultConsumeTimeout;
      proto.setDefaultConsumeTimeout = function patched(ms: number): void {
        original.call(this, ms);
        this.setDefaultIsTimeoutOnlyForFirstMessage(true);
      };
      applied.push('librdkafka consume(n): timeout for the first record only');
    }
  }
  return applied;
}

/** Messages from instance B (bench/scale-instance.ts) to the orchestrator. */
export type FromInstance =
  /** Modules loaded and the runtime built; waits for `start`. */
  | { readonly t: 'booted' }
  | { readonly t: 'starting' }
  | { readonly t: 'started'; readonly ms: number }
  | { readonly t: 'failed'; readonly error: string }
  /** Positions that moved since the last report ([partition, position] pairs), and the task states. */
  | { readonly t: 'progress'; readonly moved: Array<[number, number]>; readonly owned: number[]; readonly running: number; readonly states: Record<string, number>; readonly reprocessed: number }
  | { readonly t: 'stopped'; readonly ms: number; readonly ok: boolean };

/** Messages from the orchestrator to instance B. */
export type ToInstance = { readonly t: 'start' } | { readonly t: 'stop' };

export interface InstanceConfig {
  readonly brokers: string[];
  readonly topic: string;
  readonly applicationId: string;
  readonly client: ScaleClient;
  readonly partitions: number;
  readonly sessionTimeoutMs: number | undefined;
  /** heartbeatIntervalMs of both instances (SCALE_HEARTBEAT_MS); undefined: the runtime's default. */
  readonly heartbeatIntervalMs: number | undefined;
  /** numStandbyReplicas of both instances (SCALE_STANDBYS, default 0), each with an advertised URL of its own. */
  readonly standbys: number;
  /** B stops with stop({ leaveGroup }): true takes it out of the group at once (a scale-down). */
  readonly leaveGroup: boolean;
  readonly logFile: string;
  readonly logLevel: string;
  readonly kafkaLogLevel: string;
}

/** Messages from the baseline consumer (bench/scale-baseline.ts) to the orchestrator. */
export type FromBaseline =
  | { readonly t: 'ready' }
  | { readonly t: 'failed'; readonly error: string }
  /**
   * Partitions whose position moved since the last report: [partition, position, first move
   * since the last report, last move], the times as epoch milliseconds (performance.timeOrigin +
   * performance.now()), which the orchestrator maps onto its own clock.
   */
  | { readonly t: 'progress'; readonly moved: Array<[number, number, number, number]> }
  /** The second member's whole assignment, after each change (the roll). */
  | { readonly t: 'owned'; readonly owned: number[] }
  /** The second member has left the group. */
  | { readonly t: 'left' };

/** Messages from the orchestrator to the baseline: a second member joins its group, then leaves it. */
export type ToBaseline = { readonly t: 'join' } | { readonly t: 'leave' };

export interface BaselineConfig {
  readonly brokers: string[];
  readonly topic: string;
  readonly client: ScaleClient;
  readonly partitions: number;
  /** The group's heartbeat interval: iqgate's (SCALE_HEARTBEAT_MS, else the runtime's default). */
  readonly heartbeatIntervalMs: number;
}

/** Messages from the load producer (bench/scale-load.ts) to the orchestrator; times as epoch milliseconds. */
export type FromLoad =
  | { readonly t: 'started'; readonly at: number }
  | { readonly t: 'failed'; readonly error: string }
  /** One send's acknowledgement: each partition's end offset after it, and the records it carried. */
  | { readonly t: 'acked'; readonly at: number; readonly ends: Array<[number, number]>; readonly records: number }
  | { readonly t: 'stopped'; readonly sent: number; readonly acked: number; readonly failed: number; readonly busyTicks: number; readonly firstError: string | null };

/** Messages from the orchestrator to the load producer. */
export type ToLoad = { readonly t: 'stop' };

export interface LoadConfig {
  readonly brokers: string[];
  readonly topic: string;
  readonly partitions: number;
  /** Records/s. */
  readonly rate: number;
  readonly tickMs: number;
}

/**
 * The standby options of an instance (SCALE_STANDBYS): numStandbyReplicas needs an advertised URL,
 * which places the standbys (the group's owner map) — no gateway serves it in the bench.
 */
export function standbyOptions(standbys: number, instance: string): { numStandbyReplicas?: number; advertisedUrl?: string } {
  if (standbys === 0) return {};
  return { numStandbyReplicas: standbys, advertisedUrl: `http://127.0.0.1:9/${instance}` };
}

