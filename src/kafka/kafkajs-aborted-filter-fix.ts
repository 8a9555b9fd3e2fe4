/**
 * Fixes kafkajs 2.2.4's read_committed filtering of aborted transactions. Import this module
 * before anything that imports kafkajs.
 *
 * kafkajs (`src/consumer/filterAbortedMessages.js`) walks the fetch response's aborted
 * transactions as if they were sorted by first offset and takes at most one per message. The
 * broker lists them in the order their abort markers were written (its transaction index is
 * appended at abort time), and a fetch that starts inside several aborted transactions needs
 * several at once. With transactions of different producers interleaved on one partition — every
 * repartition and output topic of a multi-task application — records of aborted transactions
 * leak to read_committed consumers. Found by the crash tests (counts inflated after aborts).
 *
 * The replacement follows the Java consumer (`CompletedFetch`/`Fetcher`: a priority queue of
 * aborted transactions by first offset; a producer's records are dropped from its first aborted
 * offset until its abort marker). It is installed by seeding Node's CommonJS module cache for that
 * file, which kafkajs' `batch.js` requires when kafkajs is first loaded.
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

const require = createRequire(import.meta.url);
const target = require.resolve('kafkajs/src/consumer/filterAbortedMessages.js');
if (require.cache[target] === undefined) {
  const patched = new Module(target);
  patched.filename = target;
  patched.loaded = true;
  patched.exports = filterAbortedMessages;
  require.cache[target] = patched;
} else if (require.cache[target]?.exports !== filterAbortedMessages) {
  // kafkajs was loaded before this module: its Batch already holds the original function.
  process.emitWarning('iqgate: kafkajs was loaded before the aborted-transaction filter fix; read_committed may see aborted records');
}
