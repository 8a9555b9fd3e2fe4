/**
 * Exposes the runtime's processing figures to Prometheus (prom-client), read at scrape time from
 * the runtime's own reservoirs: commit latency, control-queue depth and wait (the Druid lesson's
 * figures), processing slices, restored records, uncommitted bytes, task counts by state, input
 * lag per local store partition, and whether Kafka is out of reach.
 */
import { Gauge, type Registry } from 'prom-client';
import { inputLag } from '../query/input-lag.js';
import type { Runtime } from './runtime.js';

export function registerProcessingMetrics(registry: Registry, runtime: Runtime, prefix = 'iqgate_'): void {
  const gauge = (name: string, help: string, read: () => number): void => {
    registry.registerMetric(new Gauge({ name: `${prefix}${name}`, help, registers: [], collect() { this.set(read()); } }));
  };
  // One snapshot per scrape, not one per gauge: the gauges below are collected back to back.
  let taken: { at: number; snapshot: ReturnType<Runtime['metricsSnapshot']> } | null = null;
  const snapshot = (): ReturnType<Runtime['metricsSnapshot']> => {
    const now = Date.now();
    if (taken === null || now - taken.at > 100) taken = { at: now, snapshot: runtime.metricsSnapshot() };
    return taken.snapshot;
  };
  gauge('commits_total', 'Task commits completed (exactly-once: Kafka transaction + store commit).', () => snapshot().commits);
  gauge('records_committed_total', 'Input records processed in committed transactions.', () => snapshot().recordsCommitted);
  gauge('commit_latency_p50_ms', 'Commit latency, median over recent commits.', () => snapshot().commitLatencyP50Ms);
  gauge('commit_latency_p99_ms', 'Commit latency, 99th percentile over recent commits.', () => snapshot().commitLatencyP99Ms);
  gauge('processing_slice_p99_ms', 'Longest synchronous processing slices (p99).', () => snapshot().sliceP99Ms);
  gauge('control_queue_depth', 'Control operations waiting (open/close/commit/rollback).', () => snapshot().controlQueueDepth);
  gauge('control_queue_max_depth', 'Highest control-queue depth seen.', () => snapshot().controlQueueMaxDepth);
  gauge('control_queue_wait_p99_ms', 'Time control operations waited in the queue (p99).', () => snapshot().controlWaitP99Ms);
  gauge('control_queue_coalesced_total', 'Control requests coalesced with one already waiting.', () => snapshot().controlCoalesced);
  gauge('restored_records_total', 'Changelog records replayed by restores.', () => snapshot().restoredRecords);
  gauge('transactions_aborted_total', 'Task transactions aborted by a processor (abortTransaction); their other records were replayed.', () => snapshot().transactionsAborted);
  gauge('uncommitted_bytes', 'Bytes held uncommitted (write batches and dirty cache entries of all tasks), against uncommittedMaxBytes (KIP-892).', () => runtime.uncommittedBytes());
  gauge('kafka_error', '1 while the instance is out of its consumer group because of an error (runtime.kafkaError, e.g. the broker is unreachable), else 0.', () => (runtime.kafkaError === null ? 0 : 1));
  registry.registerMetric(new Gauge({
    name: `${prefix}tasks`,
    help: 'Local tasks by lifecycle state.',
    labelNames: ['state'],
    registers: [],
    collect() {
      this.reset();
      for (const task of runtime.localTasks()) this.inc({ state: task.state });
    },
  }));
  // Consumer lag as Kafka Streams' users watch it, per local store partition: input records not
  // processed yet, summed over the partition's input topics (the ends are read at most once a
  // second per topic, runtime-monitor.ts). A partition whose ends cannot be read now is left out.
  registry.registerMetric(new Gauge({
    name: `${prefix}input_lag`,
    help: 'Input records not yet processed by a local store partition (end offsets of its input topics minus its position).',
    labelNames: ['store', 'partition'],
    registers: [],
    async collect() {
      this.reset();
      await Promise.all(runtime.localStores().map(async (local) => {
        try {
          const end = await runtime.monitor.inputEnds(local.storeName, local.partition);
          const lag = inputLag(end, local.store.uncommittedPosition(), local.partition);
          if (lag !== undefined) this.set({ store: local.storeName, partition: String(local.partition) }, lag);
        } catch {
          // the broker is away: iqgate_kafka_error says so
        }
      }));
    },
  }));
  // Standby replicas (numStandbyReplicas): how far each is behind its active task, KIP-535's offset
  // and time lag (standby-tasks.ts), per store partition it keeps.
  const standbyGauge = (name: string, help: string, read: (lag: { offsets: number; timeMs: number }) => number): void => {
    registry.registerMetric(new Gauge({
      name: `${prefix}${name}`,
      help,
      labelNames: ['store', 'partition'],
      registers: [],
      collect() {
        this.reset();
        for (const task of runtime.standbyTasks()) {
          const lag = task.lag();
          for (const store of task.stores?.storeNames() ?? []) this.set({ store, partition: String(task.partition) }, read(lag));
        }
      },
    }));
  };
  standbyGauge('standby_lag', 'Changelog offsets a standby store partition kept here is behind its changelog\'s committed end (as of its last poll).', (lag) => lag.offsets);
  standbyGauge('standby_lag_ms', 'Milliseconds since a standby store partition kept here was last known to be caught up.', (lag) => lag.timeMs);
}
