/**
 * Process-wide accounting of uncommitted bytes (KIP-892's statestore.uncommitted.max.bytes):
 * dirty record-cache entries plus write batches, including batches whose commit is in
 * flight. Counting dirty cache bytes too means moving an entry from the cache to the write
 * batch never makes the total jump, so the total grows by at most one record per write and
 * the runtime, told "commit needed" right after the write that crossed the limit, keeps the
 * overshoot within one record.
 */
export type CommitNeededListener = (uncommittedBytes: number) => void;

export class UncommittedBudget {
  private total = 0;
  private signalled = false;
  private readonly listeners = new Set<CommitNeededListener>();

  constructor(readonly limit: number) {}

  add(delta: number): void {
    this.total += delta;
  }

  get bytes(): number {
    return this.total;
  }

  /** Called after every write: fires "commit needed" once per crossing of the limit. */
  check(): void {
    if (this.total > this.limit && !this.signalled) {
      this.signalled = true;
      for (const listener of this.listeners) listener(this.total);
    }
  }

  /** After a commit, abort or close: the next write above the limit signals again. */
  rearm(): void {
    this.signalled = false;
  }

  onCommitNeeded(listener: CommitNeededListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
