/**
 * FreshTopicReader's guarantee (a caller only ever gets data from a request that started after
 * its call) for look-ups that name their partitions: the committed offsets of opening tasks.
 * Callers that ask while a request for the topic is in flight share the next one, which asks
 * for the union of their partitions — 1000 tasks opening at once still send a handful of
 * requests, and none asks for a partition no task of this instance is opening. Asking for the
 * whole topic instead made each read wait for the other members' transactions (require_stable:
 * the broker holds back an answer while a transaction holds offsets of any partition asked for).
 */
import { FreshTopicReader } from './fresh-topic-reader.js';

export class FreshPartitionReader {
  private readonly reader: FreshTopicReader<Map<number, number>, number>;

  constructor(fetch: (topic: string, partitions: readonly number[]) => Promise<Map<number, number>>) {
    this.reader = new FreshTopicReader((topic, partitions) => fetch(topic, [...partitions].sort((a, b) => a - b)));
  }

  async get(topic: string, partition: number): Promise<number | undefined> {
    return (await this.reader.get(topic, partition)).get(partition);
  }
}
