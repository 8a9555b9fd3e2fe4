import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import '../../../src/kafka/kafkajs-patches.js';
import { sameData, shareTopicMetadata } from '../../../src/kafka/shared-metadata.js';

const require = createRequire(import.meta.url);
const BrokerPool = require('kafkajs/src/cluster/brokerPool') as new (options: unknown) => { metadata: { topicMetadata: Array<{ topic: string; partitionMetadata: unknown[] }> } | null };
const logger = { namespace: () => logger, info() {}, warn() {}, error() {}, debug() {} };

/** A metadata response as kafkajs decodes it (v5+ shape). */
function response(topic: string, partitions: number, leader = 1) {
  return {
    throttleTime: 0,
    brokers: [{ nodeId: 1, host: '127.0.0.1', port: 9092, rack: null }],
    clusterId: 'c',
    controllerId: 1,
    topicMetadata: [{
      topicErrorCode: 0,
      topic,
      isInternal: false,
      partitionMetadata: Array.from({ length: partitions }, (_, partitionId) => ({ partitionErrorCode: 0, partitionId, leader, replicas: [1], isr: [1], offlineReplicas: [] })),
    }],
  };
}

describe('shared topic metadata (kafkajs patch 6)', () => {
  it('gives every BrokerPool the same copy of a topic\'s metadata while it is unchanged', () => {
    const pools = Array.from({ length: 3 }, () => new BrokerPool({ logger, connectionPoolBuilder: {} }));
    expect(pools[0]!.metadata).toBeNull();
    for (const pool of pools) pool.metadata = response('shared-a', 50);
    const [first, second, third] = pools.map((pool) => pool.metadata!.topicMetadata[0]!);
    expect(second).toBe(first);
    expect(third).toBe(first);
    expect(first!.partitionMetadata).toHaveLength(50);
  });

  it('keeps a changed entry (a leader moved) as the new shared one, and leaves the older holders alone', () => {
    const before = shareTopicMetadata(response('shared-b', 4, 1).topicMetadata[0]!);
    const moved = shareTopicMetadata(response('shared-b', 4, 2).topicMetadata[0]!);
    expect(moved).not.toBe(before);
    expect((moved.partitionMetadata[0] as { leader: number }).leader).toBe(2);
    expect((before.partitionMetadata[0] as { leader: number }).leader).toBe(1);
    expect(shareTopicMetadata(response('shared-b', 4, 2).topicMetadata[0]!)).toBe(moved);
  });

  it('never merges entries of different topics, or a topic that gained partitions', () => {
    const a = shareTopicMetadata(response('shared-c', 3).topicMetadata[0]!);
    expect(shareTopicMetadata(response('shared-d', 3).topicMetadata[0]!)).not.toBe(a);
    expect(shareTopicMetadata(response('shared-c', 4).topicMetadata[0]!).partitionMetadata).toHaveLength(4);
  });
});

describe('sameData', () => {
  it('compares decoded metadata deeply: values, array order and length, keys, nulls', () => {
    expect(sameData({ a: [1, { b: null }], c: 'x' }, { a: [1, { b: null }], c: 'x' })).toBe(true);
    expect(sameData({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(sameData({ a: [1] }, { a: [1, 1] })).toBe(false);
    expect(sameData({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(sameData({ a: 1, b: undefined }, { a: 1, c: undefined })).toBe(false);
    expect(sameData({ a: null }, { a: {} })).toBe(false);
    expect(sameData([], {})).toBe(false);
    expect(sameData({ n: 0 }, { n: -0 })).toBe(true);
    expect(sameData({ s: '1' }, { s: 1 })).toBe(false);
  });
});
