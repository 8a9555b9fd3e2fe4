/**
 * The input side of a task's open transaction (TransactionOutput is the other): the records
 * processed in it, kept to process them again after a rollback, and the records skipped in it —
 * a processor failed on them or asked to abort — each with the dead letter a replay must send
 * again. A rollback drops the transaction but not its skips, so the replay leaves them out again.
 */
import type { RecordSource } from '../store/types.js';
import type { InputRecord, OutputRecord } from './ports.js';
import { entryOf } from './record-pack.js';

export class TransactionInputs {
  /** Records processed in the open transaction, kept to replay them after a processor error. */
  private processed: InputRecord[] = [];
  /** Input records those are, a pack's entries each (the commit's record count). */
  private count = 0;
  /** Records skipped after a processor error in this transaction, with their dead letter to re-send on replay. */
  private readonly skips = new Map<string, OutputRecord | null>();

  /** The records processed in the open transaction, in order. */
  get records(): readonly InputRecord[] {
    return this.processed;
  }

  /** Input records processed in the open transaction, a pack's entries each. */
  get size(): number {
    return this.count;
  }

  /** `record` was processed; it held `count` input records (a pack's entries). */
  add(record: InputRecord, count: number): void {
    this.processed.push(record);
    this.count += count;
  }

  /** Whether `record` is skipped: undefined if not, else the dead letter to send again (null: none). */
  skipOf(record: RecordSource): OutputRecord | null | undefined {
    // Only while replaying after a processor error (a key string per record costs on the hot path).
    return this.skips.size === 0 ? undefined : this.skips.get(recordKey(record));
  }

  /**
   * Starts the transaction again after a rollback: forgets its records (returned, to process
   * again), keeps its skips, and adds `skipped` (keys from recordKey).
   */
  restart(skipped: Iterable<readonly [key: string, deadLetter: OutputRecord | null]>): InputRecord[] {
    const replay = this.processed;
    this.processed = [];
    this.count = 0;
    for (const [key, deadLetter] of skipped) this.skips.set(key, deadLetter);
    return replay;
  }

  /** Forgets the transaction, its skips too (it was committed, cut or dropped); returns its records. */
  clear(): InputRecord[] {
    const records = this.processed;
    this.processed = [];
    this.count = 0;
    this.skips.clear();
    return records;
  }
}

/** What a skip is keyed by: topic and offset, and the entry of a pack. */
export function recordKey(record: RecordSource): string {
  const entry = entryOf(record);
  return entry === undefined ? `${record.topic}:${record.offset}` : `${record.topic}:${record.offset}:${entry}`;
}
