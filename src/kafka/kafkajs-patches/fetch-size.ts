/**
 * kafkajs patch 10 — a consumer's fetch size can change while it runs (queries under load).
 *
 * kafkajs 2.2.4 decodes a whole fetch response in JavaScript, on the event loop, in one stretch
 * (`src/protocol/requests/fetch/v11/response.js`: the decode awaits only promises that are
 * already settled, so nothing else runs in between), and sizes every fetch from the `maxBytes`
 * and `maxBytesPerPartition` its ConsumerGroup was built with (`src/consumer/consumerGroup.js:446-503`).
 * With the adapter's 2 MB responses such a stretch took up to 15 ms in bench:query:busy, outside
 * the processing windows that keep the loop for gateway requests (src/runtime/query-share.ts).
 *
 * The patched `ConsumerGroup#fetch` asks the hint registered for the consumer (by its kafkajs
 * Cluster: kafkajs builds one per consumer, and a restarted ConsumerGroup keeps it) for the sizes
 * of this fetch; a hint that answers undefined, or no hint, leaves the sizes the consumer was
 * created with. The hint is asked once per fetch, as the fetch starts; kafkajs reads the two
 * fields after a few awaits, and runs one fetch per broker at once on the same ConsumerGroup, so
 * with several brokers a fetch made as the hint changed may go out with the other fetch's sizes
 * (either way a size the hint or the consumer gave).
 * It replaces one method on kafkajs' ConsumerGroup prototype, so the check is by identity; like
 * patch 9 it loads kafkajs' consumer files and comes after patch 1.
 */
import { type KafkajsPatch, kafkajsPrototype, patchNotInPlace, replaceMethod } from './kafkajs-patch.js';

export interface FetchSizes {
  /** The whole response (FetchRequest max_bytes). */
  readonly maxBytes: number;
  /** Each partition (the partition's max_bytes). */
  readonly maxBytesPerPartition: number;
}

/** The sizes for the next fetch; undefined: the consumer's own. */
export type FetchSizeHint = () => FetchSizes | undefined;

const CONFIGURED = Symbol('iqgate.configuredFetchSizes');

interface ConsumerGroupLike {
  cluster: object;
  maxBytes: number;
  maxBytesPerPartition: number;
  [CONFIGURED]?: FetchSizes;
}

type Fetch = (this: ConsumerGroupLike, nodeId: number) => Promise<unknown>;

const hints = new WeakMap<object, FetchSizeHint>();

/** From now on, each fetch of the consumer whose kafkajs Cluster is `cluster` is sized by `hint`. */
export function setFetchSizeHint(cluster: object, hint: FetchSizeHint): void {
  hints.set(cluster, hint);
}

function consumerGroupPrototype(): { fetch: Fetch } {
  return kafkajsPrototype('kafkajs/src/consumer/consumerGroup');
}

/** kafkajs' own method, kept by install(). */
let kafkajsFetch: Fetch | undefined;

export const fetch: Fetch = function fetch(this: ConsumerGroupLike, nodeId: number): Promise<unknown> {
  const hint = hints.get(this.cluster);
  if (hint !== undefined) {
    const configured = (this[CONFIGURED] ??= { maxBytes: this.maxBytes, maxBytesPerPartition: this.maxBytesPerPartition });
    const sizes = hint() ?? configured;
    this.maxBytes = sizes.maxBytes;
    this.maxBytesPerPartition = sizes.maxBytesPerPartition;
  }
  return kafkajsFetch!.call(this, nodeId);
};

export const fetchSizePatch: KafkajsPatch = {
  name: 'fetch-size',
  install: () => {
    kafkajsFetch ??= replaceMethod(consumerGroupPrototype(), 'fetch', fetch);
  },
  check: () => {
    if (consumerGroupPrototype().fetch !== fetch) {
      throw patchNotInPlace('fetch-size', 'a kafkajs consumer cannot fetch less while gateway requests wait');
    }
  },
};
