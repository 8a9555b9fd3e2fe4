/**
 * A StateProvider over TaskStores opened from a StoreEngine, for tests and for embedding the
 * query engine without the runtime. Task states and the instance state are set by the caller;
 * every partition of a registered task is hosted here, active unless registered as standby.
 */
import { IqgateError } from '../errors.js';
import { HostedListeners, type HostedListener } from '../store/hosted-listeners.js';
import type { Serde, TaskStores } from '../store/types.js';
import type {
  InstanceError,
  InstanceState,
  LocalStorePartition,
  StateProvider,
  StoreDescriptor,
  TaskDescriptor,
  TaskState,
} from './state-provider.js';
import type { ReplicaLag } from './query-types.js';

export interface StaticStateProviderOptions {
  readonly stores: ReadonlyArray<{
    readonly name: string;
    readonly keySerde: Serde<unknown>;
    readonly valueSerde: Serde<unknown>;
    readonly partitions: number;
  }>;
  /** Default RUNNING. */
  readonly instanceState?: InstanceState;
}

interface TaskEntry {
  readonly tasks: TaskStores;
  state: TaskState;
  readonly active: boolean;
  /** A standby's lag (setLag). */
  lag?: ReplicaLag;
}

export class StaticStateProvider implements StateProvider {
  private readonly descriptors: Map<string, StoreDescriptor>;
  private readonly taskEntries = new Map<string, TaskEntry>();
  private state: InstanceState;
  private kafkaErrorNow: InstanceError | undefined;
  /** store name → partition → owner URL (setRemoteOwner). */
  private readonly owners = new Map<string, Map<number, string>>();
  /** store name → partition → the URLs of standbys elsewhere (setRemoteStandbys). */
  private readonly standbyUrls = new Map<string, Map<number, readonly string[]>>();
  private self: string | undefined;
  private readonly hosted = new HostedListeners();

  constructor(options: StaticStateProviderOptions) {
    this.descriptors = new Map();
    for (const store of options.stores) {
      if (!Number.isInteger(store.partitions) || store.partitions < 1) {
        throw new TypeError(`store ${store.name}: partitions must be a positive integer`);
      }
      this.descriptors.set(store.name, { ...store });
    }
    this.state = options.instanceState ?? 'RUNNING';
  }

  /** Hosts the store partitions of `tasks` here. Throws STORE_NOT_FOUND for an undeclared store. */
  addTask(tasks: TaskStores, options: { state?: TaskState; active?: boolean; lag?: ReplicaLag } = {}): void {
    for (const name of tasks.storeNames()) {
      if (!this.descriptors.has(name)) throw new IqgateError('STORE_NOT_FOUND', `task ${tasks.taskId} has undeclared store ${name}`);
    }
    this.taskEntries.set(tasks.taskId, { tasks, state: options.state ?? 'RUNNING', active: options.active ?? true, ...(options.lag === undefined ? {} : { lag: options.lag }) });
    for (const name of tasks.storeNames()) this.hosted.tell(name, tasks.store(name).partition);
  }

  onPartitionHosted(listener: HostedListener): () => void {
    return this.hosted.add(listener);
  }

  removeTask(taskId: string): void {
    this.taskEntries.delete(taskId);
  }

  setTaskState(taskId: string, state: TaskState): void {
    const entry = this.taskEntries.get(taskId);
    if (entry === undefined) throw new TypeError(`unknown task ${taskId}`);
    entry.state = state;
  }

  /** Declares that another instance, at `url`, hosts this partition; undefined forgets it. */
  setRemoteOwner(storeName: string, partition: number, url: string | undefined): void {
    let byPartition = this.owners.get(storeName);
    if (byPartition === undefined) this.owners.set(storeName, (byPartition = new Map()));
    if (url === undefined) byPartition.delete(partition);
    else byPartition.set(partition, url);
  }

  remoteOwner(storeName: string, partition: number): string | undefined {
    if (this.localPartition(storeName, partition)?.active === true) return undefined;
    return this.owners.get(storeName)?.get(partition);
  }

  /** A standby task's lag as its queries report it. */
  setLag(taskId: string, lag: ReplicaLag): void {
    const entry = this.taskEntries.get(taskId);
    if (entry === undefined) throw new TypeError(`unknown task ${taskId}`);
    entry.lag = lag;
  }

  /** Declares where else standbys of this partition are kept. */
  setRemoteStandbys(storeName: string, partition: number, urls: readonly string[]): void {
    let byPartition = this.standbyUrls.get(storeName);
    if (byPartition === undefined) this.standbyUrls.set(storeName, (byPartition = new Map()));
    byPartition.set(partition, urls);
  }

  remoteStandbys(storeName: string, partition: number): readonly string[] {
    return this.standbyUrls.get(storeName)?.get(partition) ?? [];
  }

  /** The URL answers name as this instance's. */
  setSelfUrl(url: string | undefined): void {
    this.self = url;
  }

  selfUrl(): string | undefined {
    return this.self;
  }

  setInstanceState(state: InstanceState): void {
    this.state = state;
  }

  /** What kafkaError() answers (undefined: in the group). */
  setKafkaError(error: InstanceError | undefined): void {
    this.kafkaErrorNow = error;
  }

  kafkaError(): InstanceError | undefined {
    return this.kafkaErrorNow;
  }

  instanceState(): InstanceState {
    return this.state;
  }

  stores(): readonly StoreDescriptor[] {
    return [...this.descriptors.values()];
  }

  store(name: string): StoreDescriptor | undefined {
    return this.descriptors.get(name);
  }

  localPartition(storeName: string, partition: number): LocalStorePartition | undefined {
    // Linear over tasks: a handful per instance in tests; the runtime keeps an index.
    for (const [taskId, entry] of this.taskEntries) {
      if (!entry.tasks.storeNames().includes(storeName)) continue;
      const store = entry.tasks.store(storeName);
      if (store.partition === partition) return { store, taskId, taskState: entry.state, active: entry.active, ...(entry.lag === undefined ? {} : { lag: entry.lag }) };
    }
    return undefined;
  }

  tasks(): readonly TaskDescriptor[] {
    return [...this.taskEntries.entries()].map(([taskId, entry]) => ({
      taskId,
      state: entry.state,
      active: entry.active,
      ...(entry.lag === undefined ? {} : { lag: entry.lag }),
      stores: entry.tasks.storeNames().map((storeName) => ({ storeName, partition: entry.tasks.store(storeName).partition })),
    }));
  }
}
