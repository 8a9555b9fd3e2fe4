/**
 * Restore (docs/architecture.md §4, docs/kafkajs-notes.md §4 "Restore recipe"): for each store of a task, replay the
 * changelog from the offset stored with the committed data (KIP-1035) to the read_committed end,
 * straight into the committed store. The caller has already run InitProducerId for the task's
 * transactionalId, which completes or aborts the previous owner's transaction so the end (LSO)
 * can advance. Only the tail since the last store commit is read; nothing is ever wiped.
 */
import type { TaskStores } from '../store/types.js';
import { Position } from '../store/position.js';
import type { ChangelogReaderPort } from './ports.js';
import { fromChangelogRecord } from './changelog-record.js';

export interface RestoreProgress {
  readonly taskId: string;
  readonly storeName: string;
  readonly partition: number;
  /** Records applied so far for this store. */
  readonly restored: number;
  /** Changelog offsets still to read (end − position), including control records. */
  readonly remaining: number;
  readonly done: boolean;
}

export interface RestoreRequest {
  readonly taskId: string;
  readonly partition: number;
  readonly stores: TaskStores;
  /** store name → changelog topic */
  readonly changelogTopics: ReadonlyMap<string, string>;
  readonly endOffset: (changelogTopic: string, partition: number) => Promise<number>;
  readonly reader: ChangelogReaderPort;
  readonly onProgress: (progress: RestoreProgress) => void;
  /** Checked between chunks: a revoked task stops restoring. */
  readonly cancelled: () => boolean;
}

/** Returns the number of records replayed per store. */
export async function restoreTaskStores(request: RestoreRequest): Promise<Record<string, number>> {
  const replayed: Record<string, number> = {};
  for (const [storeName, topic] of request.changelogTopics) {
    const from = request.stores.changelogOffsets()[storeName] ?? 0;
    const end = await request.endOffset(topic, request.partition);
    let restored = 0;
    replayed[storeName] = 0;
    if (from >= end) {
      request.onProgress({ taskId: request.taskId, storeName, partition: request.partition, restored, remaining: 0, done: true });
      continue;
    }
    await request.reader.read({ topic, partition: request.partition }, from, end, async (chunk) => {
      if (request.cancelled()) throw new RestoreCancelled(request.taskId);
      const position = Position.empty();
      const changes = chunk.records.map((record) => {
        const { change, source } = fromChangelogRecord(record);
        if (source !== null) position.advance(source.topic, source.partition, source.offset);
        return change;
      });
      await request.stores.restore(storeName, changes, chunk.nextOffset, position);
      restored += changes.length;
      replayed[storeName] = restored;
      request.onProgress({
        taskId: request.taskId, storeName, partition: request.partition, restored, remaining: Math.max(0, end - chunk.nextOffset), done: chunk.nextOffset >= end,
      });
    });
  }
  return replayed;
}

export class RestoreCancelled extends Error {
  constructor(taskId: string) {
    super(`restore of task ${taskId} cancelled (task revoked)`);
  }
}
