/**
 * kafkajs patch 2 — `groupMessagesPerPartition` in linear time (CPU).
 *
 * kafkajs 2.2.4 (`src/producer/groupMessagesPerPartition.js:6-10`) copies the partition's whole
 * array for every message (`[...current, message]`): a send of n records to one partition copies
 * n²/2 array slots. `producer/sendMessages.js:40` calls it on every send, and it was the top item
 * of bench:processing's CPU profile. The replacement returns the same groups in the same order
 * in linear time (what kafkajs PR #1576, shipped in the kafkajs-fixes fork, does); it replaces the
 * file that `sendMessages.js:3` requires.
 *
 * The check is by identity: the result is the same by design, so the only observable is which
 * function `sendMessages.js` got from the module cache.
 */
import { isKafkajsFileReplaced, type KafkajsPatch, patchNotInPlace, replaceKafkajsFile } from './kafkajs-patch.js';

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

const FILE = 'kafkajs/src/producer/groupMessagesPerPartition.js';

export const groupMessagesPerPartitionPatch: KafkajsPatch = {
  name: 'group-messages-per-partition',
  install: () => replaceKafkajsFile(FILE, groupMessagesPerPartition),
  check: () => {
    if (!isKafkajsFileReplaced(FILE, groupMessagesPerPartition)) {
      throw patchNotInPlace('group-messages-per-partition', 'kafkajs\' producers group each send\'s records in quadratic time');
    }
  },
};
