/**
 * kafkajs patch 11 — the transaction manager's retries (producer set-up and commit latency).
 *
 * kafkajs 2.2.4's transaction manager builds its retrier from `cluster.retry`
 * (`src/producer/eosManager/index.js:49`), a property no Cluster has (`src/cluster/index.js:74`
 * keeps only the retrier it builds), so it always runs on kafkajs' defaults: a first retry after
 * 300 ms, doubling (`src/retry/defaults.js`) — whatever retry settings the producer was given.
 * CONCURRENT_TRANSACTIONS is its most common retriable answer: an InitProducerId that meets
 * the transaction of the id's previous owner while the coordinator aborts it (a task moved at a
 * rebalance), or an EndTxn/AddOffsetsToTxn right behind the previous transaction's markers. Both
 * clear within tens of milliseconds; each waited 300 ms and more. The patch gives Cluster a
 * `retry` (read only by the transaction manager, and by the producer as the base its own retry
 * options override: `src/producer/index.js:58`), starting at 25 ms.
 *
 * The check is by identity: the property on Cluster's prototype is this patch's.
 */
import { type KafkajsPatch, kafkajsPrototype, patchNotInPlace } from './kafkajs-patch.js';

/** About 6 s of retries in all (kafkajs' defaults: 9.3 s), the first after 25 ms. */
export const TRANSACTION_RETRY = Object.freeze({ initialRetryTime: 25, maxRetryTime: 1000, factor: 0.2, multiplier: 1.6, retries: 12 });

function retry(): typeof TRANSACTION_RETRY {
  return TRANSACTION_RETRY;
}

function clusterPrototype(): object {
  return kafkajsPrototype<object>('kafkajs/src/cluster');
}

export const transactionRetryPatch: KafkajsPatch = {
  name: 'transaction-retry',
  install: () => {
    const prototype = clusterPrototype();
    if (Object.getOwnPropertyDescriptor(prototype, 'retry')?.get === retry) return;
    Object.defineProperty(prototype, 'retry', { get: retry, configurable: true });
  },
  check: () => {
    if (Object.getOwnPropertyDescriptor(clusterPrototype(), 'retry')?.get !== retry) {
      throw patchNotInPlace('transaction-retry', 'a kafkajs transaction step that meets CONCURRENT_TRANSACTIONS waits 300 ms and more before it is tried again');
    }
  },
};
