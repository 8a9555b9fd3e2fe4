/**
 * The runtime's InstanceMonitor (src/query/instance-monitor.ts): the figures an operator's view
 * needs beyond the stores — identity, when each task last committed, the recent history of
 * commit latency and event-loop stalls, and the input topics' ends for lag. Kept apart from the
 * Runtime, which only reports commits here and starts and stops the sampling.
 */
import type { InstanceMonitor, MetricsInterval } from '../query/instance-monitor.js';
import type { AdminPort } from '../processing/ports.js';
import type { Topology } from '../processing/topology.js';
import { Position } from '../store/position.js';
import { MetricsHistory } from './metrics-history.js';
import { sourceTopicGroups } from './prepare-topics.js';
import type { ProcessingMetrics } from './processing-metrics.js';
import type { RuntimeOptions } from './runtime-options.js';

/** How long the input ends read from Kafka are reused: a page polling every second or two, with many partitions, costs one ListOffsets per topic per second at most. */
const ENDS_TTL_MS = 1_000;
/**
 * How long a query waits for them. While the broker is away a client retries for much longer,
 * and the dashboard's whole overview would wait with it — when it matters most that it shows
 * the instance's kafkaError. The read goes on; later requests share it until it settles.
 */
const ENDS_WAIT_MS = 1_500;

export interface RuntimeMonitorSources {
  readonly options: Pick<RuntimeOptions, 'applicationId' | 'processingGuarantee' | 'commitIntervalMs'>;
  readonly topology: Topology;
  readonly metrics: ProcessingMetrics;
  /** The Kafka ports once started. */
  readonly kafka: () => { readonly admin: AdminPort; readonly client?: string } | null;
  readonly clock?: () => number;
}

export class RuntimeMonitor implements InstanceMonitor {
  readonly recent: MetricsHistory;
  private readonly lastCommits = new Map<string, number>();
  private lastCommit: number | undefined;
  private readonly ends = new Map<string, { readonly at: number; readonly offsets: Promise<Map<number, number>>; settled: boolean }>();
  private topicsOfStore: Map<string, readonly string[]> | null = null;
  private readonly clock: () => number;

  constructor(private readonly sources: RuntimeMonitorSources) {
    this.clock = sources.clock ?? Date.now;
    this.recent = new MetricsHistory({ clock: this.clock });
  }

  get applicationId(): string {
    return this.sources.options.applicationId;
  }

  get processingGuarantee(): string {
    return this.sources.options.processingGuarantee;
  }

  get commitIntervalMs(): number {
    return this.sources.options.commitIntervalMs;
  }

  kafkaClient(): string | undefined {
    return this.sources.kafka()?.client;
  }

  /** A commit completed: of these tasks (one task's under exactly-once v1, a whole cut under v2). */
  committed(taskIds: readonly string[], durationMs: number, records: number): void {
    const now = this.clock();
    this.lastCommit = now;
    for (const id of taskIds) this.lastCommits.set(id, now);
    this.recent.commit(durationMs, records);
  }

  commits(): number {
    return this.sources.metrics.commitLatency.count;
  }

  commitLatencyPercentileMs(p: number): number {
    return this.sources.metrics.commitLatency.percentile(p);
  }

  lastCommitAt(): number | undefined {
    return this.lastCommit;
  }

  taskLastCommitAt(taskId: string): number | undefined {
    return this.lastCommits.get(taskId);
  }

  history(ms: number): readonly MetricsInterval[] {
    return this.recent.intervals(ms);
  }

  async inputEnds(storeName: string, partition: number): Promise<Position> {
    const kafka = this.sources.kafka();
    const position = Position.empty();
    if (kafka === null) return position;
    const topics = this.storeTopics(storeName);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`input ends of ${topics.join(', ')} not read within ${ENDS_WAIT_MS} ms`)), ENDS_WAIT_MS);
    });
    try {
      const ends = await Promise.race([Promise.all(topics.map((topic) => this.topicEnds(kafka.admin, topic))), timeout]);
      topics.forEach((topic, i) => {
        const offset = ends[i]!.get(partition);
        if (offset !== undefined) position.advance(topic, partition, offset);
      });
    } finally {
      clearTimeout(timer);
    }
    return position;
  }

  private storeTopics(storeName: string): readonly string[] {
    if (this.topicsOfStore === null) {
      const groups = sourceTopicGroups(this.sources.topology, this.sources.options.applicationId);
      this.topicsOfStore = new Map();
      for (const sub of this.sources.topology.subTopologies) {
        for (const store of sub.stores) this.topicsOfStore.set(store, groups[sub.id] ?? []);
      }
    }
    return this.topicsOfStore.get(storeName) ?? [];
  }

  private topicEnds(admin: AdminPort, topic: string): Promise<Map<number, number>> {
    const now = this.clock();
    const cached = this.ends.get(topic);
    if (cached !== undefined && (!cached.settled || now - cached.at < ENDS_TTL_MS)) return cached.offsets;
    const offsets = admin.endOffsets(topic);
    const entry = { at: now, offsets, settled: false };
    this.ends.set(topic, entry);
    offsets.then(
      () => {
        entry.settled = true;
      },
      () => {
        // A failed read is not kept: the next request asks again.
        if (this.ends.get(topic) === entry) this.ends.delete(topic);
      },
    );
    return offsets;
  }
}
