/**
 * AdminPort on the kafkajs admin client.
 * End offsets: `fetchTopicOffsets` answers `high` from ListOffsets v2+, which defaults to
 * READ_COMMITTED on the admin client, so `high` is the last stable offset — Kafka's
 * read_committed `endOffsets` (docs/kafkajs-notes.md §4 "Getting the end offset").
 * High watermarks: kafkajs' admin has no read_uncommitted ListOffsets, so they come from a
 * Cluster of our own whose isolation level is read_uncommitted (kafkajs-cluster.ts), created at
 * the first call.
 */
import type { Admin, Kafka } from 'kafkajs';
import { IqgateError } from '../errors.js';
import type { AdminPort, GroupMembers, TopicSpec } from '../processing/ports.js';
import { toIqgateError } from './kafka-errors.js';
import { DetachedCluster } from './kafkajs-cluster.js';
import { transactionalIdOfClientId } from './partition-owner-tracker.js';

/** How long close() waits for a high-watermark call under way before it disconnects under it. */
const CLOSE_WAIT_MS = 1_000;

export class KafkaAdmin implements AdminPort {
  private readonly admin: Admin;
  private connecting: Promise<void> | null = null;
  /** The read_uncommitted Cluster, made at the first call; after close() the next call makes a new one (as the admin client reconnects). */
  private uncommitted: { readonly detached: DetachedCluster; chain: Promise<unknown>; closed: boolean } | null = null;

  constructor(private readonly kafka: Kafka) {
    this.admin = kafka.admin({ retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 } });
  }

  private async ready(): Promise<Admin> {
    this.connecting ??= this.admin.connect().catch((error: unknown) => {
      this.connecting = null;
      throw toIqgateError(error, 'connect admin');
    });
    await this.connecting;
    return this.admin;
  }

  async partitionCounts(topics: readonly string[]): Promise<Map<string, number>> {
    const admin = await this.ready();
    try {
      const existing = new Set(await admin.listTopics());
      const missing = topics.filter((t) => !existing.has(t));
      if (missing.length > 0) {
        throw new IqgateError('TOPIC_NOT_FOUND', `topics not found: ${missing.join(', ')}`, { retriable: true, details: { missing } });
      }
      const metadata = await admin.fetchTopicMetadata({ topics: [...topics] });
      return new Map(metadata.topics.map((t) => [t.name, t.partitions.length]));
    } catch (error) {
      throw toIqgateError(error, 'read topic metadata');
    }
  }

  /**
   * Internal topics (changelog, repartition, dead-letter): created when missing; one that exists
   * must have the partition count the topology derives from its input topics (a changelog
   * partition per task), else INVALID_CONFIG — its data would land in the wrong tasks.
   */
  async ensureTopics(specs: readonly TopicSpec[]): Promise<void> {
    if (specs.length === 0) return;
    const admin = await this.ready();
    try {
      const existing = await this.createMissing(admin, specs);
      const present = specs.filter((s) => existing.has(s.topic));
      if (present.length > 0) {
        const metadata = await admin.fetchTopicMetadata({ topics: present.map((s) => s.topic) });
        for (const t of metadata.topics) {
          const spec = present.find((s) => s.topic === t.name);
          if (spec !== undefined && t.partitions.length !== spec.partitions) {
            throw new IqgateError('INVALID_CONFIG', `internal topic ${t.name} has ${t.partitions.length} partitions, expected ${spec.partitions}`);
          }
        }
      }
    } catch (error) {
      // A concurrent instance may have created it meanwhile: that is fine.
      if ((error as { type?: string }).type === 'TOPIC_ALREADY_EXISTS') return;
      throw toIqgateError(error, 'create internal topics');
    }
  }

  /** DeleteRecords: each partition's records before its offset. */
  async groupMembers(groupId: string): Promise<GroupMembers> {
    const admin = await this.ready();
    try {
      const { groups } = await admin.describeGroups([groupId]);
      const group = groups.find((g) => g.groupId === groupId);
      if (group === undefined) return { state: 'Dead', members: [] };
      return {
        state: group.state,
        members: group.members.map((member) => {
          const transactionalId = transactionalIdOfClientId(member.clientId);
          return { memberId: member.memberId, clientId: member.clientId, ...(transactionalId === undefined ? {} : { transactionalId }) };
        }),
      };
    } catch (error) {
      throw toIqgateError(error, `describe group ${groupId}`);
    }
  }

  async deleteRecordsBefore(topic: string, offsets: ReadonlyMap<number, number>): Promise<void> {
    const admin = await this.ready();
    try {
      await admin.deleteTopicRecords({ topic, partitions: [...offsets].map(([partition, offset]) => ({ partition, offset: String(offset) })) });
    } catch (error) {
      throw toIqgateError(error, `delete records of ${topic}`);
    }
  }

  /**
   * Input and output topics (e.g. the demo's): created with `spec.partitions` when missing; one
   * that exists is used as it is, whatever its partition count — the runtime sizes its tasks,
   * changelogs and repartition topics from the input topics, and producers spread records over
   * every partition an output topic has.
   */
  async ensureExternalTopics(specs: readonly TopicSpec[]): Promise<void> {
    if (specs.length === 0) return;
    const admin = await this.ready();
    try {
      await this.createMissing(admin, specs);
    } catch (error) {
      if ((error as { type?: string }).type === 'TOPIC_ALREADY_EXISTS') return;
      throw toIqgateError(error, 'create topics');
    }
  }

  /** Creates the topics of `specs` that do not exist; returns the names that already existed. */
  private async createMissing(admin: Admin, specs: readonly TopicSpec[]): Promise<Set<string>> {
    const existing = new Set(await admin.listTopics());
    const missing = specs.filter((s) => !existing.has(s.topic));
    if (missing.length > 0) {
      // Not kafkajs' waitForLeaders: it polls metadata every 100 ms (~130 ms per start-up on a
      // local broker); waitUntilServable asks for what the tasks need, from 5 ms on.
      await admin.createTopics({
        waitForLeaders: false,
        topics: missing.map((s) => ({
          topic: s.topic,
          numPartitions: s.partitions,
          configEntries: [
            ...(s.compacted ? [{ name: 'cleanup.policy', value: 'compact' }] : []),
            ...(s.purgedByApplication === true ? [{ name: 'retention.ms', value: '-1' }] : []),
          ],
        })),
      });
      await this.waitUntilServable(admin, missing.map((s) => s.topic));
    }
    return existing;
  }

  /**
   * Until every new topic answers ListOffsets. Metadata naming the leaders is not enough: a large
   * new topic can answer NOT_LEADER_FOR_PARTITION for seconds more (measured: ~7 s for 1000
   * partitions, bench:scale). Every task of the topic would then fail its first end-offsets read
   * together and back off; wait here once instead.
   */
  private async waitUntilServable(admin: Admin, topics: readonly string[], timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    // Every topic at once: a new topic becomes servable in a few tens of ms on a local broker,
    // and asking one after another added the backoffs up (start-up, bench:processing). Once one
    // topic gives up, the others stop asking too.
    let gaveUp = false;
    await Promise.all(topics.map(async (topic) => {
      for (let delay = 5; !gaveUp; delay = Math.min(1000, delay * 2)) {
        try {
          await admin.fetchTopicOffsets(topic);
          return;
        } catch (error) {
          if (gaveUp || Date.now() + delay > deadline) {
            gaveUp = true;
            throw error;
          }
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
      }
    }));
  }

  async committedOffsets(groupId: string, topic: string, partitions?: readonly number[]): Promise<Map<number, number>> {
    const admin = await this.ready();
    try {
      // kafkajs' fetchOffsets asks for every partition of the topic (it has no require_stable,
      // so the others cost nothing but bytes); the answer keeps those asked for.
      const [answer] = await admin.fetchOffsets({ groupId, topics: [topic] });
      const wanted = partitions === undefined ? null : new Set(partitions);
      const result = new Map<number, number>();
      for (const p of answer?.partitions ?? []) {
        const offset = Number(p.offset);
        if (offset >= 0 && (wanted === null || wanted.has(p.partition))) result.set(p.partition, offset);
      }
      return result;
    } catch (error) {
      throw toIqgateError(error, `fetch committed offsets of ${groupId}`);
    }
  }

  beginningOffsets(topic: string): Promise<Map<number, number>> {
    return this.topicOffsets(topic, 'low');
  }

  endOffsets(topic: string): Promise<Map<number, number>> {
    return this.topicOffsets(topic, 'high');
  }

  /**
   * One call at a time: concurrent calls for different topics would replace each other's
   * targeted metadata on the cluster (kafkajs-patches), and a topic with no partition metadata
   * would come back empty. An empty answer is an error, never "no high watermark".
   */
  highWatermarks(topic: string): Promise<Map<number, number>> {
    this.uncommitted ??= { detached: new DetachedCluster(this.kafka, 'iqgate-admin-hw', { readUncommitted: true }), chain: Promise.resolve(), closed: false };
    const state = this.uncommitted;
    // After close(), never a step more: kafkajs would connect the closed cluster again.
    const open = (): void => {
      if (state.closed) throw new IqgateError('KAFKA_ERROR', `fetch high watermarks of ${topic}: the admin client closed`, { retriable: true });
    };
    const run = async (): Promise<Map<number, number>> => {
      const { cluster } = state.detached;
      open();
      try {
        await state.detached.connect();
        open();
        await cluster.addTargetTopic(topic);
        open();
        await cluster.refreshMetadataIfNecessary();
        open();
        const partitions = cluster.findTopicPartitionMetadata(topic).map((p) => ({ partition: p.partitionId }));
        if (partitions.length === 0) throw new IqgateError('TOPIC_NOT_FOUND', `no partition metadata for ${topic}`, { retriable: true, details: { missing: [topic] } });
        const [answer] = await cluster.fetchTopicsOffset([{ topic, fromBeginning: false, partitions }]);
        const result = new Map((answer?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
        if (result.size !== partitions.length) throw new IqgateError('KAFKA_ERROR', `high watermarks of ${topic}: ${result.size} of ${partitions.length} partitions answered`, { retriable: true });
        return result;
      } catch (error) {
        throw toIqgateError(error, `fetch high watermarks of ${topic}`);
      }
    };
    const result = state.chain.then(run, run);
    state.chain = result.catch(() => undefined);
    return result;
  }

  private async topicOffsets(topic: string, end: 'low' | 'high'): Promise<Map<number, number>> {
    const admin = await this.ready();
    try {
      return new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p[end])]));
    } catch (error) {
      throw toIqgateError(error, `fetch offsets of ${topic}`);
    }
  }

  async close(): Promise<void> {
    const uncommitted = this.uncommitted;
    this.uncommitted = null;
    if (uncommitted !== null) {
      uncommitted.closed = true;
      // The call under way first (its connection attempt included), for a second at most: one
      // waiting out an outage must not hold the stop, and it checks `closed` between its steps.
      // Those queued behind it see `closed`. Then the cluster.
      await Promise.race([uncommitted.chain, new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref())]);
      await uncommitted.detached.disconnect();
    }
    if (this.connecting !== null) await this.admin.disconnect();
    this.connecting = null;
  }
}
