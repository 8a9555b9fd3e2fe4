/**
 * Patches for kafkajs 2.2.4 (unmaintained since 2023). Import this module before anything that
 * imports kafkajs: each patch seeds Node's CommonJS module cache with a replacement for one
 * internal file, which kafkajs then requires when it is first loaded.
 *
 * 1. Read_committed filtering of aborted transactions (correctness). kafkajs (`src/consumer/filterAbortedMessages.js`) walks the fetch response's aborted
 * transactions as if they were sorted by first offset and takes at most one per message. The
 * broker lists them in the order their abort markers were written (its transaction index is
 * appended at abort time), and a fetch that starts inside several aborted transactions needs
 * several at once. With transactions of different producers interleaved on one partition — every
 * repartition and output topic of a multi-task application — records of aborted transactions
 * leak to read_committed consumers. Found by the crash tests (counts inflated after aborts).
 *
 * The replacement follows the Java consumer (`CompletedFetch`/`Fetcher`: a priority queue of
 * aborted transactions by first offset; a producer's records are dropped from its first aborted
 * offset until its abort marker).
 *
 * 2. `groupMessagesPerPartition` (performance): kafkajs copies the partition's whole array for
 * every message (`[...current, message]`), quadratic in the records per partition of a send; it
 * was the top item of bench:processing's CPU profile. Same result in linear time (what kafkajs
 * PR #1576, shipped in the kafkajs-fixes fork, does).
 *
 * 3. The request queue's timer loop (CPU): after the first response, every socket reschedules
 * `checkPendingRequests` every ~1 ms forever, even with nothing pending (KAFKAJS-NOTES §5 "Timer
 * load per socket"; #1556, #1604, #1704; fix PRs #1572/#1667). With one transactional producer per
 * task that is thousands of wake-ups per second. The patched method schedules a check only when
 * requests are pending or the broker throttles; a response or a new request checks the queue anyway.
 *
 * 4. Coordinator lookups of transactional producers (commit latency): kafkajs sends a FindCoordinator
 * before every AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn (`eosManager:91-96`,
 * KAFKAJS-NOTES §5): four of the ~12 sequential round trips of each transaction. The patched
 * `findGroupCoordinator` remembers the coordinator's node id per Cluster (one Cluster per producer)
 * for COORDINATOR_CACHE_MS and resolves it through the broker pool as kafkajs does. Only clusters
 * that look up TRANSACTION coordinators (transactional producers) cache at all, so consumers and
 * admins are untouched. A metadata refresh (what kafkajs' send retrier does on NOT_COORDINATOR and
 * other retriable errors) or an unreachable broker drops the cache, and an entry never lives longer
 * than COORDINATOR_CACHE_MS, so kafkajs' own retries see a fresh coordinator within about a second;
 * a failed commit discards the producer and its cache. Brokers reject requests for transactions or
 * groups they do not coordinate, so a stale entry can only cost a retry, never change what a
 * transaction commits.
 *
 * 5. The record encoder (performance): kafkajs encodes each produced record through a fresh
 * zero-filled 512-byte Encoder plus one per header and a temporary Buffer per varint, with 64-bit
 * `Long` emulation for the timestamp delta. `record-encoder.ts` writes the same bytes into one
 * exact-size buffer.
 *
 * 6. Topic metadata (memory): each kafkajs client keeps its own copy of the metadata of every
 * partition of the topics it uses; with one producer per task that is N² objects at N tasks.
 * `shared-metadata.ts` makes all clients of the process share one copy per topic.
 *
 * 7. Metadata at connect (start-up time, network): a client that targets no topic yet refreshes
 * the metadata of every topic of the cluster; `targeted-metadata.ts` asks for none instead.
 */
import { createRequire, Module } from 'node:module';
import { IqgateError } from '../errors.js';
import { encodeRecord } from './record-encoder.js';
import { installSharedMetadata } from './shared-metadata.js';
import { installTargetedMetadata } from './targeted-metadata.js';

interface RawMessage {
  readonly offset: string;
  readonly key?: Buffer | null;
  readonly isControlRecord?: boolean;
  readonly batchContext?: { readonly producerId: string; readonly inTransaction?: boolean };
}
interface AbortedTransaction { readonly producerId: string; readonly firstOffset: string }

const ABORT_MARKER_KEY = Buffer.from([0, 0, 0, 0]);

export function filterAbortedMessages({ messages, abortedTransactions }: { messages: RawMessage[]; abortedTransactions?: AbortedTransaction[] }): RawMessage[] {
  if (abortedTransactions === undefined || abortedTransactions.length === 0) return messages;
  const pending = [...abortedTransactions].sort((a, b) => compareOffsets(a.firstOffset, b.firstOffset));
  let next = 0;
  const aborted = new Set<string>();
  return messages.filter((message) => {
    while (next < pending.length && compareOffsets((pending[next] as AbortedTransaction).firstOffset, message.offset) <= 0) {
      aborted.add((pending[next] as AbortedTransaction).producerId);
      next += 1;
    }
    const producerId = message.batchContext?.producerId;
    if (producerId === undefined) return true;
    if (message.isControlRecord === true) {
      // An abort marker ends the producer's aborted transaction (the marker itself is filtered as a control record later).
      if (message.key != null && Buffer.from(message.key).equals(ABORT_MARKER_KEY)) aborted.delete(producerId);
      return true;
    }
    return !(aborted.has(producerId) && message.batchContext?.inTransaction === true);
  });
}

function compareOffsets(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

interface GroupArgs {
  readonly topic: string;
  readonly partitionMetadata: readonly unknown[];
  readonly messages: readonly unknown[];
  readonly partitioner: (args: { topic: string; partitionMetadata: readonly unknown[]; message: unknown }) => number;
}

export function groupMessagesPerPartition({ topic, partitionMetadata, messages, partitioner }: GroupArgs): Record<number, unknown[]> {
  const result: Record<number, unknown[]> = {};
  if (partitionMetadata.length === 0) return result;
  for (const message of messages) {
    const partition = partitioner({ topic, partitionMetadata, message });
    (result[partition] ??= []).push(message);
  }
  return result;
}

const require = createRequire(import.meta.url);

function install(file: string, replacement: unknown): void {
  const target = require.resolve(file);
  const cached = require.cache[target];
  if (cached === undefined) {
    const patched = new Module(target);
    patched.filename = target;
    patched.loaded = true;
    patched.exports = replacement;
    require.cache[target] = patched;
  } else if (cached.exports !== replacement) {
    // kafkajs was loaded before this module: it already holds the original function.
    process.emitWarning(`iqgate: kafkajs was loaded before its patches; ${file} is unpatched (createKafka() will refuse to run)`);
  }
}

install('kafkajs/src/consumer/filterAbortedMessages.js', filterAbortedMessages);
install('kafkajs/src/producer/groupMessagesPerPartition.js', groupMessagesPerPartition);
install('kafkajs/src/protocol/recordBatch/record/v0/index.js', encodeRecord);
installSharedMetadata();
installTargetedMetadata();

let verified = false;

/**
 * Throws INVALID_CONFIG unless kafkajs really filters aborted transactions with the fix above.
 * The patch only takes effect when this module is evaluated before kafkajs is first loaded
 * (anything that `import`s or `require`s kafkajs earlier, e.g. an embedding service, defeats it),
 * and then read_committed consumers silently see aborted records — exactly-once broken without a
 * sound. So it is checked by behaviour, not by load order: kafkajs' own Batch must drop the
 * records of two interleaved aborted transactions listed in marker order (the case 2.2.4 gets
 * wrong). createKafka() calls this; the check runs once per process.
 */
export function assertKafkajsPatched(load: (id: string) => unknown = require): void {
  const real = load === require;
  if (real && verified) return;
  const Batch = load('kafkajs/src/consumer/batch') as new (topic: string, offset: string, data: unknown) => { messages: Array<{ offset: string }> };
  const message = (offset: number, producerId: string, control?: Buffer): RawMessage => ({
    offset: String(offset),
    key: control ?? Buffer.from('k'),
    isControlRecord: control !== undefined,
    batchContext: { producerId, inTransaction: true },
  });
  const commit = Buffer.from([0, 0, 0, 1]);
  // p1 aborted [10, 13], p2 committed [11, 14], p3 aborted [12, 15]: only 11 and 16 are committed.
  const messages = [message(10, 'p1'), message(11, 'p2'), message(12, 'p3'), message(13, 'p1', ABORT_MARKER_KEY),
    message(14, 'p2', commit), message(15, 'p3', ABORT_MARKER_KEY), message(16, 'p1')];
  const batch = new Batch('iqgate-patch-check', '10', {
    partition: 0, highWatermark: '17', messages,
    abortedTransactions: [{ producerId: 'p3', firstOffset: '12' }, { producerId: 'p1', firstOffset: '10' }],
  });
  const visible = batch.messages.map((m) => m.offset).join(',');
  if (visible !== '11,16') {
    throw new IqgateError('INVALID_CONFIG', 'kafkajs was loaded before iqgate\'s kafkajs patches, so read_committed consumers would see '
      + `records of aborted transactions (saw offsets ${visible}, expected 11,16). Import iqgate (or 'iqgate/src/kafka/kafkajs-patches') `
      + 'before anything that imports kafkajs.', { details: { visible } });
  }
  if (real) verified = true;
}

interface RequestQueueLike {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
}
const CHECK_PENDING_REQUESTS_INTERVAL = 10; // kafkajs' own constant (requestQueue/index.js:12)
const RequestQueue = require('kafkajs/src/network/requestQueue') as { prototype: RequestQueueLike & { scheduleCheckPendingRequests(this: RequestQueueLike): void } };
RequestQueue.prototype.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: RequestQueueLike): void {
  if (this.throttleCheckTimeoutId) return;
  const throttledFor = this.throttledUntil - Date.now();
  if (this.pending.length === 0 && throttledFor <= 0) return; // nothing to check: no 1 ms loop
  const delay = this.pending.length > 0 && throttledFor <= 0 ? CHECK_PENDING_REQUESTS_INTERVAL : Math.max(throttledFor, 0);
  this.throttleCheckTimeoutId = setTimeout(() => {
    this.throttleCheckTimeoutId = null;
    this.checkPendingRequests();
  }, delay);
};

interface ClusterLike {
  findGroupCoordinator(this: ClusterLike, args: { groupId: string; coordinatorType?: number }): Promise<{ nodeId: number }>;
  findBroker(this: ClusterLike, args: { nodeId: number }): Promise<{ nodeId: number }>;
  refreshMetadata(this: ClusterLike): Promise<void>;
  [COORDINATORS]?: Map<string, { nodeId: number; at: number }>;
}
const COORDINATORS = Symbol('iqgate:transactionCoordinators');
const TRANSACTION_COORDINATOR = 1; // kafkajs/src/protocol/coordinatorTypes.js
export const COORDINATOR_CACHE_MS = 1_000;
const Cluster = require('kafkajs/src/cluster') as { prototype: ClusterLike };
const findGroupCoordinator = Cluster.prototype.findGroupCoordinator;
const refreshMetadata = Cluster.prototype.refreshMetadata;
Cluster.prototype.findGroupCoordinator = async function findCachedCoordinator(this: ClusterLike, args) {
  // Transactional producers only: their first request is InitProducerId, after a TRANSACTION lookup.
  if (args.coordinatorType !== TRANSACTION_COORDINATOR && this[COORDINATORS] === undefined) return findGroupCoordinator.call(this, args);
  const cache = (this[COORDINATORS] ??= new Map());
  const key = `${args.coordinatorType ?? 0}:${args.groupId}`;
  const known = cache.get(key);
  if (known !== undefined && Date.now() - known.at < COORDINATOR_CACHE_MS) {
    try {
      return await this.findBroker({ nodeId: known.nodeId });
    } catch {
      cache.delete(key); // gone from the metadata or unreachable: look it up again
    }
  }
  const broker = await findGroupCoordinator.call(this, args);
  cache.set(key, { nodeId: broker.nodeId, at: Date.now() });
  return broker;
};
Cluster.prototype.refreshMetadata = async function refreshMetadataAndCoordinators(this: ClusterLike) {
  this[COORDINATORS]?.clear();
  await refreshMetadata.call(this);
};
