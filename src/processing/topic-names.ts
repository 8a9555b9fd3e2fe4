/** Names of the runtime's own topics and ids, in one place (Kafka Streams' naming, docs/architecture.md §4). */

/** `<appId>-<store>-changelog`: compacted, one partition per task partition. */
export function changelogTopic(applicationId: string, storeName: string): string {
  return `${applicationId}-${storeName}-changelog`;
}

/** Internal (repartition) topics are declared relative in the topology and prefixed here. */
export function internalTopic(applicationId: string, name: string): string {
  return `${applicationId}-${name}`;
}

/**
 * One transactionalId per task (`<appId>-<topic>-<partition>`) for zombie fencing: docs/kafkajs-notes.md §2.
 * `topic` is the task's first source topic as declared (an internal topic without the app-id prefix).
 */
export function transactionalIdFor(applicationId: string, firstSourceTopic: string, partition: number): string {
  return `${applicationId}-${firstSourceTopic}-${partition}`;
}

export function taskIdFor(subTopologyId: number, partition: number): string {
  return `${subTopologyId}_${partition}`;
}

/** Changelog headers that carry the input record behind a store write, so restore can rebuild the Position. */
export const SOURCE_HEADERS = {
  topic: 'iqgate-src-topic',
  partition: 'iqgate-src-partition',
  offset: 'iqgate-src-offset',
} as const;
