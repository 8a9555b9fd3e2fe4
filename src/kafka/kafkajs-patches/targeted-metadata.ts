/**
 * kafkajs patch 7 — metadata at connect (start-up time, network).
 *
 * A kafkajs 2.2.4 client that targets no topic yet (every producer and admin right after
 * connect()) refreshes its metadata with an empty topic list (`src/cluster/brokerPool.js:152`),
 * which kafkajs encodes as null (`src/protocol/encoder.js:286-292`), i.e. every topic of the
 * cluster. `../targeted-metadata.ts` (which says how) asks for none instead. Measured in
 * bench:scale, 1000 tasks: all RUNNING in 5.4–6.2 s instead of 11.2–11.5 s, all committed in
 * 7.4–7.6 s instead of 16–25 s.
 *
 * The check: kafkajs' Encoder must write NO_TOPICS as an empty array (behaviour), and BrokerPool
 * must still have the refreshMetadata that install() found in place (identity: what it passes on
 * only shows once a broker answers).
 */
import { installTargetedMetadata, NO_TOPICS } from '../targeted-metadata.js';
import { type KafkajsPatch, kafkajsPrototype, patchNotInPlace, requireKafkajs } from './kafkajs-patch.js';
import { Buffer } from 'node:buffer';

interface EncoderLike { writeNullableArray(array: readonly unknown[], type?: string): EncoderLike; readonly buffer: Buffer }
interface BrokerPoolPrototype { refreshMetadata: unknown }

let installedRefresh: unknown; // BrokerPool#refreshMetadata as installTargetedMetadata() left it

function brokerPoolPrototype(): BrokerPoolPrototype {
  return kafkajsPrototype('kafkajs/src/cluster/brokerPool');
}

export const targetedMetadataPatch: KafkajsPatch = {
  name: 'targeted-metadata',
  install: () => {
    installTargetedMetadata();
    installedRefresh ??= brokerPoolPrototype().refreshMetadata;
  },
  check: () => {
    const Encoder = requireKafkajs('kafkajs/src/protocol/encoder') as new () => EncoderLike;
    const length = new Encoder().writeNullableArray(NO_TOPICS, 'string').buffer.readInt32BE(0);
    if (length !== 0 || installedRefresh === undefined || brokerPoolPrototype().refreshMetadata !== installedRefresh) {
      throw patchNotInPlace('targeted-metadata', 'kafkajs clients that target no topic yet ask for the metadata of every topic of the cluster');
    }
  },
};
