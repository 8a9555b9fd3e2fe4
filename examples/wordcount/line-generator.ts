/**
 * Deterministic input for wordcount: line i of a seed is always the same, so a test can
 * recompute the expected counts from (seed, count) alone. Words come from a small vocabulary
 * with a skewed (Zipf-like) distribution, as natural text does.
 */
// Before kafkajs: read_committed must not see aborted records (see the module's comment).
import '../../src/kafka/kafkajs-patches.js';
import { Kafka, logLevel } from 'kafkajs';
import { rng } from '../seeded-random.js';

const VOCABULARY = [
  'kafka', 'stream', 'state', 'store', 'commit', 'offset', 'task', 'partition', 'record', 'topic',
  'query', 'level', 'cache', 'batch', 'restore', 'changelog', 'producer', 'consumer', 'group', 'epoch',
  'fence', 'zombie', 'rebalance', 'position', 'bound', 'range', 'prefix', 'key', 'value', 'count',
];


export function makeLine(seed: number, index: number, wordsPerLine = 8): string {
  const next = rng((seed * 1_000_003 + index * 7919 + 1) >>> 0);
  const words: string[] = [];
  for (let i = 0; i < wordsPerLine; i += 1) {
    const r = next();
    words.push(VOCABULARY[Math.floor(r * r * VOCABULARY.length)] ?? 'kafka');
  }
  return words.join(' ');
}

export interface ProduceLinesOptions {
  readonly brokers: readonly string[];
  readonly topic: string;
  readonly seed: number;
  /** Lines [from, from + count). */
  readonly from?: number;
  readonly count: number;
  readonly wordsPerLine?: number;
  readonly batchSize?: number;
}

/** Produces lines keyed by their index (spread over partitions by the default partitioner). */
export async function produceLines(options: ProduceLinesOptions): Promise<void> {
  const kafka = new Kafka({ clientId: 'wordcount-generator', brokers: [...options.brokers], logLevel: logLevel.ERROR });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    const from = options.from ?? 0;
    const batchSize = options.batchSize ?? 1000;
    for (let start = from; start < from + options.count; start += batchSize) {
      const end = Math.min(from + options.count, start + batchSize);
      const messages = [];
      for (let i = start; i < end; i += 1) messages.push({ key: `line-${i}`, value: makeLine(options.seed, i, options.wordsPerLine) });
      await producer.send({ topic: options.topic, messages, acks: -1 });
    }
  } finally {
    await producer.disconnect();
  }
}
