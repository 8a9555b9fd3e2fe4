/**
 * Where a store partition lives, for the query layer: the store partitions of the tasks hosted
 * here (with their task state), and the URL of the instance that owns any partition, as the
 * group's members advertise it. Kept apart from the Runtime: these are read-only lookups over
 * the topology, the local tasks and the consumer's view of the group, asked on every query,
 * while the Runtime is about lifecycle and wiring.
 */
import type { PartitionOwner } from '../processing/ports.js';
import { placeStandbys, type TaskPlacement } from '../processing/standby-placement.js';
import type { StandbyLag, StandbyTaskView } from '../processing/standby-tasks.js';
import type { StreamTask } from '../processing/stream-task.js';
import type { TaskState } from '../processing/task-state.js';
import { taskIdFor } from '../processing/topic-names.js';
import type { Topology } from '../processing/topology.js';
import type { KeyValueStorePartition } from '../store/types.js';
import { sourceTopicGroups } from './prepare-topics.js';

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
  /** False for a standby replica, which answers with its lag. */
  readonly active: boolean;
  readonly lag?: StandbyLag;
}

export interface StoreLocatorSources {
  readonly topology: Topology;
  readonly applicationId: string;
  /** The tasks hosted here by id; undefined before start. */
  readonly tasks: () => ReadonlyMap<string, StreamTask> | undefined;
  /** The standby of a task kept here, if any. */
  readonly standby?: (taskId: string) => StandbyTaskView | undefined;
  /** The group's partition owners as the consumer last learned them (empty without). */
  readonly owners: () => readonly PartitionOwner[];
}

export class StoreLocator {
  private ownersCache: { readonly source: readonly PartitionOwner[]; readonly tasks: TaskOwner[] } | null = null;
  private placementCache: { readonly source: readonly TaskOwner[]; readonly replicas: number; readonly placements: TaskPlacement[]; readonly byTask: Map<string, TaskPlacement> } | null = null;

  constructor(private readonly sources: StoreLocatorSources) {}

  /** The store partitions of the local tasks that have their stores open, with their task state. */
  localStores(): LocalStore[] {
    const result: LocalStore[] = [];
    for (const task of this.sources.tasks()?.values() ?? []) {
      const stores = task.stores;
      if (stores === null) continue;
      for (const storeName of stores.storeNames()) {
        result.push({ storeName, partition: task.partition, taskId: task.id, taskState: task.state, store: stores.store(storeName), active: true });
      }
    }
    return result;
  }

  /** A map lookup (task id = sub-topology + partition), since every key query asks and a process may host 1000 tasks. */
  localStore(storeName: string, partition: number): LocalStore | undefined {
    const sub = this.subTopologyOfStore(storeName);
    if (sub === undefined) return undefined;
    const taskId = taskIdFor(sub, partition);
    const task = this.sources.tasks()?.get(taskId);
    if (task !== undefined) {
      const stores = task.stores;
      if (stores === null || !stores.storeNames().includes(storeName)) return undefined;
      return { storeName, partition, taskId: task.id, taskState: task.state, store: stores.store(storeName), active: true };
    }
    const standby = this.sources.standby?.(taskId);
    const stores = standby?.stores ?? null;
    if (standby === undefined || stores === null || !stores.storeNames().includes(storeName)) return undefined;
    return { storeName, partition, taskId, taskState: 'RUNNING', store: stores.store(storeName), active: false, lag: standby.lag() };
  }

  /** Every owned task with the URLs of its standby hosts (standby-placement.ts); one placement per owner map. */
  placements(replicas: number): TaskPlacement[] {
    return this.placementsOf(replicas).placements;
  }

  /** The URLs keeping standbys of partition `partition` of a store, in order of preference (maybe this instance's). */
  storeStandbys(storeName: string, partition: number, replicas: number): readonly string[] {
    const sub = this.subTopologyOfStore(storeName);
    if (sub === undefined || replicas === 0) return [];
    return this.placementsOf(replicas).byTask.get(taskIdFor(sub, partition))?.standbys ?? [];
  }

  private placementsOf(replicas: number): { placements: TaskPlacement[]; byTask: Map<string, TaskPlacement> } {
    const owners = this.partitionOwners();
    if (this.placementCache?.source === owners && this.placementCache.replicas === replicas) return this.placementCache;
    const placements = placeStandbys(owners, replicas);
    const byTask = new Map(placements.map((p) => [taskIdFor(p.subTopology, p.partition), p]));
    this.placementCache = { source: owners, replicas, placements, byTask };
    return this.placementCache;
  }

  /** The consumer's partition owners mapped to tasks (sub-topology, partition), sorted; one mapping per list. */
  partitionOwners(): TaskOwner[] {
    const owners = this.sources.owners();
    if (owners.length === 0) return [];
    // The consumer replaces its list on each refresh: queries in between reuse one mapping.
    if (this.ownersCache?.source === owners) return this.ownersCache.tasks;
    const groups = sourceTopicGroups(this.sources.topology, this.sources.applicationId);
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

  /** The owner's URL of the task that holds partition `partition` of a store. */
  storeOwner(storeName: string, partition: number): string | undefined {
    const sub = this.subTopologyOfStore(storeName);
    if (sub === undefined) return undefined;
    return this.partitionOwners().find((o) => o.subTopology === sub && o.partition === partition)?.url;
  }

  private subTopologyOfStore(storeName: string): number | undefined {
    return this.sources.topology.subTopologies.find((s) => s.stores.includes(storeName))?.id;
  }
}
