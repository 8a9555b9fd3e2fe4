/**
 * The query layer's StateProvider port (src/query/state-provider.ts), implemented over a
 * running Runtime: the topology's stores with their serdes and partition counts, the store
 * partitions of the tasks hosted here with their task state, and the instance state.
 *
 * A store's partition count is known once the runtime has read its source topics' metadata;
 * until then the store is not listed (queries answer STORE_NOT_FOUND / NOT_STARTED).
 */
import type { InstanceMonitor } from '../query/instance-monitor.js';
import type { HostedListener } from '../store/hosted-listeners.js';
import type { InstanceError, InstanceState, LocalStorePartition, StateProvider, StoreDescriptor, TaskDescriptor } from '../query/state-provider.js';
import type { Runtime, RuntimeState } from './runtime.js';

const INSTANCE_STATE: Readonly<Record<RuntimeState, InstanceState>> = {
  CREATED: 'CREATED',
  STARTING: 'STARTING',
  RUNNING: 'RUNNING',
  STOPPING: 'PENDING_SHUTDOWN',
  STOPPED: 'NOT_RUNNING',
  FAILED: 'ERROR',
};

export class RuntimeStateProvider implements StateProvider {
  constructor(private readonly runtime: Runtime) {}

  instanceState(): InstanceState {
    return this.runtime.rebalancing() ? 'REBALANCING' : INSTANCE_STATE[this.runtime.state];
  }

  ready(): boolean {
    return this.runtime.ready();
  }

  kafkaError(): InstanceError | undefined {
    const error = this.runtime.kafkaError;
    return error === null ? undefined : { code: error.code, message: error.message };
  }

  monitor(): InstanceMonitor {
    return this.runtime.monitor;
  }

  stores(): readonly StoreDescriptor[] {
    const stores: StoreDescriptor[] = [];
    for (const definition of this.runtime.storeDefinitions()) {
      if (definition.partitions === undefined) continue;
      stores.push({
        name: definition.storeName,
        keySerde: definition.keySerde,
        valueSerde: definition.valueSerde,
        partitions: definition.partitions,
      });
    }
    return stores;
  }

  store(name: string): StoreDescriptor | undefined {
    return this.stores().find((store) => store.name === name);
  }

  localPartition(storeName: string, partition: number): LocalStorePartition | undefined {
    const local = this.runtime.localStore(storeName, partition);
    if (local === undefined) return undefined;
    return { store: local.store, taskId: local.taskId, taskState: local.taskState, active: local.active, ...(local.lag === undefined ? {} : { lag: local.lag }) };
  }

  /** The owner's advertised URL, from the group's metadata; never this instance's own, nor one while the active task is here. */
  remoteOwner(storeName: string, partition: number): string | undefined {
    if (this.runtime.localStore(storeName, partition)?.active === true) return undefined;
    const url = this.runtime.storeOwner(storeName, partition);
    // Assigned here but the task is not open yet: not remote (forwarding to ourselves is useless).
    return url === undefined || url === this.runtime.advertisedUrl() ? undefined : url;
  }

  remoteStandbys(storeName: string, partition: number): readonly string[] {
    const self = this.runtime.advertisedUrl();
    return this.runtime.storeStandbys(storeName, partition).filter((url) => url !== self);
  }

  onPartitionHosted(listener: HostedListener): () => void {
    return this.runtime.onPartitionHosted(listener);
  }

  selfUrl(): string | undefined {
    return this.runtime.advertisedUrl();
  }

  tasks(): readonly TaskDescriptor[] {
    const storesOfTask = new Map<string, Array<{ storeName: string; partition: number }>>();
    for (const local of this.runtime.localStores()) {
      const list = storesOfTask.get(local.taskId) ?? [];
      list.push({ storeName: local.storeName, partition: local.partition });
      storesOfTask.set(local.taskId, list);
    }
    const active = this.runtime.localTasks().map((task) => ({
      taskId: task.id,
      state: task.state,
      active: true,
      stores: storesOfTask.get(task.id) ?? [],
    }));
    const standby = this.runtime.standbyTasks().map((task) => ({
      taskId: task.id,
      state: 'RUNNING' as const,
      active: false,
      stores: (task.stores?.storeNames() ?? []).map((storeName) => ({ storeName, partition: task.partition })),
      lag: task.lag(),
    }));
    return [...active, ...standby];
  }
}
