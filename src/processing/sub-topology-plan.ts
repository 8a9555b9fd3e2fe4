/**
 * What the task manager needs to know about each sub-topology, derived once from the topology
 * and the application id: its source topics as subscribed (internal ones prefixed), the source
 * nodes reading each, its stores' changelogs, and the topic in its tasks' transactionalIds.
 */
import { changelogTopic, internalTopic } from './topic-names.js';
import type { Topology } from './topology.js';

export interface SubTopologyPlan {
  readonly id: number;
  /** Resolved source topics, sorted. */
  readonly sourceTopics: readonly string[];
  /** Source node names by resolved topic. */
  readonly sourcesByTopic: ReadonlyMap<string, readonly string[]>;
  /** store name → changelog topic */
  readonly changelogTopics: ReadonlyMap<string, string>;
  /** The topic in the task's transactionalId (`<appId>-<topic>-<partition>`): the first source, as declared. */
  readonly transactionalTopic: string;
}

export function planSubTopologies(topology: Topology, applicationId: string): SubTopologyPlan[] {
  return topology.subTopologies.map((sub) => {
    const sourcesByTopic = new Map<string, string[]>();
    const declared = new Map<string, string>();
    for (const name of sub.nodes) {
      const node = topology.nodes.get(name);
      if (node?.kind !== 'source') continue;
      const topic = node.internal ? internalTopic(applicationId, node.topic) : node.topic;
      sourcesByTopic.set(topic, [...(sourcesByTopic.get(topic) ?? []), name]);
      declared.set(topic, node.topic);
    }
    const changelogTopics = new Map(sub.stores.map((s) => [s, changelogTopic(applicationId, s)] as const));
    const sourceTopics = [...sourcesByTopic.keys()].sort();
    // `<appId>-<topic>-<partition>` with the topic as declared: an internal topic's resolved name
    // already carries the app id, which would give `<appId>-<appId>-words-repartition-<p>`.
    // Unique per sub-topology, because the topology builder rejects a declared topic name that
    // is a source of two sub-topologies, internal or not.
    const transactionalTopic = declared.get(sourceTopics[0] ?? '') ?? '';
    return { id: sub.id, sourceTopics, sourcesByTopic, changelogTopics, transactionalTopic };
  });
}

/** Resolved topic of each sink node (internal ones prefixed with the application id). */
export function sinkTopicsOf(topology: Topology, applicationId: string): Map<string, string> {
  const sinks = new Map<string, string>();
  for (const node of topology.nodes.values()) {
    if (node.kind === 'sink') sinks.set(node.name, node.internal ? internalTopic(applicationId, node.topic) : node.topic);
  }
  return sinks;
}
