/**
 * The producers' partitioner: kafkajs' default (Java-compatible) strategy, with the hash from
 * src/murmur2.ts. kafkajs' own computes murmur2 through its 64-bit `Long` emulation and filters
 * the partition metadata for every message, even one that names its partition; in
 * bench:processing's profile that was about 4% of the CPU time.
 *
 * Same choices as kafkajs (`producer/partitioners/legacy/partitioner.js`) and the Java client's
 * keyed path: an explicit partition wins; a key goes to `toPositive(murmur2(key)) % partitions`
 * (so queries route keys where they were written); a record with neither goes round-robin over
 * the partitions that have a leader, starting at a random point per topic.
 */
import { randomInt } from 'node:crypto';
import type { ICustomPartitioner, PartitionerArgs } from 'kafkajs';
import { partitionForKey, toPositive } from '../murmur2.js';
import { Buffer } from 'node:buffer';

export const keyPartitioner: ICustomPartitioner = () => {
  const counters = new Map<string, number>();
  return ({ topic, partitionMetadata, message }: PartitionerArgs): number => {
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    const key = message.key;
    if (key !== null && key !== undefined) return partitionForKey(typeof key === 'string' ? Buffer.from(key) : key, partitionMetadata.length);
    const next = (counters.get(topic) ?? randomInt(2 ** 31)) + 1;
    counters.set(topic, next);
    const available = partitionMetadata.filter((p) => p.leader >= 0);
    if (available.length > 0) return available[toPositive(next) % available.length]!.partitionId;
    return toPositive(next) % partitionMetadata.length;
  };
};
