/**
 * One copy of each topic's metadata for all kafkajs clients of the process (kafkajs patch 6).
 *
 * Every kafkajs client (producer, consumer, admin) keeps the metadata of the topics it uses in
 * its own BrokerPool: one object per partition, with arrays of replicas, in-sync replicas and
 * offline replicas. iqgate runs one transactional producer per task, and each task's producer
 * writes to topics of N partitions (its changelog, repartition and output topics), so N tasks
 * hold N copies of N partitions' metadata: memory grows as N². bench:scale measured the heap at
 * 1000 tasks at about 640 MB, most of it such copies (heap snapshot at 700 tasks: 2.7 M arrays
 * and 1 M objects).
 *
 * Here, when a BrokerPool stores a metadata response, each topic's entry that is deeply equal
 * to the entry last seen for that topic is replaced by that entry, which all pools then share;
 * an entry that differs (a leader moved, a partition was added) becomes the new shared one.
 * Sharing is sound because kafkajs 2.2.4 only reads this metadata (its cluster, producer,
 * consumer and assigners look partitions up, filter and map them into new arrays; nothing in
 * its src/ assigns to them), and iqgate never sees these objects (admin's fetchTopicMetadata
 * answers a fresh response). They are not frozen: freezing made 1000 tasks start 2–4 s slower
 * in bench:scale. The map holds entries weakly: a topic nobody uses any more costs nothing.
 */
import { createRequire } from 'node:module';

interface TopicMetadata {
  readonly topic: string;
}
interface Metadata {
  topicMetadata?: TopicMetadata[];
}

const latestByTopic = new Map<string, WeakRef<TopicMetadata>>();

/**
 * Deep equality of decoded metadata: plain objects, arrays and primitives (what kafkajs'
 * decoders build). About 110 µs for a topic of 1000 partitions, a third less than a walk over
 * Object.keys and 9× faster than util.isDeepStrictEqual; it runs for every topic of every
 * metadata response (about 3200 responses while 1000 tasks start).
 */
export function sameData(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameData(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  let keys = 0;
  for (const key in a) {
    keys += 1;
    if (!(key in b) || !sameData((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false;
  }
  for (const key in b) {
    void key;
    keys -= 1;
  }
  return keys === 0;
}

/** The shared entry deeply equal to `entry`, or `entry` itself, now the shared one for its topic. */
export function shareTopicMetadata<T extends TopicMetadata>(entry: T): T {
  const latest = latestByTopic.get(entry.topic)?.deref();
  if (latest !== undefined && sameData(latest, entry)) return latest as T;
  latestByTopic.set(entry.topic, new WeakRef(entry));
  return entry;
}

/** A metadata response whose topic entries are the shared ones (a new object: the response is left as it was). */
export function shareMetadata<T extends Metadata | null | undefined>(metadata: T): T {
  if (metadata === null || metadata === undefined || !Array.isArray(metadata.topicMetadata)) return metadata;
  return { ...metadata, topicMetadata: metadata.topicMetadata.map(shareTopicMetadata) };
}

const METADATA = Symbol('iqgate:metadata');

/** Makes every kafkajs BrokerPool keep shared topic entries (its constructor and refreshMetadata assign `this.metadata`). */
export function installSharedMetadata(): void {
  const require = createRequire(import.meta.url);
  const BrokerPool = require('kafkajs/src/cluster/brokerPool') as { prototype: object };
  if (Object.getOwnPropertyDescriptor(BrokerPool.prototype, 'metadata') !== undefined) return;
  Object.defineProperty(BrokerPool.prototype, 'metadata', {
    configurable: true,
    get(this: { [METADATA]?: Metadata | null }) {
      return this[METADATA] ?? null;
    },
    set(this: { [METADATA]?: Metadata | null }, value: Metadata | null) {
      this[METADATA] = shareMetadata(value);
    },
  });
}
