import { describe, expect, it, vi } from 'vitest';
import '../../../src/kafka/kafkajs-patches.js';
import { filterAbortedMessages } from '../../../src/kafka/kafkajs-patches/aborted-transaction-filter.js';
import { COORDINATOR_CACHE_MS } from '../../../src/kafka/kafkajs-patches/coordinator-cache.js';
import { groupMessagesPerPartition } from '../../../src/kafka/kafkajs-patches/group-messages-per-partition.js';

const ABORT = Buffer.from([0, 0, 0, 0]);
const COMMIT = Buffer.from([0, 0, 0, 1]);
const msg = (offset: number, producerId: string, extra: { control?: Buffer } = {}) => ({
  offset: String(offset),
  key: extra.control ?? Buffer.from('k'),
  isControlRecord: extra.control !== undefined,
  batchContext: { producerId, inTransaction: true },
});

describe('read_committed filtering of aborted transactions', () => {
  it('drops interleaved aborted transactions listed in marker order, not first-offset order', () => {
    // P1 aborted [10, 13], P2 committed [11, 14], P3 aborted [12, 15]; the broker lists P3's abort… in marker order.
    const messages = [msg(10, 'p1'), msg(11, 'p2'), msg(12, 'p3'), msg(13, 'p1', { control: ABORT }), msg(14, 'p2', { control: COMMIT }), msg(15, 'p3', { control: ABORT }), msg(16, 'p1')];
    const kept = filterAbortedMessages({ messages, abortedTransactions: [{ producerId: 'p3', firstOffset: '12' }, { producerId: 'p1', firstOffset: '10' }] });
    expect(kept.filter((m) => !m.isControlRecord).map((m) => m.offset)).toEqual(['11', '16']);
  });

  it('handles a fetch that starts inside two aborted transactions at once', () => {
    const messages = [msg(20, 'p1'), msg(21, 'p2'), msg(22, 'p1', { control: ABORT }), msg(23, 'p2', { control: ABORT })];
    const kept = filterAbortedMessages({ messages, abortedTransactions: [{ producerId: 'p1', firstOffset: '5' }, { producerId: 'p2', firstOffset: '7' }] });
    expect(kept.filter((m) => !m.isControlRecord)).toEqual([]);
  });

  it('keeps everything when nothing was aborted', () => {
    const messages = [msg(1, 'p1'), msg(2, 'p1', { control: COMMIT })];
    expect(filterAbortedMessages({ messages, abortedTransactions: [] })).toHaveLength(2);
  });
});

describe('the fix is what kafkajs uses', () => {
  it('kafkajs Batch filters through the fixed function when the fix is imported first', async () => {
    const { createRequire } = await import('node:module');
    const require = createRequire(import.meta.url);
    const Batch = require('kafkajs/src/consumer/batch') as new (topic: string, offset: string, data: unknown) => { messages: Array<{ offset: string }> };
    const messages = [msg(10, 'p1'), msg(11, 'p2'), msg(12, 'p3'), msg(13, 'p1', { control: ABORT }), msg(14, 'p2', { control: COMMIT }), msg(15, 'p3', { control: ABORT }), msg(16, 'p1')];
    const batch = new Batch('t', '10', { partition: 0, highWatermark: '17', messages, abortedTransactions: [{ producerId: 'p3', firstOffset: '12' }, { producerId: 'p1', firstOffset: '10' }] });
    expect(batch.messages.map((m) => m.offset)).toEqual(['11', '16']);
  });
});

describe('grouping messages per partition', () => {
  it('groups in order, as kafkajs does, and kafkajs uses the patched function', async () => {
    const messages = Array.from({ length: 10 }, (_, i) => ({ value: String(i) }));
    const partitioner = ({ message }: { message: unknown }): number => Number((message as { value: string }).value) % 3;
    const grouped = groupMessagesPerPartition({ topic: 't', partitionMetadata: [{}, {}, {}], messages, partitioner });
    expect(Object.fromEntries(Object.entries(grouped).map(([p, ms]) => [p, ms.map((m) => (m as { value: string }).value)]))).toEqual({ 0: ['0', '3', '6', '9'], 1: ['1', '4', '7'], 2: ['2', '5', '8'] });
    expect(groupMessagesPerPartition({ topic: 't', partitionMetadata: [], messages, partitioner })).toEqual({});
    const { createRequire } = await import('node:module');
    const require = createRequire(import.meta.url);
    expect(require('kafkajs/src/producer/groupMessagesPerPartition')).toBe(groupMessagesPerPartition);
  });
});

describe('the request queue timer', () => {
  it('does not reschedule itself when nothing is pending and nothing is throttled', async () => {
    const { createRequire } = await import('node:module');
    const require = createRequire(import.meta.url);
    const RequestQueue = require('kafkajs/src/network/requestQueue') as { prototype: { scheduleCheckPendingRequests(this: unknown): void } };
    let checks = 0;
    const queue = { pending: [] as unknown[], throttledUntil: 0, throttleCheckTimeoutId: null as NodeJS.Timeout | null, checkPendingRequests() { checks += 1; } };
    RequestQueue.prototype.scheduleCheckPendingRequests.call(queue);
    expect(queue.throttleCheckTimeoutId).toBeNull();
    queue.pending.push({});
    RequestQueue.prototype.scheduleCheckPendingRequests.call(queue);
    expect(queue.throttleCheckTimeoutId).not.toBeNull();
    await new Promise((r) => setTimeout(r, 30));
    expect(checks).toBe(1);
  });
});

describe('transaction coordinator lookups', () => {
  const fakeCluster = async () => {
    const { createRequire } = await import('node:module');
    const require = createRequire(import.meta.url);
    const Cluster = require('kafkajs/src/cluster') as { prototype: Record<string | symbol, unknown> };
    const target = Object.create(Cluster.prototype) as Record<string | symbol, unknown>;
    // kafkajs keeps its metadata refresh under a private symbol on the instance.
    const cluster = new Proxy(target, {
      get: (t, k, receiver) => (typeof k === 'symbol' && k.description === 'private:Cluster:refreshMetadata'
        ? async () => { state.refreshes += 1; }
        : Reflect.get(t, k, receiver)),
    }) as Record<string | symbol, unknown> & {
      findGroupCoordinator(args: { groupId: string; coordinatorType?: number }): Promise<{ nodeId: number }>;
      refreshMetadata(): Promise<void>;
    };
    const state = { lookups: 0, coordinator: 1, refreshes: 0 };
    Object.assign(cluster, {
      logger: { debug: () => undefined },
      retrier: async (fn: (bail: (e: unknown) => never, n: number, t: number) => Promise<unknown>) => fn((e) => { throw e; }, 0, 0),
      findGroupCoordinatorMetadata: async () => { state.lookups += 1; return { coordinator: { nodeId: state.coordinator } }; },
      findBroker: async ({ nodeId }: { nodeId: number }) => ({ nodeId }),
    });
    return { cluster, state };
  };

  it('looks the transaction coordinator up once, and again after a metadata refresh', async () => {
    const { cluster, state } = await fakeCluster();
    expect(await cluster.findGroupCoordinator({ groupId: 'app-t-0', coordinatorType: 1 })).toEqual({ nodeId: 1 });
    expect(await cluster.findGroupCoordinator({ groupId: 'app-t-0', coordinatorType: 1 })).toEqual({ nodeId: 1 });
    expect(state.lookups).toBe(1);
    state.coordinator = 2;
    await cluster.refreshMetadata();
    expect(state.refreshes).toBe(1);
    expect(await cluster.findGroupCoordinator({ groupId: 'app-t-0', coordinatorType: 1 })).toEqual({ nodeId: 2 });
    expect(state.lookups).toBe(2);
  });

  it('caches group coordinators only in clusters of transactional producers (not consumers, admins)', async () => {
    const { cluster, state } = await fakeCluster();
    await cluster.findGroupCoordinator({ groupId: 'group', coordinatorType: 0 });
    await cluster.findGroupCoordinator({ groupId: 'group' });
    expect(state.lookups).toBe(2);
    await cluster.findGroupCoordinator({ groupId: 'app-t-0', coordinatorType: 1 });
    await cluster.findGroupCoordinator({ groupId: 'group', coordinatorType: 0 });
    await cluster.findGroupCoordinator({ groupId: 'group', coordinatorType: 0 });
    expect(state.lookups).toBe(4);
  });

  it('looks again once an entry is older than COORDINATOR_CACHE_MS', async () => {
    vi.useFakeTimers();
    try {
      const { cluster, state } = await fakeCluster();
      await cluster.findGroupCoordinator({ groupId: 'app-t-0', coordinatorType: 1 });
      vi.advanceTimersByTime(COORDINATOR_CACHE_MS);
      await cluster.findGroupCoordinator({ groupId: 'app-t-0', coordinatorType: 1 });
      expect(state.lookups).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('partition leader lookups', () => {
  /** A Cluster stand-in with `metadata` as the topic's partition metadata. */
  const clusterWith = (metadata: ReadonlyArray<{ partitionId: number; leader?: number | null }>) => ({ findTopicPartitionMetadata: () => metadata });

  it('answers what kafkajs answers — leaders, asked order, unknown partitions skipped, string ids — and kafkajs uses it', async () => {
    const { findLeaderForPartitions, kafkajsFindLeaderForPartitions } = await import('../../../src/kafka/kafkajs-patches/partition-leader-lookup.js');
    const { createRequire } = await import('node:module');
    const Cluster = createRequire(import.meta.url)('kafkajs/src/cluster') as { prototype: { findLeaderForPartitions: unknown } };
    expect(Cluster.prototype.findLeaderForPartitions).toBe(findLeaderForPartitions);
    expect(kafkajsFindLeaderForPartitions).toBeDefined();
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 50; round += 1) {
      const count = 1 + random(40);
      const metadata = Array.from({ length: count }, (_v, partitionId) => ({ partitionId, leader: random(3) }));
      metadata.sort(() => random(3) - 1);
      const asked = Array.from({ length: random(60) }, () => (random(2) === 0 ? random(count + 5) : String(random(count + 5))));
      const cluster = clusterWith(metadata);
      expect(findLeaderForPartitions.call(cluster, 't', asked)).toEqual(kafkajsFindLeaderForPartitions!.call(cluster, 't', asked));
    }
  });

  it('throws kafkajs\' error for a partition without a leader, and answers for 10,000 partitions at once', async () => {
    const { findLeaderForPartitions, kafkajsFindLeaderForPartitions } = await import('../../../src/kafka/kafkajs-patches/partition-leader-lookup.js');
    const leaderless = clusterWith([{ partitionId: 0, leader: 1 }, { partitionId: 1, leader: null }]);
    const ours = (() => { try { findLeaderForPartitions.call(leaderless, 't', [0, 1]); } catch (error) { return error; } return null; })();
    const theirs = (() => { try { kafkajsFindLeaderForPartitions!.call(leaderless, 't', [0, 1]); } catch (error) { return error; } return null; })();
    expect((ours as Error).name).toBe((theirs as Error).name);
    expect((ours as Error).message).toBe((theirs as Error).message);
    const many = clusterWith(Array.from({ length: 10_000 }, (_v, partitionId) => ({ partitionId, leader: 1 })));
    const all = Array.from({ length: 10_000 }, (_v, p) => p);
    expect(findLeaderForPartitions.call(many, 't', all)['1']).toHaveLength(10_000);
  });
});

describe('kafkajs patch 9: no heartbeat per batch once the group is rebalancing', () => {
  /**
   * kafkajs' own ConsumerGroup (patched), its coordinator a stand-in that answers as `answer`
   * says, and its joinAndSync's retrier a stand-in for a join that leaves generation and member
   * id as they were (a member rejoining a stable group gets its generation back).
   */
  async function consumerGroup(answer: () => Promise<void>) {
    const { createRequire } = await import('node:module');
    const ConsumerGroup = createRequire(import.meta.url)('kafkajs/src/consumer/consumerGroup') as new (options: object) => {
      heartbeat(options: { interval: number }): Promise<void>;
      joinAndSync(): Promise<void>;
      coordinator: unknown;
      generationId: number | null;
      memberId: string | null;
      lastRequest: number;
      retrier: (fn: unknown) => Promise<void>;
    };
    const quiet = { info: () => undefined, debug: () => undefined, warn: () => undefined, error: () => undefined };
    const group = new ConsumerGroup({ groupId: 'g', topics: [], logger: { namespace: () => quiet }, instrumentationEmitter: { emit: () => undefined }, retry: {} });
    const sent = vi.fn(answer);
    group.coordinator = { heartbeat: sent };
    group.generationId = 1;
    group.memberId = 'm-1';
    group.lastRequest = 0;
    group.retrier = async () => undefined;
    return { group, sent };
  }
  const answer = (type: string): Error => Object.assign(new Error(`the coordinator said ${type}`), { name: 'KafkaJSProtocolError', type });

  it('answers every heartbeat after a rebalancing answer at once, without a request, until the member joins again — even into the same generation', async () => {
    const { heartbeat, joinAndSync } = await import('../../../src/kafka/kafkajs-patches/rebalance-heartbeat.js');
    const { createRequire } = await import('node:module');
    const prototype = (createRequire(import.meta.url)('kafkajs/src/consumer/consumerGroup') as { prototype: { heartbeat: unknown; joinAndSync: unknown } }).prototype;
    expect(prototype.heartbeat).toBe(heartbeat);
    expect(prototype.joinAndSync).toBe(joinAndSync);
    for (const type of ['REBALANCE_IN_PROGRESS', 'NOT_COORDINATOR_FOR_GROUP', 'ILLEGAL_GENERATION']) {
      let rebalancing = true;
      const { group, sent } = await consumerGroup(async () => { if (rebalancing) throw answer(type); });
      for (let batch = 0; batch < 5; batch += 1) await expect(group.heartbeat({ interval: 0 })).rejects.toThrow(type);
      expect(sent).toHaveBeenCalledTimes(1);
      rebalancing = false;
      await group.joinAndSync(); // same generation, same member
      await group.heartbeat({ interval: 0 });
      await group.heartbeat({ interval: 0 });
      expect(sent).toHaveBeenCalledTimes(3);
    }
  });

  it('does not remember an answer to a heartbeat that was under way while the member joined again', async () => {
    let reject!: (error: Error) => void;
    let held = true;
    const { group, sent } = await consumerGroup(() => (held ? new Promise<void>((_resolve, rejectHeld) => { reject = rejectHeld; }) : Promise.resolve()));
    const inFlight = group.heartbeat({ interval: 0 });
    await group.joinAndSync(); // the join that answer may be about
    held = false;
    reject(answer('ILLEGAL_GENERATION'));
    await expect(inFlight).rejects.toThrow('ILLEGAL_GENERATION');
    await group.heartbeat({ interval: 0 });
    expect(sent).toHaveBeenCalledTimes(2);
  });

  it('tells the listener registered for the consumer\'s cluster each time a join starts (kafkajs emits REBALANCING before only some)', async () => {
    const { onJoinStart } = await import('../../../src/kafka/kafkajs-patches/rebalance-heartbeat.js');
    const { group } = await consumerGroup(async () => undefined);
    const cluster = {};
    (group as unknown as { cluster: object }).cluster = cluster;
    const started = vi.fn();
    onJoinStart(cluster, started);
    await group.joinAndSync();
    await group.joinAndSync();
    expect(started).toHaveBeenCalledTimes(2);
  });

  it('keeps sending after an answer that is not about the group (a broker that went away)', async () => {
    const { group, sent } = await consumerGroup(async () => { throw Object.assign(new Error('Connection error'), { name: 'KafkaJSConnectionError' }); });
    await expect(group.heartbeat({ interval: 0 })).rejects.toThrow(/Connection/);
    await expect(group.heartbeat({ interval: 0 })).rejects.toThrow(/Connection/);
    expect(sent).toHaveBeenCalledTimes(2);
  });
});

describe('kafkajs patch 10: each fetch sized by its consumer\'s hint', () => {
  /** kafkajs' own ConsumerGroup (patched) with two assigned partitions; its cluster and broker stand-ins record each FetchRequest. */
  async function consumerGroup() {
    const { createRequire } = await import('node:module');
    const ConsumerGroup = createRequire(import.meta.url)('kafkajs/src/consumer/consumerGroup') as new (options: object) => {
      fetch(nodeId: number): Promise<unknown[]>;
      subscriptionState: { assign(assignment: Array<{ topic: string; partitions: number[] }>): void };
      filterPartitionsByNode: (nodeId: number, topicPartitions: unknown) => unknown;
      offsetManager: unknown;
    };
    const requests: Array<{ maxBytes: number; topics: Array<{ partitions: Array<{ maxBytes: number }> }> }> = [];
    const broker = { fetch: async (request: (typeof requests)[number]) => { requests.push(request); return { responses: [] }; } };
    const cluster = { refreshMetadataIfNecessary: async () => undefined, findBroker: async () => broker };
    const quiet = { info: () => undefined, debug: () => undefined, warn: () => undefined, error: () => undefined };
    const group = new ConsumerGroup({
      groupId: 'g', topics: ['t'], cluster, logger: { namespace: () => quiet }, instrumentationEmitter: { emit: () => undefined }, retry: {},
      maxBytes: 2_097_152, maxBytesPerPartition: 262_144, maxWaitTime: 0, minBytes: 1,
    });
    group.subscriptionState.assign([{ topic: 't', partitions: [0, 1] }]);
    group.filterPartitionsByNode = (_nodeId, topicPartitions) => topicPartitions;
    group.offsetManager = { committedOffsets: () => ({ t: { 0: '0', 1: '0' } }), nextOffset: () => '5', resolveOffsets: async () => undefined };
    const sizes = () => requests.map((r) => [r.maxBytes, ...r.topics.flatMap((t) => t.partitions.map((p) => p.maxBytes))]);
    return { group, cluster, sizes };
  }

  it('asks the hint before every fetch; undefined, or no hint, leaves the consumer\'s own sizes', async () => {
    const { fetch, setFetchSizeHint } = await import('../../../src/kafka/kafkajs-patches/fetch-size.js');
    const { createRequire } = await import('node:module');
    expect((createRequire(import.meta.url)('kafkajs/src/consumer/consumerGroup') as { prototype: { fetch: unknown } }).prototype.fetch).toBe(fetch);
    const { group, cluster, sizes } = await consumerGroup();
    const other = await consumerGroup();
    await group.fetch(0); // no hint yet
    let small = true;
    setFetchSizeHint(cluster, () => (small ? { maxBytes: 65_536, maxBytesPerPartition: 16_384 } : undefined));
    await group.fetch(0);
    small = false;
    await group.fetch(0);
    small = true;
    await group.fetch(0);
    await other.group.fetch(0); // another consumer (its own cluster): its own sizes
    expect(sizes()).toEqual([
      [2_097_152, 262_144, 262_144],
      [65_536, 16_384, 16_384],
      [2_097_152, 262_144, 262_144],
      [65_536, 16_384, 16_384],
    ]);
    expect(other.sizes()).toEqual([[2_097_152, 262_144, 262_144]]);
  });
});

describe('kafkajs patch 11: the transaction manager retries from 25 ms', () => {
  it('an InitProducerId that meets CONCURRENT_TRANSACTIONS is tried again within 30 ms (kafkajs: 300 ms, 50 ms in its test mode)', async () => {
    const { createRequire } = await import('node:module');
    const require = createRequire(import.meta.url);
    const Cluster = require('kafkajs/src/cluster') as { prototype: object };
    const createEosManager = require('kafkajs/src/producer/eosManager') as (options: object) => { initProducerId(): Promise<void> };
    const { KafkaJSProtocolError } = require('kafkajs/src/errors') as { KafkaJSProtocolError: new (e: object) => Error };
    const { createErrorFromCode } = require('kafkajs/src/protocol/error') as { createErrorFromCode(code: number): object };
    const attempts: number[] = [];
    const cluster = Object.assign(Object.create(Cluster.prototype) as object, {
      refreshMetadataIfNecessary: async () => undefined,
      findGroupCoordinator: async () => ({
        initProducerId: async () => {
          attempts.push(Date.now());
          if (attempts.length === 1) throw new KafkaJSProtocolError(createErrorFromCode(51)); // CONCURRENT_TRANSACTIONS
          return { producerId: 7, producerEpoch: 1 };
        },
      }),
    });
    const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
    vi.useFakeTimers();
    try {
      const eos = createEosManager({ logger, cluster, transactional: true, transactionalId: 'app-in-0' });
      const init = eos.initProducerId();
      await vi.advanceTimersByTimeAsync(0);
      expect(attempts).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(30);
      expect(attempts).toHaveLength(2);
      await init;
    } finally {
      vi.useRealTimers();
    }
  });
});
