/**
 * The changelog record format: a store change, keyed and valued as in the store, with the input
 * record behind the write in headers (SOURCE_HEADERS), so that restore rebuilds the Position
 * along with the data. Both directions live here, apart from the task that writes them and the
 * restore that reads them, so that the two cannot drift apart.
 */
import type { Change, FlushedChange, RecordSource } from '../store/types.js';
import type { InputRecord, OutputRecord } from './ports.js';
import { SOURCE_HEADERS } from './topic-names.js';
import { Buffer } from 'node:buffer';

/** The changelog record of a change leaving the record cache (to partition `partition` of `topic`). */
export function toChangelogRecord(topic: string, partition: number, change: FlushedChange): OutputRecord {
  return {
    topic,
    partition,
    key: change.key,
    value: change.value,
    headers: {
      [SOURCE_HEADERS.topic]: change.source.topic,
      [SOURCE_HEADERS.partition]: String(change.source.partition),
      [SOURCE_HEADERS.offset]: String(change.source.offset),
    },
  };
}

/** Rebuilds the change and the Position carried by a changelog record (see toChangelogRecord) for restore. */
export function fromChangelogRecord(record: InputRecord): { change: Change; source: RecordSource | null } {
  const topic = record.headers[SOURCE_HEADERS.topic];
  const partition = Number(record.headers[SOURCE_HEADERS.partition]);
  const offset = Number(record.headers[SOURCE_HEADERS.offset]);
  const source = topic !== undefined && Number.isInteger(partition) && Number.isInteger(offset) ? { topic, partition, offset } : null;
  return { change: { key: record.key ?? Buffer.alloc(0), value: record.value }, source };
}
