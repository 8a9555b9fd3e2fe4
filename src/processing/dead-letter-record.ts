/**
 * The record the `dead-letter` error policy sends for an input record it gives up on: the raw
 * key and value, the input's headers, and headers naming the error and the source record. It is
 * what a consumer of the dead-letter topic depends on, so it is kept apart from the task logic
 * that decides when to send one.
 */
import type { InputRecord, OutputRecord } from './ports.js';
import { entryOf } from './record-pack.js';
import { SOURCE_HEADERS } from './topic-names.js';

export function deadLetterRecord(deadLetterTopic: string, record: InputRecord, code: string, error: unknown): OutputRecord {
  return {
    topic: deadLetterTopic,
    key: record.key,
    value: record.value,
    headers: {
      ...record.headers,
      'iqgate-error-code': code,
      'iqgate-error-message': error instanceof Error ? error.message : String(error),
      [SOURCE_HEADERS.topic]: record.topic,
      [SOURCE_HEADERS.partition]: String(record.partition),
      [SOURCE_HEADERS.offset]: String(record.offset),
      // An entry of a packed repartition record (record-pack.ts): which one, as all share the offset.
      ...(entryOf(record) === undefined ? {} : { 'iqgate-src-entry': String(entryOf(record)) }),
    },
  };
}
