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
 */
import { createRequire, Module } from 'node:module';

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
    process.emitWarning(`iqgate: kafkajs was loaded before its patches; ${file} is unpatched`);
  }
}

install('kafkajs/src/consumer/filterAbortedMessages.js', filterAbortedMessages);
install('kafkajs/src/producer/groupMessagesPerPartition.js', groupMessagesPerPartition);

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
