/**
 * Patches for kafkajs 2.2.4 (unmaintained since 2023), one module each in `kafkajs-patches/`,
 * where each says why (cause, kafkajs source lines, measured effect) and how it checks itself:
 *
 *  1. aborted-transaction-filter   read_committed consumers drop interleaved aborted transactions (correctness)
 *  2. group-messages-per-partition a send's records grouped per partition in linear time (CPU)
 *  3. request-queue-timer          no ~1 ms timer loop per idle socket (CPU)
 *  4. coordinator-cache            transactional producers remember their coordinator (commit latency)
 *  5. record-encoder               each record encoded into one exact-size buffer (CPU, garbage)
 *  6. shared-metadata              one copy of each topic's metadata per process (memory)
 *  7. targeted-metadata            no whole-cluster metadata at connect (start-up time, network)
 *  8. partition-leader-lookup      partition leaders looked up in linear time (CPU while tasks open)
 *  9. rebalance-heartbeat          no heartbeat per batch once the group is rebalancing (rebalance time)
 * 10. fetch-size                   a consumer's fetch size can change while it runs (queries under load)
 * 11. transaction-retry            transaction steps retried from 25 ms, not kafkajs' 300 ms defaults (task moves, commits)
 *
 * Import this module before anything that imports kafkajs. Patches 1, 2 and 5 replace one of
 * kafkajs' files in Node's CommonJS module cache, which kafkajs then requires; a file kafkajs
 * has already loaded keeps its original (see kafkajs-patches/kafkajs-patch.ts). Loading kafkajs
 * loads the files of 1 and 2; that of 5 only with its first produce request. The others replace
 * methods on kafkajs' prototypes. All are installed here, in this order, when this module is
 * evaluated; the prototype patches 3, 4, 6, 7, 8 and 11 load only kafkajs' cluster, network, encoder
 * and errors files, which require none of the files that 1, 2 and 5 replace (the checks would
 * fail otherwise); 9 and 10 load kafkajs' consumer files, whose Batch requires the file 1
 * replaces, and so come after 1.
 * createKafka() calls assertKafkajsPatched(), which runs every patch's check().
 */
import { abortedTransactionFilterPatch } from './kafkajs-patches/aborted-transaction-filter.js';
import { coordinatorCachePatch } from './kafkajs-patches/coordinator-cache.js';
import { fetchSizePatch } from './kafkajs-patches/fetch-size.js';
import { groupMessagesPerPartitionPatch } from './kafkajs-patches/group-messages-per-partition.js';
import type { KafkajsPatch } from './kafkajs-patches/kafkajs-patch.js';
import { partitionLeaderLookupPatch } from './kafkajs-patches/partition-leader-lookup.js';
import { rebalanceHeartbeatPatch } from './kafkajs-patches/rebalance-heartbeat.js';
import { recordEncoderPatch } from './kafkajs-patches/record-encoder.js';
import { requestQueueTimerPatch } from './kafkajs-patches/request-queue-timer.js';
import { sharedMetadataPatch } from './kafkajs-patches/shared-metadata.js';
import { targetedMetadataPatch } from './kafkajs-patches/targeted-metadata.js';
import { transactionRetryPatch } from './kafkajs-patches/transaction-retry.js';

export type { KafkajsPatch } from './kafkajs-patches/kafkajs-patch.js';

/** Every kafkajs patch, in install order. */
export const KAFKAJS_PATCHES: readonly KafkajsPatch[] = [
  abortedTransactionFilterPatch,
  groupMessagesPerPartitionPatch,
  requestQueueTimerPatch,
  coordinatorCachePatch,
  recordEncoderPatch,
  sharedMetadataPatch,
  targetedMetadataPatch,
  partitionLeaderLookupPatch,
  rebalanceHeartbeatPatch,
  fetchSizePatch,
  transactionRetryPatch,
];

for (const patch of KAFKAJS_PATCHES) patch.install();

let verified = false;

/**
 * Throws INVALID_CONFIG, naming the patch, unless kafkajs uses every patch. A patch only takes
 * effect when this module is evaluated before kafkajs is first loaded (anything that `import`s or
 * `require`s kafkajs earlier, e.g. an embedding service, defeats 1 and 2, and 5 once it has
 * produced), and without 1
 * read_committed consumers silently see aborted records — exactly-once broken without a sound.
 * The aborted-transaction filter is checked first, so that case keeps its own error. createKafka()
 * calls this; the checks run once per process.
 */
export function assertKafkajsPatched(): void {
  if (verified) return;
  for (const patch of KAFKAJS_PATCHES) patch.check();
  verified = true;
}
