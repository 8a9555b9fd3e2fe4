/**
 * The port through which the query engine sees the state of this instance. The runtime
 * implements it over its task manager; `createStaticStateProvider` implements it over a
 * StoreEngine's TaskStores for tests and embedding. The engine only reads through it.
 */
import type { KeyValueStorePartition, Serde } from '../store/types.js';
import type { HostedListener } from '../store/hosted-listeners.js';
import type { ReplicaLag } from './query-types.js';
import type { InstanceMonitor } from './instance-monitor.js';

/** Task states as Kafka Streams names them; only RUNNING tasks serve by default. */
export type TaskState = 'CREATED' | 'RESTORING' | 'RUNNING' | 'SUSPENDED' | 'CLOSED';

/** Instance lifecycle as the runtime reports it; queries need RUNNING (or REBALANCING). */
export type InstanceState = 'CREATED' | 'STARTING' | 'REBALANCING' | 'RUNNING' | 'PENDING_SHUTDOWN' | 'NOT_RUNNING' | 'ERROR';

/** A logical store as defined by the topology: the same on every instance. */
export interface StoreDescriptor {
  readonly name: string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  /** Partitions of the store across the whole application (= input partitions). */
  readonly partitions: number;
}

/** One store partition hosted here, with the state of the task that owns it. */
export interface LocalStorePartition {
  readonly store: KeyValueStorePartition;
  readonly taskId: string;
  readonly taskState: TaskState;
  /** False for a standby replica (IQv2's requireActive fails it with NOT_ACTIVE). */
  readonly active: boolean;
  /** A standby's lag. */
  readonly lag?: ReplicaLag;
}

export interface TaskDescriptor {
  readonly taskId: string;
  readonly state: TaskState;
  readonly active: boolean;
  readonly stores: ReadonlyArray<{ readonly storeName: string; readonly partition: number }>;
  /** A standby's lag. */
  readonly lag?: ReplicaLag;
}

export interface StateProvider {
  instanceState(): InstanceState;
  stores(): readonly StoreDescriptor[];
  /** undefined when the topology has no store of that name. */
  store(name: string): StoreDescriptor | undefined;
  /** undefined when that partition is not hosted on this instance (IQv2 NOT_PRESENT). */
  localPartition(storeName: string, partition: number): LocalStorePartition | undefined;
  tasks(): readonly TaskDescriptor[];
  /**
   * Figures for an operator's view (commits, recent history, input ends: the /dashboard page).
   * Optional: without it, those GraphQL fields are null.
   */
  monitor?(): InstanceMonitor;
  /**
   * The GraphQL URL of the instance hosting this partition when it is not hosted here
   * (Kafka Streams' KeyQueryMetadata.activeHost); undefined when unknown or local. Optional:
   * without it, every non-local partition is plainly NOT_PRESENT and nothing is forwarded.
   */
  remoteOwner?(storeName: string, partition: number): string | undefined;
  /**
   * The GraphQL URLs of the other instances keeping standby replicas of this partition, in
   * order of preference (Kafka Streams' KeyQueryMetadata.standbyHosts, this one left out).
   * Optional: without it, no standby elsewhere is asked.
   */
  remoteStandbys?(storeName: string, partition: number): readonly string[];
  /**
   * `listener` hears of each store partition that opens here from now on (a task's or a
   * standby's), until the returned function is called. A change stream missing a partition of
   * its selector ends once that partition opens. Optional: without it, such a stream looks the
   * partition up every 200 ms.
   */
  onPartitionHosted?(listener: HostedListener): () => void;
  /** This instance's advertised URL, named in answers as the one that served them. Optional. */
  selfUrl?(): string | undefined;
  /**
   * Why the instance is out of its consumer group right now (e.g. BROKER_UNAVAILABLE while the
   * broker is away), or undefined while it is in. Optional: without it, none is reported.
   */
  kafkaError?(): InstanceError | undefined;
  /**
   * Readiness for traffic (GET /ready): every partition hosted here answers. Optional: without
   * it, ready means isServing(instanceState()).
   */
  ready?(): boolean;
}

/** A coded error of the instance as a whole (its code is one of src/errors.ts). */
export interface InstanceError {
  readonly code: string;
  readonly message: string;
}

/** True when the instance may answer queries at all. */
export function isServing(state: InstanceState): boolean {
  return state === 'RUNNING' || state === 'REBALANCING';
}
