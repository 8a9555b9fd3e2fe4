/**
 * Wordcount, the "hello world" of stream processing, on iqgate's DSL: lines → words →
 * groupBy(word) (through a repartition topic) → count into the `word-counts` store →
 * the count updates to the output topic.
 */
import { StreamsBuilder } from '../../src/processing/stream-builder.js';
import type { Topology } from '../../src/processing/topology.js';
import { serdes } from '../../src/store/serdes.js';

export interface WordcountTopologyOptions {
  readonly inputTopic: string;
  readonly outputTopic: string;
  /** Default `word-counts`. */
  readonly storeName?: string;
}

/** Lower-cased runs of letters and digits. */
export function wordsOf(line: string): string[] {
  return line.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 0);
}

export function buildWordcountTopology(options: WordcountTopologyOptions): Topology {
  const builder = new StreamsBuilder();
  builder
    .stream(options.inputTopic, { key: serdes.string, value: serdes.string })
    .flatMapValues((line) => wordsOf(line), serdes.string)
    .groupBy((_key, word) => word, { key: serdes.string, name: 'words' })
    .count({ store: options.storeName ?? 'word-counts', value: serdes.int64 })
    .toStream()
    .to(options.outputTopic);
  return builder.build();
}
