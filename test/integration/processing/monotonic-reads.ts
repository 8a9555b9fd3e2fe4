/**
 * Key reads of a wordcount store through one gateway, each carrying the positions the reads
 * before it saw as its `positionBound` (IQv2's monotonic-read recipe), counted as the failover
 * tests check them: reads, answers, partition answers from standbys, failures by reason, the
 * slowest read, and every count that went backwards.
 */
import { postGraphQL } from '../../support/graphql.js';

export type Position = Record<string, Record<string, number>>;

/** Fields every READ query given to MonotonicReads must select (more may come with them). */
export interface MonotonicRead {
  getMany: {
    // int64 counts may come as strings.
    entries: Array<{ key: string; value: string | number | null; found: boolean; partition: number; failure: { reason: string; message?: string } | null }>;
    partitions: Array<{ partition: number; position: Position | null; failure: { reason: string } | null; standby: boolean }>;
  };
}

export class MonotonicReads {
  reads = 0;
  answered = 0;
  fromStandby = 0;
  slowestReadMs = 0;
  readonly backwards: string[] = [];
  readonly failures = new Map<string, number>();
  /** Each kind of failure (reason, partition, message) with when it was first and last seen, and how often. */
  readonly failureSpans = new Map<string, { first: number; last: number; count: number }>();
  /** The partition each key was last read from. */
  readonly partitionOf = new Map<string, number>();
  private readonly last = new Map<string, number>();
  private bound: Position = {};

  /** `query` takes `$keys` and `$bound` (the position bound) and selects MonotonicRead's fields. */
  constructor(private readonly url: string, private readonly query: string, private readonly keys: readonly string[]) {}

  async readOnce(): Promise<void> {
    const started = Date.now();
    const result = await postGraphQL<MonotonicRead>(this.url, this.query, { keys: this.keys, bound: this.bound });
    this.slowestReadMs = Math.max(this.slowestReadMs, Date.now() - started);
    for (const p of result.getMany.partitions) {
      if (p.standby && p.failure === null) this.fromStandby += 1;
      if (p.position === null) continue;
      for (const [topic, offsets] of Object.entries(p.position)) {
        for (const [partition, offset] of Object.entries(offsets)) {
          if (offset > (this.bound[topic]?.[partition] ?? -1)) this.bound = { ...this.bound, [topic]: { ...this.bound[topic], [partition]: offset } };
        }
      }
    }
    for (const entry of result.getMany.entries) {
      this.reads += 1;
      this.partitionOf.set(entry.key, entry.partition);
      if (entry.failure !== null) {
        this.failures.set(entry.failure.reason, (this.failures.get(entry.failure.reason) ?? 0) + 1);
        const kind = `${entry.failure.reason} p${entry.partition}: ${entry.failure.message ?? ''}`;
        const span = this.failureSpans.get(kind);
        if (span === undefined) this.failureSpans.set(kind, { first: started, last: started, count: 1 });
        else Object.assign(span, { last: started, count: span.count + 1 });
        continue;
      }
      this.answered += 1;
      const value = entry.found ? Number(entry.value) : 0;
      const before = this.last.get(entry.key) ?? 0;
      if (value < before) this.backwards.push(`${entry.key}: ${before} → ${value}`);
      this.last.set(entry.key, Math.max(before, value));
    }
  }

  /** Reads again and again, 20 ms apart, for `ms`. */
  async readFor(ms: number): Promise<void> {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      await this.readOnce();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}
