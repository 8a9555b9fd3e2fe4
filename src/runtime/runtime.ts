/**
 * The processing runtime: wires topology, store engine, Kafka ports and the task manager, and
 * owns the process-level lifecycle (a small transition table, like the tasks'). One place
 * assembles it all (docs/architecture.md §2).
 *
 * Start-up is patient and loud: an unreachable broker (BROKER_UNAVAILABLE) or a missing input
 * topic (TOPIC_NOT_FOUND) is logged with its code and retried with exponential back-off until
 * stop() or `startupMaxAttempts` — never a silent crash loop.
 *
 * A broker that goes away once running is ridden through: the runtime stays RUNNING and says
 * why it is out of its group in `kafkaError` (BROKER_UNAVAILABLE); tasks whose commit fails are
 * rolled back and re-initialised with back-off, their committed stores intact and readable;
 * the consumer rejoins by itself when the broker is back (test/integration/processing/broker-outage.test.ts).
 *
 * Beside it: StartupRetry (the start-up back-off), prepareTopics (the topics it needs before
 * joining its group) and StoreLocator (the local-store and partition-owner lookups of queries).
 */
import { pino, type Logger } from 'pino';
import { IqgateError } from '../errors.js';
import type { KafkaPorts } from '../processing/ports.js';
import type { StreamTask } from '../processing/stream-task.js';
import { TaskManager } from '../processing/task-manager.js';
import { changelogTopic } from '../processing/topic-names.js';
import type { Topology } from '../processing/topology.js';
import { HostedListeners, type HostedListener } from '../store/hosted-listeners.js';
import { createInMemoryStoreEngine, openLevelStoreEngine } from '../store/index.js';
import type { Serde, StoreEngine } from '../store/types.js';
import { crashHookFromEnv } from './crash-points.js';
import { createRuntimePorts, groupSelfOf } from './kafka-wiring.js';
import { decideWarmup } from '../processing/join-warmup.js';
import { prepareTopics, sourceTopicGroups } from './prepare-topics.js';
import { ProcessingMetrics, type ProcessingMetricsSnapshot } from './processing-metrics.js';
import { RuntimeMonitor } from './runtime-monitor.js';
import { advertisedUrlSchema, parseRuntimeOptions, type RuntimeOptions, type RuntimeOptionsInput } from './runtime-options.js';
import { QueryShare } from './query-share.js';
import { ownedRepartitionPartitions } from './owned-partitions.js';
import { RepartitionPurger } from './repartition-purger.js';
import { StartupRetry } from './startup-retry.js';
import type { TaskPlacement } from '../processing/standby-placement.js';
import type { StandbyTaskView } from '../processing/standby-tasks.js';
import { StoreLocator, type LocalStore, type TaskOwner } from './store-locator.js';
import { performance } from 'node:perf_hooks';

export { sourceTopicGroups } from './prepare-topics.js';
export type { LocalStore, TaskOwner } from './store-locator.js';

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

export interface RuntimeStopOptions {
  /** Take this instance out of its consumer group at once (see Runtime.stop). Default: the `leaveGroupOnStop` option. */
  readonly leaveGroup?: boolean;
}

/** How the runtime shuts down: a graceful stop commits first; only a graceful stop may leave the group. */
interface ShutdownMode {
  readonly commit: boolean;
  readonly leaveGroup: boolean;
}

export interface StoreDefinitionInfo {
  readonly storeName: string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  /** Known once started (the source partition count of the store's sub-topology). */
  readonly partitions: number | undefined;
  readonly changelogTopic: string;
}

export class Runtime {
  state: RuntimeState = 'CREATED';
  readonly options: RuntimeOptions;
  readonly metrics = new ProcessingMetrics();
  /** The figures of the /dashboard page (last commits, recent history, input ends). */
  readonly monitor: RuntimeMonitor;
  readonly logger: Logger;
  private readonly topology: Topology;
  private ports: KafkaPorts | null = null;
  private engine: StoreEngine | null = null;
  private manager: TaskManager | null = null;
  /** Hear of each store partition its manager opens (onPartitionHosted), across restarts of the manager. */
  private readonly hosted = new HostedListeners();
  private readonly partitionsOfStore = new Map<string, number>();
  private readonly partitionsOfRepartition = new Map<string, number>();
  private stopRequested = false;
  private readonly startupRetry: StartupRetry;
  private readonly locator: StoreLocator;
  private consumerRun: Promise<void> | null = null;
  private resolveDone!: () => void;
  private rejectDone!: (error: unknown) => void;
  /** Settles when the runtime has stopped: resolves after stop(), rejects after a fatal error. */
  readonly done: Promise<void>;
  fatalError: unknown = null;
  /** A fatal error came while a stop was under way: that stop finishes, and `done` rejects with it. */
  private failedWhileStopping = false;
  /**
   * Why this instance is out of its consumer group right now — the coded error of the
   * consumer's last failed attempt, BROKER_UNAVAILABLE while the broker is away — or null while
   * it is a member. Not fatal: the consumer reconnects and rejoins by itself, and the runtime
   * stays RUNNING with its committed state intact.
   */
  kafkaError: IqgateError | null = null;
  private advertised: string | undefined;
  /** The event loop's split between waiting gateway requests (serve()) and processing. */
  readonly queryShare: QueryShare;
  /**
   * Where this instance is in its group: JOINING until the first assignment, REBALANCING from
   * a rebalance's start (kafkajs' REBALANCING, or partitions revoked or lost) until its
   * assignment, ASSIGNED after it. `settled`: every task of the latest assignment has been
   * RUNNING since (see rebalancing()).
   */
  private membership: 'JOINING' | 'REBALANCING' | 'ASSIGNED' = 'JOINING';
  private settled = false;
  /**
   * Where start-up time goes, as epoch milliseconds (see StartupTimings); logged once, at info,
   * as 'start-up timings' when every task of the first assignment is RUNNING (bench:restart
   * reads that line).
   */
  readonly startupTimings: StartupTimings = { processStart: Math.round(performance.timeOrigin) };
  private startupWatch: NodeJS.Timeout | null = null;
  private purger: RepartitionPurger | null = null;

  constructor(private readonly config: RuntimeConfig) {
    this.options = parseRuntimeOptions(config);
    this.queryShare = new QueryShare(this.options.queryShare, this.options.processingSliceMs);
    this.advertised = this.options.advertisedUrl;
    this.topology = config.topology;
    this.logger = (config.logger ?? pino({ level: this.options.logLevel })).child({ app: this.options.applicationId });
    this.startupRetry = new StartupRetry(this.options, this.logger, () => this.stopRequested);
    this.locator = new StoreLocator({
      topology: this.topology,
      applicationId: this.options.applicationId,
      registry: () => this.manager?.stores,
      owners: () => this.ports?.consumer.partitionOwners?.() ?? [],
    });
    this.monitor = new RuntimeMonitor({ options: this.options, topology: this.topology, metrics: this.metrics, kafka: () => this.ports });
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
    this.monitor.recent.start();
    const timings = this.startupTimings;
    timings.start = Date.now();
    const o = this.options;
    const groups = sourceTopicGroups(this.topology, o.applicationId);
    try {
      if (o.numStandbyReplicas > 0 && this.advertised === undefined) {
        throw new IqgateError('INVALID_CONFIG', 'numStandbyReplicas needs advertisedUrl: standby replicas are placed by the group\'s owner map, which instances learn from the URLs they advertise');
      }
      // The state directory first: one that another instance holds (STATE_DIR_LOCKED) or that
      // this process cannot write (STATE_DIR_NOT_WRITABLE) stops start-up before anything —
      // topics, the instance id file, the consumer group — is touched.
      this.engine = this.config.storeEngine ?? (o.stateDir !== undefined
        ? await openLevelStoreEngine({
          directory: o.stateDir,
          ...this.storeOptions(),
          // Kafka Streams' corrupted-task path: wipe and restore, never a crash loop on a bad file.
          onWipe: (reason) => this.logger.warn({ stateDir: o.stateDir, reason }, 'the state directory is damaged: its LevelDB files are wiped and every store restores from its changelog'),
        })
        : createInMemoryStoreEngine(this.storeOptions()));
      timings.storeOpened = Date.now();
      if (this.stopRequested) {
        await this.release(); // stop() came while the directory opened: its release found no engine
        return;
      }
      const ports = this.config.ports ?? createRuntimePorts({ options: o, topology: this.topology, advertisedUrl: this.advertised, logger: this.logger });
      this.ports = ports;
      await this.startupRetry.run('prepare topics', () => prepareTopics({
        admin: ports.admin, topology: this.topology, options: o, groups, partitionsOfStore: this.partitionsOfStore, partitionsOfRepartition: this.partitionsOfRepartition,
      }));
      if (this.stopRequested) return;
      timings.topicsReady = Date.now();
      const crash = crashHookFromEnv();
      const manager = new TaskManager({
        topology: this.topology,
        options: o,
        ports,
        engine: this.engine,
        logger: this.logger.child({ component: 'tasks' }),
        pacer: this.queryShare,
        repartitionPartitions: this.partitionsOfRepartition,
        standbyPlacement: () => this.standbyPlacement(),
        events: {
          onInstanceCommit: (outcome) => {
            this.monitor.committed(outcome.taskIds, outcome.durationMs, outcome.records);
            this.metrics.commitLatency.add(outcome.durationMs);
            this.metrics.recordsCommitted += outcome.records;
            this.metrics.commitSend.add(outcome.phasesMs.send);
            this.metrics.commitOffsets.add(outcome.phasesMs.offsets);
            this.metrics.commitKafka.add(outcome.phasesMs.kafkaCommit);
            this.metrics.commitStore.add(outcome.phasesMs.storeCommit);
          },
          onCommit: (taskId, durationMs, records, phases) => {
            this.monitor.committed([taskId], durationMs, records);
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
          onTransactionAborted: () => (this.metrics.transactionsAborted += 1),
          onControlWait: (ms) => this.metrics.controlWait.add(ms),
          onFatal: (error) => this.onFatal(error),
        },
      });
      this.manager = manager;
      manager.stores.watch((storeName, partition) => this.hosted.tell(storeName, partition));
      manager.start();
      await this.warmUpBeforeJoin(ports, manager);
      timings.warmedUp = Date.now();
      if (this.stopRequested) return;
      this.consumerRun = ports.consumer.run({
        onBatch: (tp, records) => manager.onBatch(tp, records),
        onAssignment: (assignment) => {
          if (this.kafkaError !== null) this.logger.info({ code: this.kafkaError.code }, 'back in the consumer group');
          this.kafkaError = null;
          manager.onAssignment(assignment);
          this.membership = 'ASSIGNED';
          this.settled = false;
          if (timings.assigned === undefined) {
            timings.assigned = Date.now();
            this.watchStartup();
          }
        },
        onRebalancing: () => {
          this.membership = 'REBALANCING';
          manager.onRebalancing();
        },
        onRevoked: (partitions, lost) => {
          this.membership = 'REBALANCING';
          // Lost: the group let this member go (its session expired: the broker unreachable, the
          // process frozen or cut off); the next assignment clears it, as after an outage.
          if (lost && this.kafkaError === null) {
            this.kafkaError = new IqgateError('BROKER_UNAVAILABLE', 'out of the consumer group: its session expired (broker unreachable, or the process was frozen or cut off); rejoining', { retriable: true });
          }
          return manager.onRevoked(partitions, lost);
        },
        readyForMore: () => manager.readyForMore(),
        maxRecordsPerFetch: () => manager.maxRecordsPerFetch(),
        onReconnected: () => {
          if (this.kafkaError !== null) this.logger.info({ code: this.kafkaError.code }, 'the Kafka connection is back');
          this.kafkaError = null;
        },
        onCrash: (error) => manager.onCrash(error),
        onReconnecting: (error) => {
          // Once per outage (and code): kafkajs retries every second or two, and logs each retry itself.
          if (this.kafkaError?.code !== error.code) this.logger.warn({ code: error.code, err: error }, 'lost the consumer group; reconnecting (the committed state stays readable)');
          this.kafkaError = error;
        },
      });
      await this.consumerRun;
      // Stopped while the consumer connected: the stop releases what was started (before, start
      // went on to RUNNING and threw an illegal transition from STOPPED).
      if (this.stopRequested) return;
      timings.consumerRunning = Date.now();
      // Repartition records, once committed past, are deleted (repartition-purger.ts).
      if (this.partitionsOfRepartition.size > 0) {
        this.purger = new RepartitionPurger({
          admin: ports.admin,
          groupId: o.applicationId,
          intervalMs: o.repartitionPurgeIntervalMs,
          owned: () => ownedRepartitionPartitions(manager.localTasks(), groups, this.partitionsOfRepartition),
          logger: this.logger,
        });
        this.purger.start();
      }
      this.transition('RUNNING');
      this.logger.info({ topics: groups.flat() }, 'runtime running');
    } catch (error) {
      if (this.state === 'STARTING') {
        this.transition('FAILED');
        // The task manager may be running already (its commit timer, its standby polls): closed
        // first, or it outlived the failed start, asking a closed admin (audit, 2026-12-06).
        await this.manager?.closeAll().catch(() => undefined);
        await this.release();
        this.rejectDone(error);
      }
      throw error;
    }
  }

  /** Until every task of the first assignment runs: notes the time and logs the timings once. */
  private watchStartup(): void {
    const check = (): void => {
      if (this.state === 'STOPPING' || this.state === 'STOPPED' || this.state === 'FAILED') {
        if (this.startupWatch !== null) clearInterval(this.startupWatch);
        return;
      }
      if (!this.everyTaskRunning()) return;
      if (this.startupWatch !== null) clearInterval(this.startupWatch);
      this.startupWatch = null;
      const t = this.startupTimings;
      t.tasksRunning = Date.now();
      this.logger.info({ startupTimings: t, tasks: this.localTasks().length, sinceProcessStartMs: t.tasksRunning - t.processStart }, 'start-up timings');
    };
    this.startupWatch = setInterval(check, 2);
    this.startupWatch.unref();
  }

  private storeOptions(): { cacheMaxBytes?: number; uncommittedMaxBytes?: number } {
    return {
      ...(this.options.cacheMaxBytes !== undefined ? { cacheMaxBytes: this.options.cacheMaxBytes } : {}),
      ...(this.options.uncommittedMaxBytes !== undefined ? { uncommittedMaxBytes: this.options.uncommittedMaxBytes } : {}),
    };
  }

  private onFatal(error: unknown): void {
    this.fatalError = error;
    if (this.state === 'STOPPING' || this.state === 'STOPPED') {
      // The stop under way (a graceful stop whose last commit met a record under the `fail`
      // policy, say) closes everything, and `done` then says why: a second shutdown beside it
      // closed the consumer, the clients and the stores twice (audit, 2026-12-06).
      this.failedWhileStopping = true;
      this.logger.error({ err: error }, 'runtime failed while stopping; the stop goes on');
      return;
    }
    if (this.state === 'STARTING' || this.state === 'RUNNING') this.transition('FAILED');
    this.logger.error({ err: error }, 'runtime failed; stopping without committing');
    // A failed instance never leaves its group: it may have failed because another process runs
    // with its identity (fenced), and a LeaveGroup by group.instance.id would take that one out.
    void this.shutdownWithin({ commit: false, leaveGroup: false }).then(() => this.rejectDone(error), () => this.rejectDone(error));
  }

  /**
   * Graceful stop: commits processed records, closes the consumer (a dynamic member leaves the
   * group), closes stores and clients. `leaveGroup` (default: the `leaveGroupOnStop` option)
   * matters under static membership (the librdkafka client with a state directory): true takes
   * this instance out of the group at once, so the others take its partitions now (a
   * scale-down); false keeps its place until its session times out, so a restart on the same
   * state directory takes it back without a rebalance. The call that starts the stop decides;
   * a later call waits for that stop.
   */
  async stop(options: RuntimeStopOptions = {}): Promise<void> {
    this.stopRequested = true;
    this.startupRetry.wake();
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
      // still preparing topics (the start-up retry gives up at the next wake-up) or warming up
      // for the join (its standbys close first)
      this.transition('STOPPING');
      await this.manager?.closeAll();
      await this.release();
      this.transition('STOPPED');
      this.resolveDone();
      return;
    }
    const leaveGroup = options.leaveGroup ?? this.options.leaveGroupOnStop;
    this.logger.info({ leaveGroup }, 'stopping: last commits, then closing the consumer, tasks and clients');
    this.transition('STOPPING');
    await this.shutdownWithin({ commit: true, leaveGroup });
    this.transition('STOPPED');
    if (this.failedWhileStopping) this.rejectDone(this.fatalError);
    else this.resolveDone();
  }

  /**
   * shutdown(), bounded by stopTimeoutMs. When it hangs (typically kafkajs retrying against a
   * broker that is gone), processing and commits stop and every client and store is closed now.
   * Commits still in flight fail on closed clients; what they did not finish is aborted by the
   * next owner's InitProducerId, and the stores only ever hold committed data.
   */
  private async shutdownWithin(how: ShutdownMode): Promise<void> {
    const timeoutMs = this.options.stopTimeoutMs;
    if (await settlesWithin(this.shutdown(how), timeoutMs)) return;
    this.logger.warn({ stopTimeoutMs: timeoutMs }, 'stop timed out; closing Kafka clients and stores without waiting');
    this.manager?.abandon();
    await settlesWithin(this.release(), timeoutMs);
  }

  private async shutdown(how: ShutdownMode): Promise<void> {
    const manager = this.manager;
    const started = Date.now();
    // Where a stop's time goes (a scale-down's moved partitions wait for the first two).
    const phasesMs: Record<string, number> = {};
    const mark = (phase: string, since: number): number => {
      const now = Date.now();
      phasesMs[phase] = now - since;
      return now;
    };
    let at = started;
    if (manager !== null) {
      this.ports?.consumer.prepareStop?.({ leaveGroup: how.leaveGroup });
      if (how.commit) await manager.commitAll();
      at = mark('commit', at);
      await this.ports?.consumer.stop({ leaveGroup: how.leaveGroup }).catch((error: unknown) => this.logger.warn({ err: error }, 'consumer stop failed'));
      at = mark('consumer', at);
      await manager.closeAll();
      at = mark('tasks', at);
    }
    await this.release();
    mark('clients', at);
    this.logger.info({ leaveGroup: how.leaveGroup, ms: Date.now() - started, phasesMs }, 'stopped');
  }

  private async release(): Promise<void> {
    await this.purger?.stop();
    this.purger = null;
    this.monitor.recent.stop();
    if (this.startupWatch !== null) clearInterval(this.startupWatch);
    this.startupWatch = null;
    await this.ports?.close().catch(() => undefined);
    if (this.config.storeEngine === undefined) await this.engine?.close().catch(() => undefined);
  }

  /**
   * A request to the gateway started; call the returned function once it no longer waits (its
   * answer written). While any waits, processing keeps only part of the event loop
   * (`queryShare`, src/runtime/query-share.ts).
   */
  requestStarted(): () => void {
    return this.queryShare.requestStarted();
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
    return this.locator.localStores();
  }

  /** One local store partition by name and partition, or undefined when not hosted here (StoreLocator.localStore). */
  localStore(storeName: string, partition: number): LocalStore | undefined {
    return this.locator.localStore(storeName, partition);
  }

  /** `listener` hears of each store partition opened here from now on, an active task's or a standby's, until the returned function is called. */
  onPartitionHosted(listener: HostedListener): () => void {
    return this.hosted.add(listener);
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
    return this.locator.partitionOwners();
  }

  /**
   * A warm join (join-warmup.ts): when the group already has members other than this instance,
   * every task with state is tailed here first, so the tasks the group moves here replay only
   * the tail. Any failure to describe the group joins at once.
   */
  private async warmUpBeforeJoin(ports: KafkaPorts, manager: TaskManager): Promise<void> {
    const o = this.options;
    if (o.warmupTimeoutMs === 0) return;
    const group = ports.admin.groupMembers === undefined ? null : await ports.admin.groupMembers(o.applicationId).catch((error: unknown) => {
      this.logger.warn({ err: error }, 'describing the consumer group failed; joining without a warm-up');
      return null;
    });
    const decision = decideWarmup(group, groupSelfOf(o), this.partitionsOfStore.size > 0);
    if (!decision.warm) {
      this.logger.info({ reason: decision.reason }, 'joining the group without a warm-up');
      return;
    }
    this.logger.info({ members: decision.members, warmupTimeoutMs: o.warmupTimeoutMs, acceptableRecoveryLag: o.acceptableRecoveryLag }, 'warming up every task with state before joining the group');
    const outcome = await manager.warmUp(this.partitionsOfStore, () => this.stopRequested);
    if (outcome === null) return;
    const figures = { tasks: outcome.wanted, ready: outcome.ready, behind: outcome.behind, ms: outcome.ms };
    if (outcome.timedOut && !this.stopRequested) this.logger.warn(figures, 'warm-up timed out; joining the group with tasks still behind');
    else this.logger.info(figures, 'warm-up done; joining the group');
  }

  /** The tasks this instance keeps standbys of, as placed over the owner map (standby-placement.ts). */
  private standbyPlacement(): TaskPlacement[] {
    const self = this.advertised;
    if (self === undefined || this.options.numStandbyReplicas === 0) return [];
    return this.locator.placements(this.options.numStandbyReplicas).filter((p) => p.standbys.includes(self));
  }

  /** The URLs keeping standbys of partition `partition` of a store (maybe this one), in order of preference. */
  storeStandbys(storeName: string, partition: number): readonly string[] {
    return this.locator.storeStandbys(storeName, partition, this.options.numStandbyReplicas);
  }

  /** The URL of the instance hosting partition `partition` of a store (maybe this one); undefined when unknown. */
  storeOwner(storeName: string, partition: number): string | undefined {
    return this.locator.storeOwner(storeName, partition);
  }

  /**
   * True while the instance rebalances, as Kafka Streams' REBALANCING: from start-up or a
   * rebalance's start until the group's assignment has arrived and every task it brought has
   * restored and been RUNNING. A task that later stops (a failed commit while the broker is
   * away) does not make it true again: that is no rebalance, and `kafkaError` says why.
   * Only while the runtime is RUNNING; false otherwise.
   */
  rebalancing(): boolean {
    if (this.state !== 'RUNNING') return false;
    if (this.membership !== 'ASSIGNED') return true;
    if (!this.settled) this.settled = this.everyTaskRunning();
    return !this.settled;
  }

  /**
   * Readiness (GET /ready): the runtime is RUNNING, has had an assignment, and every task it
   * hosts is RUNNING right now — so a load balancer sends no query to partitions that would
   * answer NOT_ACTIVE while they restore or recover. During a rebalance whose tasks keep
   * running (cooperative, or before an eager one's new assignment) it stays ready; an instance
   * assigned no partition is ready.
   */
  ready(): boolean {
    return this.state === 'RUNNING' && this.membership !== 'JOINING' && this.everyTaskRunning();
  }

  private everyTaskRunning(): boolean {
    for (const task of this.localTasks()) if (task.state !== 'RUNNING') return false;
    return true;
  }

  localTasks(): ReadonlyArray<Pick<StreamTask, 'id' | 'partition' | 'state'>> {
    return this.manager?.localTasks() ?? [];
  }

  /** The standby replicas kept here (numStandbyReplicas), with their lag. */
  standbyTasks(): readonly StandbyTaskView[] {
    return this.manager?.standbyTasks() ?? [];
  }

  /** Bytes held uncommitted by all tasks (write batches, also those being committed, and dirty cache entries): KIP-892's figure, against `uncommittedMaxBytes`. */
  uncommittedBytes(): number {
    return this.engine?.uncommittedBytes() ?? 0;
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
      transactionsAborted: this.metrics.transactionsAborted,
    };
  }
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

/**
 * Start-up marks, epoch milliseconds: the process's start (performance.timeOrigin), start()
 * called, the state directory open, the topics checked and created, the consumer running, the
 * first assignment applied, and every task of it RUNNING (restored). Absent until reached.
 */
export interface StartupTimings {
  readonly processStart: number;
  start?: number;
  storeOpened?: number;
  topicsReady?: number;
  /** The warm-up before the join done (or skipped): join-warmup.ts. */
  warmedUp?: number;
  consumerRunning?: number;
  assigned?: number;
  tasksRunning?: number;
}

export function createRuntime(config: RuntimeConfig): Runtime {
  return new Runtime(config);
}
