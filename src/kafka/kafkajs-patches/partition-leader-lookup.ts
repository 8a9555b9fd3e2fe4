/**
 * kafkajs patch 8 — `Cluster#findLeaderForPartitions` in linear time (CPU during task openings).
 *
 * kafkajs 2.2.4 (`src/cluster/index.js:316-334`) looks each asked partition up with a linear
 * `find` over the topic's partition metadata, and builds its answer with `reduce`, copying the
 * whole result object and the leader's whole array for every partition (`{ ...result, [leader]:
 * [...current, partitionId] }`): for the n partitions of a topic, n²/2 comparisons and n²/2
 * copied slots. `fetchTopicsOffset` (`:451`) calls it with every partition of the topic, and
 * iqgate's opening tasks read each topic's end offsets and high watermarks that way, wave after
 * wave. A CPU profile of bench:scale (1000 partitions) put 1.4 s of the instance's event loop in
 * these two frames over one run, 60–130 ms of every second while it opened 500 tasks at a leave:
 * time the tasks that stay could not process in.
 *
 * The replacement answers the same (same leaders, partitions in the asked order, the same
 * KafkaJSError for a partition without a leader, unknown partitions skipped) from a map of the
 * topic's metadata, in linear time. It replaces the method on kafkajs' Cluster prototype, so
 * the check is by identity.
 */
import { type KafkajsPatch, kafkajsPrototype, patchNotInPlace, replaceMethod, requireKafkajs } from './kafkajs-patch.js';

interface PartitionMetadata {
  readonly partitionId: number;
  readonly leader?: number | null;
}

interface ClusterLike {
  findTopicPartitionMetadata(topic: string): readonly PartitionMetadata[];
}

type FindLeaderForPartitions = (this: ClusterLike, topic: string, partitions: ReadonlyArray<number | string>) => Record<string, number[]>;

interface ClusterPrototype {
  findLeaderForPartitions: FindLeaderForPartitions;
}

const { KafkaJSError } = requireKafkajs('kafkajs/src/errors') as { KafkaJSError: new (message: string, details: object) => Error };

export function findLeaderForPartitions(this: ClusterLike, topic: string, partitions: ReadonlyArray<number | string>): Record<string, number[]> {
  const byId = new Map<number, PartitionMetadata>();
  for (const metadata of this.findTopicPartitionMetadata(topic)) {
    if (!byId.has(metadata.partitionId)) byId.set(metadata.partitionId, metadata); // kafkajs' find takes the first
  }
  const result: Record<string, number[]> = {};
  for (const id of partitions) {
    const partitionId = parseInt(String(id), 10);
    const metadata = byId.get(partitionId);
    if (metadata === undefined) continue;
    if (metadata.leader === null || metadata.leader === undefined) {
      throw new KafkaJSError('Invalid partition metadata', { topic, partitionId, metadata });
    }
    (result[metadata.leader] ??= []).push(partitionId);
  }
  return result;
}

function clusterPrototype(): ClusterPrototype {
  return kafkajsPrototype('kafkajs/src/cluster');
}

/** kafkajs' own method, kept by install() (tests compare the two). */
export let kafkajsFindLeaderForPartitions: FindLeaderForPartitions | undefined;

export const partitionLeaderLookupPatch: KafkajsPatch = {
  name: 'partition-leader-lookup',
  install: () => {
    kafkajsFindLeaderForPartitions ??= replaceMethod(clusterPrototype(), 'findLeaderForPartitions', findLeaderForPartitions);
  },
  check: () => {
    if (clusterPrototype().findLeaderForPartitions !== findLeaderForPartitions) {
      throw patchNotInPlace('partition-leader-lookup', 'kafkajs looks partition leaders up in quadratic time (every ListOffsets of a whole topic)');
    }
  },
};
