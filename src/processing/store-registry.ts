/**
 * Every store partition open on this instance, by store name and partition, for the query layer:
 * the task manager keeps it current — an active task's stores from the moment they are attached
 * until they are detached (StreamTask), a standby's from its open until its release
 * (standby-tasks.ts) — so a query finds its partition with one map lookup, instead of walking
 * from the runtime through the task manager and the task to its stores.
 */
import type { KeyValueStorePartition, TaskStores } from '../store/types.js';
import type { StandbyLag } from './standby-tasks.js';
import type { TaskState } from './task-state.js';
import { HostedListeners, type HostedListener } from '../store/hosted-listeners.js';

export interface RegisteredStore {
  readonly storeName: string;
  readonly partition: number;
  readonly taskId: string;
  readonly store: KeyValueStorePartition;
  /** False for a standby replica. */
  readonly active: boolean;
  /** The task's state now (a standby serves as RUNNING). */
  state(): TaskState;
  /** A standby's lag now; undefined for an active task. */
  lag(): StandbyLag | undefined;
}

export interface RegistrationKind {
  readonly active: boolean;
  readonly state: () => TaskState;
  readonly lag?: () => StandbyLag;
}

export class StoreRegistry {
  private readonly byKey = new Map<string, RegisteredStore>();
  private readonly hosted = new HostedListeners();
  /** What each task registered, to unregister exactly that. */
  private readonly byTask = new Map<string, { readonly stores: TaskStores; readonly keys: string[] }>();

  /** The store partitions of `stores` are served by task `taskId` from now on (replacing what it registered before). */
  register(taskId: string, stores: TaskStores, kind: RegistrationKind): void {
    this.unregister(taskId);
    const keys: string[] = [];
    for (const storeName of stores.storeNames()) {
      const store = stores.store(storeName);
      const key = keyOf(storeName, store.partition);
      keys.push(key);
      this.byKey.set(key, {
        storeName, partition: store.partition, taskId, store, active: kind.active,
        state: kind.state,
        lag: () => kind.lag?.(),
      });
    }
    this.byTask.set(taskId, { stores, keys });
    // Told once the partition is in the map: a listener looking it up finds it.
    for (const storeName of stores.storeNames()) this.hosted.tell(storeName, stores.store(storeName).partition);
  }

  /** `listener` hears of every store partition registered from now on, until the returned function is called. */
  watch(listener: HostedListener): () => void {
    return this.hosted.add(listener);
  }

  /** Task `taskId`'s store partitions are no longer served; with `stores`, only if those are what it registered. */
  unregister(taskId: string, stores?: TaskStores): void {
    const registered = this.byTask.get(taskId);
    if (registered === undefined || (stores !== undefined && registered.stores !== stores)) return;
    this.byTask.delete(taskId);
    for (const key of registered.keys) if (this.byKey.get(key)?.taskId === taskId) this.byKey.delete(key);
  }

  get(storeName: string, partition: number): RegisteredStore | undefined {
    return this.byKey.get(keyOf(storeName, partition));
  }

  all(): RegisteredStore[] {
    return [...this.byKey.values()];
  }
}

function keyOf(storeName: string, partition: number): string {
  return `${storeName}\u0000${partition}`;
}
