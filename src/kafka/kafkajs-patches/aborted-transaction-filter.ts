/**
 * kafkajs patch 1 — read_committed filtering of aborted transactions (correctness).
 *
 * kafkajs 2.2.4 (`src/consumer/filterAbortedMessages.js:40-51`) walks the fetch response's aborted
 * transactions as if they were sorted by first offset and takes at most one per message. The
 * broker lists them in the order their abort markers were written (its transaction index is
 * appended at abort time), and a fetch that starts inside several aborted transactions needs
 * several at once. With transactions of different producers interleaved on one partition — every
 * repartition and output topic of a multi-task application — records of aborted transactions
 * leak to read_committed consumers. Found by the crash tests (counts inflated after aborts);
 * test/integration/kafka/broker.test.ts shows the leak on the real broker.
 *
 * The replacement follows the Java consumer (`CompletedFetch`/`Fetcher`: a priority queue of
 * aborted transactions by first offset; a producer's records are dropped from its first aborted
 * offset until its abort marker). It replaces the file that `consumer/batch.js:2` requires.
 *
 * The check is by behaviour, not by load order: kafkajs' own Batch must drop the records of two
 * interleaved aborted transactions listed in marker order (the case 2.2.4 gets wrong). When
 * kafkajs was loaded before the patches (anything that `import`s or `require`s it earlier, e.g. an
 * embedding service), read_committed consumers would silently see aborted records — exactly-once
 * broken without a sound — so createKafka() refuses to run.
 */
import { IqgateError } from '../../errors.js';
import { type KafkajsPatch, replaceKafkajsFile, requireKafkajs } from './kafkajs-patch.js';
import { Buffer } from 'node:buffer';

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

/** kafkajs' `consumer/batch.js`, which filters a fetched partition's records through filterAbortedMessages. */
export type BatchClass = new (topic: string, offset: string, data: {
  readonly partition: number;
  readonly highWatermark: string;
  readonly messages: RawMessage[];
  readonly abortedTransactions: AbortedTransaction[];
}) => { messages: Array<{ offset: string }> };

const NAME = 'aborted-transaction-filter';

/** Throws INVALID_CONFIG unless `Batch` drops the records of interleaved aborted transactions (see the module comment). */
export function assertFiltersAbortedTransactions(Batch: BatchClass): void {
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
      + `records of aborted transactions (saw offsets ${visible}, expected 11,16). Import 'iqgate' (its entry module installs `
      + 'them) before anything that imports kafkajs.', { details: { patch: NAME, visible } });
  }
}

export const abortedTransactionFilterPatch: KafkajsPatch = {
  name: NAME,
  install: () => replaceKafkajsFile('kafkajs/src/consumer/filterAbortedMessages.js', filterAbortedMessages),
  check: () => assertFiltersAbortedTransactions(requireKafkajs('kafkajs/src/consumer/batch') as BatchClass),
};
