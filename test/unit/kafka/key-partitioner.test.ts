import fc from 'fast-check';
import { Partitioners, type PartitionerArgs } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { keyPartitioner } from '../../../src/kafka/key-partitioner.js';

const metadata = (count: number, withoutLeader: readonly number[] = []): PartitionerArgs['partitionMetadata'] =>
  Array.from({ length: count }, (_, partitionId) => ({ partitionId, leader: withoutLeader.includes(partitionId) ? -1 : 1, partitionErrorCode: 0, replicas: [1], isr: [1] }));

describe('keyPartitioner', () => {
  it('puts every keyed record where kafkajs\' default (Java-compatible) partitioner puts it', () => {
    const ours = keyPartitioner();
    const theirs = Partitioners.DefaultPartitioner();
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), fc.string({ maxLength: 40 })), fc.integer({ min: 1, max: 1000 }), (key, count) => {
        const args = { topic: 't', partitionMetadata: metadata(count), message: { key, value: null } };
        expect(ours(args)).toBe(theirs(args));
      }),
      { numRuns: 2_000 },
    );
  });

  it('keeps an explicit partition', () => {
    expect(keyPartitioner()({ topic: 't', partitionMetadata: metadata(8), message: { key: Buffer.from('k'), value: null, partition: 5 } })).toBe(5);
  });

  it('spreads records without key or partition round-robin over the partitions that have a leader', () => {
    const partition = keyPartitioner();
    const seen = Array.from({ length: 30 }, () => partition({ topic: 't', partitionMetadata: metadata(4, [2]), message: { value: 'v' } }));
    expect(new Set(seen)).toEqual(new Set([0, 1, 3]));
    for (let i = 1; i < seen.length; i++) expect(seen[i]).not.toBe(seen[i - 1]);
  });
});
