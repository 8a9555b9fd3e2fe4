/**
 * The topics a runtime needs before it joins its group: the resolved source topics of each
 * sub-topology, the input topics checked, and the internal ones created — repartition topics
 * (with the partition count of the sub-topology that writes them), changelogs (one partition
 * per task) and the dead-letter topic. Kept apart from the Runtime: it is start-up planning
 * that only reads the topology and the admin port.
 */
import type { AdminPort, TopicSpec } from '../processing/ports.js';
import { changelogTopic, internalTopic } from '../processing/topic-names.js';
import type { Topology } from '../processing/topology.js';
import { planSubTopologies } from '../processing/sub-topology-plan.js';
import type { RuntimeOptions } from './runtime-options.js';

export interface PrepareTopicsRequest {
  readonly admin: AdminPort;
  readonly topology: Topology;
  readonly options: Pick<RuntimeOptions, 'applicationId' | 'deserializationErrors' | 'processingErrors' | 'deadLetterTopic'>;
  /** sourceTopicGroups() of the topology. */
  readonly groups: readonly string[][];
  /** Filled with each store's partition count as soon as it is known (before the topics are created). */
  readonly partitionsOfStore: Map<string, number>;
  /** Filled with each internal repartition topic's partition count. */
  readonly partitionsOfRepartition?: Map<string, number>;
}

/** Checks the input topics and creates the internal ones (repartition, changelog, dead-letter). */
export async function prepareTopics({ admin, topology, options, groups, partitionsOfStore, partitionsOfRepartition }: PrepareTopicsRequest): Promise<void> {
  const appId = options.applicationId;
  const internal = new Set<string>();
  for (const node of topology.nodes.values()) {
    if ((node.kind === 'source' || node.kind === 'sink') && node.internal) internal.add(internalTopic(appId, node.topic));
  }
  const external = [...new Set(groups.flat())].filter((t) => !internal.has(t));
  const counts = await admin.partitionCounts(external);
  // Repartition topics get the partition count of the sub-topology that writes them, resolved
  // upstream first (Kafka Streams: max of the upstream source partitions).
  const specs: TopicSpec[] = [];
  for (let round = 0; round < groups.length + 1; round += 1) {
    for (const node of topology.nodes.values()) {
      if (node.kind !== 'sink' || !node.internal) continue;
      const topic = internalTopic(appId, node.topic);
      if (counts.has(topic)) continue;
      const writer = topology.subTopologies.find((s) => s.nodes.includes(node.name));
      const upstream = (writer ? groups[writer.id] ?? [] : []).map((t) => counts.get(t));
      if (upstream.length > 0 && upstream.every((c) => c !== undefined)) {
        counts.set(topic, Math.max(...(upstream as number[])));
        specs.push({ topic, partitions: counts.get(topic) ?? 1, compacted: false, purgedByApplication: true });
        partitionsOfRepartition?.set(topic, counts.get(topic) ?? 1);
      }
    }
  }
  for (const sub of topology.subTopologies) {
    const partitions = Math.max(...(groups[sub.id] ?? []).map((t) => counts.get(t) ?? 0));
    for (const store of sub.stores) {
      partitionsOfStore.set(store, partitions);
      specs.push({ topic: changelogTopic(appId, store), partitions, compacted: true });
    }
  }
  if (options.deserializationErrors === 'dead-letter' || options.processingErrors === 'dead-letter') {
    specs.push({ topic: options.deadLetterTopic, partitions: 1, compacted: false });
  }
  await admin.ensureTopics(specs);
}

/** Resolved source topics of each sub-topology (internal topics prefixed with the application id), sorted. */
export function sourceTopicGroups(topology: Topology, applicationId: string): string[][] {
  return planSubTopologies(topology, applicationId).map((plan) => [...plan.sourceTopics]);
}
