/**
 * The processing runtime: wires topology, store engine, Kafka ports and the task manager, and
 * owns the process-level lifecycle (a small transition table, like the tasks'). One place
 * assembles it all (DESIGN.md §2).
 *
 * Start-up is patient and loud: an unreachable broker (BROKER_UNAVAILABLE) or a missing input
 * topic (TOPIC_NOT_FOUND) is logged with its code and retried with exponential back-off until
 * stop() or `startupMaxAttempts` — never a silent crash loop.
 *
 * A broker that goes away once running is ridden through: the runtime stays RUNNING and says
 * why it is out of its group in `kafkaError` (BROKER_UNAVAILABLE); tasks whose commit fails are
 * rolled back and re-initialised with back-off, their committed stores intact and readable;
 * the consumer rejoins by itself when the broker is back (test/integration/processing/broker-outage.test.ts).
 */
import { pino, type Logger } from 'pino';
import { IqgateError, isIqgateError } from '../errors.js';
import { createKafkaPorts } from '../kafka/kafka-ports.js';
import type { KafkaPorts, PartitionOwner, TopicSpec } from '../processing/ports.js';
import type { StreamTask } from '../processing/stream-task.js';
import { TaskManager } from '../processing/task-manager.js';
import type { TaskState } from '../processing/task-state.js';
import { changelogTopic, internalTopic, taskIdFor } from '../processing/topic-names.js';
import type { Topology } from '../processing/topology.js';
import { createInMemoryStoreEngine, openLevelStoreEngine } from '../store/index.js';
import type { KeyValueStorePartition, Serde, StoreEngine } from '../store/types.js';
import { crashHookFromEnv } from './crash-points.js';
import { ProcessingMetrics, type ProcessingMetricsSnapshot } from './processing-metrics.js';
import { advertisedUrlSchema, parseRuntimeOptions, type RuntimeOptions, type RuntimeOptionsInput } from './runtime-options.js';

export type RuntimeState = 'CREATED' | 'STARTING' | 'RUNNING' | 'STOPPING' | 'STOPPED' | 'FAILED';

const RUNTIME_TRANSITIONS: Readonly<Record<RuntimeState, readonly RuntimeState[]>> = {
  CREATED: ['STARTING', 'STOPPED'],
  STARTING: ['RUNNING', 'STOPPING', 'FAILED'],
  RUNNING: ['STOPPING', 'FAILED'],
  STOPPING: ['STOPPED', 'FAILED'],
  STOPPED: [],
  FAILED: ['STOPPED'],
};

export interface RuntimeConfig extends RuntimeOptionsInput {
  readonly topology: Topology;
  /** Defaults: LevelDB at `stateDir`, or in memory without one. */
  readonly storeEngine?: StoreEngine;
  readonly logger?: Logger;
  /** Tests: replace Kafka with in-memory ports. */
  readonly ports?: KafkaPorts;
}

export interface StoreDefinitionInfo {
  readonly storeName: string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  /** Known once started (the source partition count of the store's sub-topology). */
  readonly partitions: number | undefined;
  readonly changelogTopic: string;
}

/** Who hosts a task: the URL its owner advertises (application.server), as of the last rebalance. */
export interface TaskOwner {
  readonly subTopology: number;
  readonly partition: number;
  readonly url: string;
}

export interface LocalStore {
  readonly storeName: string;
  readonly partition: number;
  readonly taskId: string;
  readonly taskState: TaskState;
  readonly store: KeyValueStorePartition;
}

export class Runtime {
  state: RuntimeState = 'CREATED';
  readonly options: RuntimeOptions;
  readonly metrics = new ProcessingMetrics();
  readonly logger: Logger;
  private readonly topology: Topology;
  private ports: KafkaPorts | null = null;
  private engine: StoreEngine | null = null;
  private manager: TaskManager | null = null;
  private readonly partitionsOfStore = new Map<string, number>();
  private stopRequested = false;
  private wake: (() => void) | null = null;
  private consumerRun: Promise<void> | null = null;
  private resolveDone!: () => void;
  private rejectDone!: (error: unknown) => void;
  /** Settles when the runtime has stopped: resolves after stop(), rejects after a fatal error. */
  readonly done: Promise<void>;
  fatalError: unknown = null;
  /**
   * Why this instance is out of its consumer group right now — the coded error of the
   * consumer's last failed attempt, BROKER_UNAVAILABLE while the broker is away — or null while
   * it is a member. Not fatal: the consumer reconnects and rejoins by itself, and the runtime
   * stays RUNNING with its committed state intact.
   */
  kafkaError: IqgateError | null = null;
  private advertised: string | undefined;
  private ownersCache: { readonly source: readonly PartitionOwner[]; readonly tasks: TaskOwner[] } | null = null;

  constructor(private readonly config: RuntimeConfig) {
    this.options = parseRuntimeOptions(config);
    this.advertised = this.options.advertisedUrl;
    this.topology = config.topology;
    this.logger = (config.logger ?? pino({ level: this.options.logLevel })).child({ app: this.options.applicationId });
    this.done = new Promise<void>((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    this.done.catch(() => undefined);
  }

  private transition(to: RuntimeState): void {
    if (!RUNTIME_TRANSITIONS[this.state].includes(to)) {
      throw new IqgateError('ILLEGAL_STATE_TRANSITION', `runtime: illegal transition ${this.state} → ${to}`);
    }
    this.state = to;
  }

  /** Resolves once the runtime is set up and consuming (tasks open as the group assigns them). */
  async start(): Promise<void> {
    this.transition('STARTING');
    const o = this.options;
    const groups = sourceTopicGroups(this.topology, o.applicationId);
    const ports = this.config.ports ?? createKafkaPorts({
      brokers: o.brokers,
      clientId: o.clientId,
      logLevel: o.kafkaLogLevel,
      log: this.logger.child({ component: 'kafkajs' }),
      transactionTimeoutMs: o.transactionTimeoutMs,
      consumer: {
        groupId: o.applicationId,
        topics: groups.flat(),
        taskGroups: groups,
        sessionTimeoutMs: o.sessionTimeoutMs,
        heartbeatIntervalMs: o.heartbeatIntervalMs,
        rebalanceTimeoutMs: o.rebalanceTimeoutMs,
        maxWaitTimeMs: o.maxWaitTimeMs,
        maxBytesPerPartition: o.fetchMaxBytesPerPartition,
        maxBytes: o.fetchMaxBytes,
        ...(this.advertised === undefined ? {} : { advertisedUrl: this.advertised }),
        onOwnersError: (error) => this.logger.warn({ err: error }, 'learning the partition owners (describeGroup) failed; routing waits for the next rebalance'),
      },
    });
    this.ports = ports;
    try {
      await this.withStartupRetry('prepare topics', () => this.prepareTopics(ports, groups));
      if (this.stopRequested) return;
      this.engine = this.config.storeEngine ?? (o.stateDir !== undefined
        ? await openLevelStoreEngine({ directory: o.stateDir, ...this.storeOptions() })
        : createInMemoryStoreEngine(this.storeOptions()));
      const crash = crashHookFromEnv();
      const manager = new TaskManager({
        topology: this.topology,
        options: o,
        ports,
        engine: this.engine,
        logger: this.logger.child({ component: 'tasks' }),
        events: {
          onCommit: (_taskId, durationMs, records, phases) => {
            this.metrics.commitLatency.add(durationMs);
            this.metrics.recordsCommitted += records;
            if (phases !== undefined) {
              this.metrics.commitSend.add(phases.send);
              this.metrics.commitOffsets.add(phases.offsets);
              this.metrics.commitKafka.add(phases.kafkaCommit);
              this.metrics.commitStore.add(phases.storeCommit);
            }
          },
          onRestoreProgress: (p) => {
            if (p.done) {
              this.metrics.restoredRecords += p.restored;
              this.logger.info(p, 'restore finished');
            } else this.logger.debug(p, 'restore progress');
          },
          ...(crash ? { onCommitStep: crash } : {}),
          onSlice: (ms) => this.metrics.slices.add(ms),
          onControlWait: (ms) => this.metrics.controlWait.add(ms),
          onFatal: (error) => this.onFatal(error),
        },
      });
      this.manager = manager;
      manager.start();
      this.consumerRun = ports.consumer.run({
        onBatch: (tp, records) => manager.onBatch(tp, records),
        onAssignment: (assignment) => {
          if (this.kafkaError !== null) this.logger.info({ code: this.kafkaError.code }, 'back in the consumer group');
          this.kafkaError = null;
          manager.onAssignment(assignment);
        },
        onRebalancing: () => manager.onRebalancing(),
        onCrash: (error) => manager.onCrash(error),
        onReconnecting: (error) => {
          // Once per outage (and code): kafkajs retries every second or two, and logs each retry itself.
          if (this.kafkaError?.code !== error.code) this.logger.warn({ code: error.code, err: error }, 'lost the consumer group; reconnecting (the committed state stays readable)');
          this.kafkaError = error;
        },
      });
      await this.consumerRun;
      this.transition('RUNNING');
      this.logger.info({ topics: groups.flat() }, 'runtime running');
    } catch (error) {
      if (this.state === 'STARTING') {
        this.transition('FAILED');
        await this.release();
        this.rejectDone(error);
      }
      throw error;
    }
  }

  private storeOptions(): { cacheMaxBytes?: number; uncommittedMaxBytes?: number } {
    return {
      ...(this.options.cacheMaxBytes !== undefined ? { cacheMaxBytes: this.options.cacheMaxBytes } : {}),
      ...(this.options.uncommittedMaxBytes !== undefined ? { uncommittedMaxBytes: this.options.uncommittedMaxBytes } : {}),
    };
  }

  /** Checks the input topics and creates the internal ones (repartition, changelog, dead-letter). */
  private async prepareTopics(ports: KafkaPorts, groups: readonly string[][]): Promise<void> {
    const appId = this.options.applicationId;
    const internal = new Set<string>();
    for (const node of this.topology.nodes.values()) {
      if ((node.kind === 'source' || node.kind === 'sink') && node.internal) internal.add(internalTopic(appId, node.topic));
    }
    const external = [...new Set(groups.flat())].filter((t) => !internal.has(t));
    const counts = await ports.admin.partitionCounts(external);
    // Repartition topics get the partition count of the sub-topology that writes them, resolved
    // upstream first (Kafka Streams: max of the upstream source partitions).
    const subOfTopic = new Map<string, number>();
    groups.forEach((topics, i) => topics.forEach((t) => subOfTopic.set(t, i)));
    const specs: TopicSpec[] = [];
    for (let round = 0; round < groups.length + 1; round += 1) {
      for (const node of this.topology.nodes.values()) {
        if (node.kind !== 'sink' || !node.internal) continue;
        const topic = internalTopic(appId, node.topic);
        if (counts.has(topic)) continue;
        const writer = this.topology.subTopologies.find((s) => s.nodes.includes(node.name));
        const upstream = (writer ? groups[writer.id] ?? [] : []).map((t) => counts.get(t));
        if (upstream.length > 0 && upstream.every((c) => c !== undefined)) {
          counts.set(topic, Math.max(...(upstream as number[])));
          specs.push({ topic, partitions: counts.get(topic) ?? 1, compacted: false });
        }
      }
    }
    for (const sub of this.topology.subTopologies) {
      const partitions = Math.max(...(groups[sub.id] ?? []).map((t) => counts.get(t) ?? 0));
      for (const store of sub.stores) {
        this.partitionsOfStore.set(store, partitions);
        specs.push({ topic: changelogTopic(appId, store), partitions, compacted: true });
      }
    }
    if (this.options.deserializationErrors === 'dead-letter' || this.options.processingErrors === 'dead-letter') {
      specs.push({ topic: this.options.deadLetterTopic, partitions: 1, compacted: false });
    }
    await ports.admin.ensureTopics(specs);
  }

  private async withStartupRetry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    let delay = this.options.startupRetryInitialMs;
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await fn();
      } catch (error) {
        const coded = isIqgateError(error) ? error : new IqgateError('KAFKA_ERROR', `${what}: ${String(error)}`, { cause: error, retriable: true });
        const last = this.options.startupMaxAttempts !== undefined && attempt >= this.options.startupMaxAttempts;
        if (!coded.retriable || last || this.stopRequested) throw coded;
        this.logger.warn({ code: coded.code, attempt, retryInMs: delay, err: coded.message }, `${what} failed; retrying`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = null;
        delay = Math.min(this.options.startupRetryMaxMs, delay * 2);
      }
    }
  }

  private onFatal(error: unknown): void {
    this.fatalError = error;
    if (this.state === 'STARTING' || this.state === 'RUNNING') this.transition('FAILED');
    this.logger.error({ err: error }, 'runtime failed; stopping without committing');
    void this.shutdownWithin(false).then(() => this.rejectDone(error), () => this.rejectDone(error));
  }

  /** Graceful stop: commits processed records, leaves the group, closes stores and clients. */
  async stop(): Promise<void> {
    this.stopRequested = true;
    this.wake?.();
    if (this.state === 'STOPPED') return;
    if (this.state === 'CREATED') {
      this.transition('STOPPED');
      this.resolveDone();
      return;
    }
    if (this.state === 'FAILED') {
      await this.done.catch(() => undefined);
      return;
    }
    if (this.state === 'STOPPING') {
      await this.done.catch(() => undefined);
      return;
    }
    if (this.state === 'STARTING' && this.consumerRun === null) {
      // still preparing topics: withStartupRetry gives up at the next wake-up
      this.transition('STOPPING');
      await this.release();
      this.transition('STOPPED');
      this.resolveDone();
      return;
    }
    this.transition('STOPPING');
    await this.shutdownWithin(true);
    this.transition('STOPPED');
    this.resolveDone();
  }

  /**
   * shutdown(), bounded by stopTimeoutMs. When it hangs (typically kafkajs retrying against a
   * broker that is gone), processing and commits stop and every client and store is closed now.
   * Commits still in flight fail on closed clients; what they did not finish is aborted by the
   * next owner's InitProducerId, and the stores only ever hold committed data.
   */
  private async shutdownWithin(commit: boolean): Promise<void> {
    const timeoutMs = this.options.stopTimeoutMs;
    if (await settlesWithin(this.shutdown(commit), timeoutMs)) return;
    this.logger.warn({ stopTimeoutMs: timeoutMs }, 'stop timed out; closing Kafka clients and stores without waiting');
    this.manager?.abandon();
    await settlesWithin(this.release(), timeoutMs);
  }

  private async shutdown(commit: boolean): Promise<void> {
    const manager = this.manager;
    if (manager !== null) {
      if (commit) await manager.commitAll();
      await this.ports?.consumer.stop().catch((error: unknown) => this.logger.warn({ err: error }, 'consumer stop failed'));
      await manager.closeAll();
    }
    await this.release();
  }

  private async release(): Promise<void> {
    await this.ports?.close().catch(() => undefined);
    if (this.config.storeEngine === undefined) await this.engine?.close().catch(() => undefined);
  }

  /** For the query layer: every store with its serdes and partition count. */
  storeDefinitions(): StoreDefinitionInfo[] {
    return [...this.topology.stores.values()].map((s) => ({
      storeName: s.name,
      keySerde: s.keySerde,
      valueSerde: s.valueSerde,
      partitions: this.partitionsOfStore.get(s.name),
      changelogTopic: changelogTopic(this.options.applicationId, s.name),
    }));
  }

  /** For the query layer: the store partitions of local tasks, with their task state. */
  localStores(): LocalStore[] {
    const result: LocalStore[] = [];
    for (const task of this.manager?.localTasks() ?? []) {
      const stores = task.stores;
      if (stores === null) continue;
      for (const storeName of stores.storeNames()) {
        result.push({ storeName, partition: task.partition, taskId: task.id, taskState: task.state, store: stores.store(storeName) });
      }
    }
    return result;
  }

  /**
   * One local store partition by name and partition, or undefined when not hosted here: a map
   * lookup (task id = sub-topology + partition), since every key query asks and a process may
   * host 1000 tasks.
   */
  localStore(storeName: string, partition: number): LocalStore | undefined {
    const sub = this.subTopologyOfStore(storeName);
    const task = sub === undefined ? undefined : this.manager?.tasks.get(taskIdFor(sub, partition));
    const stores = task?.stores ?? null;
    if (task === undefined || stores === null || !stores.storeNames().includes(storeName)) return undefined;
    return { storeName, partition, taskId: task.id, taskState: task.state, store: stores.store(storeName) };
  }

  private subTopologyOfStore(storeName: string): number | undefined {
    return this.topology.subTopologies.find((s) => s.stores.includes(storeName))?.id;
  }

  /** The URL this instance advertises to its group (option advertisedUrl, or advertise()). */
  advertisedUrl(): string | undefined {
    return this.advertised;
  }

  /**
   * Sets the advertised URL before start(): e.g. once serve() on port 0 knows its URL. The
   * group learns it at the next join, so it cannot change after start (a TypeError).
   */
  advertise(url: string): void {
    if (this.state !== 'CREATED') throw new TypeError(`advertise() must be called before start(); the runtime is ${this.state}`);
    const parsed = advertisedUrlSchema().safeParse(url);
    if (!parsed.success) throw new IqgateError('INVALID_CONFIG', `invalid advertisedUrl ${JSON.stringify(url)}: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
    this.advertised = parsed.data;
  }

  /**
   * Per sub-topology and partition, the URL of the instance hosting the task (this one
   * included), learned from the group after each rebalance; tasks whose owner advertises no
   * URL, or that are not assigned, are absent. Empty without advertisedUrl.
   */
  partitionOwners(): TaskOwner[] {
    const owners = this.ports?.consumer.partitionOwners?.() ?? [];
    if (owners.length === 0) return [];
    // The consumer replaces its list on each refresh: queries in between reuse one mapping.
    if (this.ownersCache?.source === owners) return this.ownersCache.tasks;
    const groups = sourceTopicGroups(this.topology, this.options.applicationId);
    const subOfTopic = new Map<string, number>();
    groups.forEach((topics, id) => topics.forEach((topic) => subOfTopic.set(topic, id)));
    const result = new Map<string, TaskOwner>();
    for (const owner of owners) {
      const subTopology = subOfTopic.get(owner.topic);
      if (subTopology === undefined) continue;
      result.set(`${subTopology}_${owner.partition}`, { subTopology, partition: owner.partition, url: owner.url });
    }
    const tasks = [...result.values()].sort((a, b) => a.subTopology - b.subTopology || a.partition - b.partition);
    this.ownersCache = { source: owners, tasks };
    return tasks;
  }

  /** The URL of the instance hosting partition `partition` of a store (maybe this one); undefined when unknown. */
  storeOwner(storeName: string, partition: number): string | undefined {
    const sub = this.subTopologyOfStore(storeName);
    if (sub === undefined) return undefined;
    return this.partitionOwners().find((o) => o.subTopology === sub && o.partition === partition)?.url;
  }

  localTasks(): ReadonlyArray<Pick<StreamTask, 'id' | 'partition' | 'state'>> {
    return this.manager?.localTasks() ?? [];
  }

  metricsSnapshot(): ProcessingMetricsSnapshot {
    const control = this.manager?.control.stats;
    return {
      commits: this.metrics.commitLatency.count,
      recordsCommitted: this.metrics.recordsCommitted,
      commitLatencyP50Ms: this.metrics.commitLatency.percentile(50),
      commitLatencyP99Ms: this.metrics.commitLatency.percentile(99),
      commitPhasesP50Ms: {
        send: this.metrics.commitSend.percentile(50),
        offsets: this.metrics.commitOffsets.percentile(50),
        kafkaCommit: this.metrics.commitKafka.percentile(50),
        storeCommit: this.metrics.commitStore.percentile(50),
      },
      sliceP99Ms: this.metrics.slices.percentile(99),
      controlWaitP99Ms: this.metrics.controlWait.percentile(99),
      controlQueueDepth: control?.depth ?? 0,
      controlQueueMaxDepth: control?.maxDepth ?? 0,
      controlCoalesced: control?.coalesced ?? 0,
      restoredRecords: this.metrics.restoredRecords,
    };
  }
}

/** Resolved source topics of each sub-topology (internal topics prefixed with the application id). */
export function sourceTopicGroups(topology: Topology, applicationId: string): string[][] {
  return topology.subTopologies.map((sub) => {
    const topics = new Set<string>();
    for (const name of sub.nodes) {
      const node = topology.nodes.get(name);
      if (node?.kind === 'source') topics.add(node.internal ? internalTopic(applicationId, node.topic) : node.topic);
    }
    return [...topics].sort();
  });
}

/** Resolves true if `promise` settles within `ms`, false otherwise (its rejection is logged by the caller or ignored). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), ms); });
  try {
    return await Promise.race([promise.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function createRuntime(config: RuntimeConfig): Runtime {
  return new Runtime(config);
}
