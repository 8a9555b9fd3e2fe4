/**
 * Where a store partition lives, for the query layer: the store partitions of the tasks hosted
 * here (with their task state), and the URL of the instance that owns any partition, as the
 * group's members advertise it. Kept apart from the Runtime: these are read-only lookups over
 * the topology, the local tasks and the consumer's view of the group, asked on every query,
 * while the Runtime is about lifecycle and wiring.
 */
import type { PartitionOwner } from '../processing/ports.js';
import { placeStandbys, type TaskPlacement } from '../processing/standby-placement.js';
import type { StandbyLag } from '../processing/standby-tasks.js';
import type { RegisteredStore, StoreRegistry } from '../processing/store-registry.js';
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
  /** The store partitions open here (the task manager's); undefined before start. */
  readonly registry: () => StoreRegistry | undefined;
  /** The group's partition owners as the consumer last learned them (empty without). */
  readonly owners: () => readonly PartitionOwner[];
}

export class StoreLocator {
  private ownersCache: { readonly source: readonly PartitionOwner[]; readonly tasks: TaskOwner[] } | null = null;
  private placementCache: { readonly source: readonly TaskOwner[]; readonly replicas: number; readonly placements: TaskPlacement[]; readonly byTask: Map<string, TaskPlacement> } | null = null;

  constructor(private readonly sources: StoreLocatorSources) {}

  /** The store partitions of the local active tasks that have their stores open, with their task state. */
  localStores(): LocalStore[] {
    const registry = this.sources.registry();
    if (registry === undefined) return [];
    return registry.all().filter((entry) => entry.active).map(toLocalStore);
  }

  /** One map lookup in the task manager's StoreRegistry: every key query asks, and a process may host 1000 tasks. */
  localStore(storeName: string, partition: number): LocalStore | undefined {
    const entry = this.sources.registry()?.get(storeName, partition);
    return entry === undefined ? undefined : toLocalStore(entry);
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

function toLocalStore(entry: RegisteredStore): LocalStore {
  const lag = entry.lag();
  return {
    storeName: entry.storeName, partition: entry.partition, taskId: entry.taskId, taskState: entry.state(), store: entry.store, active: entry.active,
    ...(lag === undefined ? {} : { lag }),
  };
}
