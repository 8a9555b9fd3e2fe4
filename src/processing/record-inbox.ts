/**
 * A task's fetched, not yet processed input records, in order: an array with a moving head
 * (shifting per record would copy the array each time), compacted once the consumed prefix
 * dominates. It drops records the task has seen already (see add); why they come again is the
 * task's business (StreamTask.enqueue).
 */
import type { InputRecord } from './ports.js';

export class RecordInbox {
  private records: InputRecord[] = [];
  private head = 0;

  /** Appends the records at or past `expected(topic)` that are past what is queued for their topic. */
  add(records: readonly InputRecord[], expected: (topic: string) => number | undefined): void {
    for (const record of records) {
      const next = expected(record.topic);
      const queuedLast = this.lastQueuedOffset(record.topic);
      if (next !== undefined && record.offset < next) continue;
      if (queuedLast !== undefined && record.offset <= queuedLast) continue;
      this.records.push(record);
    }
  }

  private lastQueuedOffset(topic: string): number | undefined {
    for (let i = this.records.length - 1; i >= this.head; i -= 1) {
      const record = this.records[i];
      if (record !== undefined && record.topic === topic) return record.offset;
    }
    return undefined;
  }

  size(): number {
    return this.records.length - this.head;
  }

  /** Takes the next record; only call it when size() > 0. */
  take(): InputRecord {
    const record = this.records[this.head] as InputRecord;
    this.head += 1;
    return record;
  }

  /** Drops the consumed prefix once it is large and more than half of the array. */
  compact(): void {
    if (this.head > 1024 && this.head * 2 > this.records.length) {
      this.records = this.records.slice(this.head);
      this.head = 0;
    }
  }

  /** Puts `records` (in order, all before what is queued) back in front of the queue. */
  requeue(records: readonly InputRecord[]): void {
    if (records.length === 0) return;
    this.records = [...records, ...this.records.slice(this.head)];
    this.head = 0;
  }

  clear(): void {
    this.records = [];
    this.head = 0;
  }
}
