/**
 * Reads changelog partitions for restore without a consumer group (docs/kafkajs-notes.md §4 option B):
 * kafkajs has no assign(), so we use its Cluster — reachable from the public API, because a
 * partition assigner factory receives it — and send Fetch requests at read_committed ourselves.
 * Responses are wrapped in kafkajs' own `Batch`, which drops control records and the records of
 * aborted transactions; `lastOffset()` still counts them, so the position moves past markers.
 *
 * A separate Cluster (its own sockets) keeps restores from queueing behind the group
 * consumer's long polls. One read loop per partition, but their fetches travel together: a
 * broker serves one request per connection at a time, so 64 tasks opening at once used to
 * queue 64 single-partition fetches behind each other (~2 ms each on a loaded broker, so a
 * task waited ~115 ms for a 4-record restore). The reads that wait for the same broker now
 * share one Fetch request (FetchBatch below). No fetch sessions (kafkajs sends none).
 */
// Must precede the first kafkajs import (see the module's comment).
import './kafkajs-patches.js';
import { createRequire } from 'node:module';
import type { Cluster, Kafka, KafkaMessage } from 'kafkajs';
import type { ChangelogChunk, ChangelogReaderPort, TopicPartition } from '../processing/ports.js';
import { toInputRecord } from './group-consumer.js';
import { toIqgateError } from './kafka-errors.js';
import { DetachedCluster } from './kafkajs-cluster.js';

interface KafkajsBatch {
  readonly messages: KafkaMessage[];
  lastOffset(): string;
  isEmptyIncludingFiltered(): boolean;
}
type BatchConstructor = new (topic: string, fetchedOffset: string, partitionData: unknown) => KafkajsBatch;

const require = createRequire(import.meta.url);
// Deep import: kafkajs has no `exports` map, so its Batch resolves (docs/kafkajs-notes.md §4 option B).
const Batch = require('kafkajs/src/consumer/batch') as BatchConstructor;
const READ_COMMITTED = 1;

interface FetchPartition { partition: number; errorCode: number; highWatermark: string; messages?: RawFetchedMessage[] }

/** A decoded record of a Fetch response, before kafkajs' Batch filters it. */
export interface RawFetchedMessage {
  readonly offset: string;
  readonly batchContext?: { readonly firstOffset: string; readonly lastOffsetDelta: number };
}

/**
 * Where to read next when a fetch at `position` shows nothing at or after it. A compacted
 * changelog keeps each record batch's offset span while the cleaner removes records from it, so
 * the broker can answer a fetch at `position` with a batch whose remaining records all lie below
 * `position` (the rest of its span compacted away): continue after that batch's last offset
 * (first offset + last offset delta). Only when no batch reaches `position` is nothing left
 * below the LSO, and the restore is at `end`.
 */
export function nextPositionWhenEmpty(messages: readonly RawFetchedMessage[], position: number, end: number): number {
  let next = position;
  for (const message of messages) {
    const context = message.batchContext;
    if (context === undefined) continue;
    const afterBatch = Number(context.firstOffset) + context.lastOffsetDelta + 1;
    if (afterBatch > next) next = afterBatch;
  }
  return next > position ? next : end;
}
interface FetchResponse { responses: Array<{ topicName: string; partitions: FetchPartition[] }> }

/** A batched request's byte limit, in per-partition limits: bounds the memory of one answer. */
const REQUEST_BYTES_FACTOR = 4;
/** Partitions per batched request. */
const MAX_BATCH = 256;

interface FetchTarget { readonly tp: TopicPartition; readonly position: number }

/**
 * One partition's part of a batched answer. `conclusive` is false when the partition got no
 * bytes at all while another partition of the same answer got some: the request's byte limit
 * may have run out before the broker came to it (the broker fills partitions in an order of its
 * own, not necessarily the request's), so "nothing" may not mean "nothing below the last stable
 * offset". When no partition got anything, nothing was spent, and every "nothing" is real.
 */
export interface BatchedPartition { readonly data: FetchPartition; readonly conclusive: boolean }

/** The targets grouped by topic, topics in order of first appearance: a Fetch request names each topic once. */
function groupedByTopic<T extends FetchTarget>(targets: readonly T[]): T[] {
  const byTopic = new Map<string, T[]>();
  for (const target of targets) {
    let list = byTopic.get(target.tp.topic);
    if (list === undefined) byTopic.set(target.tp.topic, (list = []));
    list.push(target);
  }
  return [...byTopic.values()].flat();
}

function partitionOf(response: FetchResponse, tp: TopicPartition): FetchPartition {
  const data = response.responses.find((r) => r.topicName === tp.topic)?.partitions.find((p) => p.partition === tp.partition);
  if (data === undefined) throw new Error(`no data for ${tp.topic}/${tp.partition} in fetch response`);
  return data;
}

/**
 * Coalesces the fetches of concurrent reads bound for one broker: the first read of a turn
 * schedules a request (setImmediate, so the reads of that turn join it), reads arriving while it
 * is in flight wait for the next one, and each request carries at most MAX_BATCH partitions in
 * arrival order. A failed request fails every read it carried (each read retries on its own).
 */
export class FetchBatch {
  private queue: Array<FetchTarget & { resolve: (p: BatchedPartition) => void; reject: (e: unknown) => void }> = [];
  private busy = false;

  constructor(private readonly send: (partitions: readonly FetchTarget[]) => Promise<FetchResponse>) {}

  fetch(tp: TopicPartition, position: number): Promise<BatchedPartition> {
    return new Promise((resolve, reject) => {
      this.queue.push({ tp, position, resolve, reject });
      if (!this.busy && this.queue.length === 1) setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    if (this.busy || this.queue.length === 0) return;
    this.busy = true;
    const taken = groupedByTopic(this.queue.slice(0, MAX_BATCH));
    this.queue = this.queue.slice(MAX_BATCH);
    try {
      const response = await this.send(taken);
      const anyData = response.responses.some((r) => r.partitions.some((p) => (p.messages?.length ?? 0) > 0));
      for (const entry of taken) {
        let data: FetchPartition;
        try {
          data = partitionOf(response, entry.tp);
        } catch (error) {
          entry.reject(error);
          continue;
        }
        entry.resolve({ data, conclusive: !anyData || (data.messages?.length ?? 0) > 0 });
      }
    } catch (error) {
      for (const entry of taken) entry.reject(error);
    } finally {
      this.busy = false;
      if (this.queue.length > 0) void this.drain();
    }
  }
}

export class KafkaChangelogReader implements ChangelogReaderPort {
  private readonly detached: DetachedCluster;
  private readonly cluster: Cluster;
  /** Per leader broker: the reads waiting for it share one Fetch request. */
  private readonly batches = new Map<string, FetchBatch>();

  constructor(kafka: Kafka, clientTag: string, private readonly maxBytes = 4 * 1024 * 1024) {
    this.detached = new DetachedCluster(kafka, `${clientTag}-restore`);
    this.cluster = this.detached.cluster;
  }

  private async ready(): Promise<void> {
    await this.detached.connect().catch((error: unknown) => {
      throw toIqgateError(error, 'connect changelog reader');
    });
  }

  async read(tp: TopicPartition, from: number, end: number, onChunk: (chunk: ChangelogChunk) => Promise<void>): Promise<void> {
    await this.ready();
    let position = from;
    let failures = 0;
    while (position < end) {
      let batch: KafkajsBatch;
      let rawMessages: RawFetchedMessage[] = [];
      try {
        await this.cluster.addTargetTopic(tp.topic);
        const leaders = this.cluster.findLeaderForPartitions(tp.topic, [tp.partition]);
        const nodeId = Object.keys(leaders)[0];
        if (nodeId === undefined) throw new Error(`no leader for ${tp.topic}/${tp.partition}`);
        // A fetch of its own whenever the shared answer cannot vouch for this partition: it failed
        // (kafkajs fails a whole answer for one partition's error, say an offset out of range, and
        // one bad partition must not fail the restores it shared a request with), or it got
        // nothing while another partition got data (the request's byte limit may have cut it off).
        const shared = await this.batchOf(nodeId).fetch(tp, position).catch(() => null);
        const partitionData = shared?.conclusive === true ? shared.data : await this.fetchAlone(nodeId, tp, position);
        batch = new Batch(tp.topic, String(position), partitionData);
        rawMessages = partitionData.messages ?? [];
        failures = 0;
      } catch (error) {
        failures += 1;
        if (failures > 10) throw toIqgateError(error, `restore fetch ${tp.topic}/${tp.partition}@${position}`);
        // Leader moves and transient errors: refresh metadata and retry with a short back-off.
        await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 50 * 2 ** failures)));
        await this.cluster.refreshMetadata().catch(() => undefined);
        continue;
      }
      if (batch.isEmptyIncludingFiltered()) {
        // Nothing visible at or after `position`: either a compacted batch's span (continue after
        // it) or nothing more below the LSO (the range up to `end`, an LSO taken earlier, is
        // done). lastOffset() would be HW−1 here, which may lie past an open transaction, so it is
        // not used.
        position = nextPositionWhenEmpty(rawMessages, position, end);
        await onChunk({ records: [], nextOffset: position });
        continue;
      }
      // Every record of a read_committed fetch lies below the current LSO, so all are committed,
      // even those at or past `end`: apply them all and continue after the last (markers included).
      const records = batch.messages.map((m) => toInputRecord(tp.topic, tp.partition, m));
      position = Math.max(position + 1, Number(batch.lastOffset()) + 1);
      await onChunk({ records, nextOffset: position });
    }
  }

  private batchOf(nodeId: string): FetchBatch {
    let batch = this.batches.get(nodeId);
    if (batch === undefined) {
      batch = new FetchBatch(async (partitions) => this.fetch(nodeId, partitions, this.maxBytes * REQUEST_BYTES_FACTOR));
      this.batches.set(nodeId, batch);
    }
    return batch;
  }

  private async fetchAlone(nodeId: string, tp: TopicPartition, position: number): Promise<FetchPartition> {
    const response = await this.fetch(nodeId, [{ tp, position }], this.maxBytes);
    return partitionOf(response, tp);
  }

  private async fetch(nodeId: string, partitions: readonly FetchTarget[], maxBytes: number): Promise<FetchResponse> {
    const broker = await this.cluster.findBroker({ nodeId });
    // `partitions` come grouped by topic (groupedByTopic). kafkajs may reorder them in the request
    // and the broker fills them in an order of its own: nothing here depends on the order.
    const topics: Array<{ topic: string; partitions: Array<{ partition: number; fetchOffset: string; maxBytes: number }> }> = [];
    for (const { tp, position } of partitions) {
      if (topics.at(-1)?.topic !== tp.topic) topics.push({ topic: tp.topic, partitions: [] });
      topics.at(-1)?.partitions.push({ partition: tp.partition, fetchOffset: String(position), maxBytes: this.maxBytes });
    }
    return await broker.fetch({ isolationLevel: READ_COMMITTED, maxWaitTime: 100, minBytes: 1, maxBytes, topics }) as FetchResponse;
  }

  async close(): Promise<void> {
    await this.detached.disconnect();
  }
}
