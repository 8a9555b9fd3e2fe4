/**
 * Metadata of the topics a kafkajs client uses, never of the whole cluster (kafkajs patch 7).
 *
 * A kafkajs client refreshes its metadata for the topics it targets; before it targets any —
 * right after connect(), when every producer and admin client starts — the list is empty, and
 * kafkajs encodes an empty list as null, which the Metadata API reads as "every topic of the
 * cluster" (`Encoder#writeNullableArray`: "empty array and null are the same thing"). With one
 * producer per task, 1000 tasks downloaded and decoded the metadata of every topic in the cluster
 * 1000 times while starting: in bench:scale against a test broker holding ~120 topics that was
 * 270,000 topic entries in 3,200 responses; on a production cluster of thousands of topics, far
 * more. What a client needs before it targets a topic is the broker list and the controller,
 * which every Metadata response carries, topics or not.
 *
 * Here a BrokerPool refresh with no target topics asks for none (Metadata v1+: an empty array);
 * requests that mean "all topics" on purpose (admin's listTopics and fetchTopicMetadata() without
 * topics go through `cluster.metadata()`, not the pool's refresh) are unchanged.
 */
import { createRequire } from 'node:module';

/** The empty topic list that is encoded as an empty array, not as null. shuffle() keeps arrays shorter than 2 as they are. */
export const NO_TOPICS: readonly string[] = Object.freeze([]);

interface EncoderPrototype {
  writeNullableArray(this: EncoderPrototype, array: readonly unknown[], type?: string): EncoderPrototype;
  writeArray(this: EncoderPrototype, array: readonly unknown[], type: string | undefined, length: number): EncoderPrototype;
}
interface BrokerPoolPrototype {
  refreshMetadata(this: BrokerPoolPrototype, topics: readonly string[]): Promise<void>;
}

export function installTargetedMetadata(): void {
  const require = createRequire(import.meta.url);
  const Encoder = require('kafkajs/src/protocol/encoder') as { prototype: EncoderPrototype };
  const BrokerPool = require('kafkajs/src/cluster/brokerPool') as { prototype: BrokerPoolPrototype & { [INSTALLED]?: true } };
  if (BrokerPool.prototype[INSTALLED]) return;
  BrokerPool.prototype[INSTALLED] = true;

  const writeNullableArray = Encoder.prototype.writeNullableArray;
  Encoder.prototype.writeNullableArray = function writeNullableOrEmptyArray(array, type) {
    if (array === NO_TOPICS) return this.writeArray(array, type, 0);
    return writeNullableArray.call(this, array, type);
  };

  const refreshMetadata = BrokerPool.prototype.refreshMetadata;
  BrokerPool.prototype.refreshMetadata = function refreshTargetedMetadata(topics) {
    return refreshMetadata.call(this, topics.length === 0 ? NO_TOPICS : topics);
  };
}

const INSTALLED = Symbol('iqgate:targetedMetadata');
