/**
 * Ends the open transaction of a member that left the group without ending it (a crash, a link
 * cut), so that its partitions' new owners need not wait for the transaction to time out.
 *
 * Exactly-once v2 (librdkafka) commits with one transactional id per instance. When an instance
 * dies mid-transaction, nobody reuses its id, so its transaction stays open until the broker
 * aborts it: `transaction.timeout.ms` after it began, at the coordinator's next check
 * (`transaction.abort.timed.out.transaction.cleanup.interval.ms`, 10 s by default) — 4–20 s
 * on the defaults. Meanwhile the new owners' reads of the committed offsets (require_stable) and
 * of the changelogs' stable ends wait for it, and their tasks stay RESTORING. Kafka Streams waits
 * the same way (KIP-447).
 *
 * Each member advertises its transactional id in its client id, beside its URL
 * (partition-owner-tracker.ts: withTransactionalId), and every member reads the group's description after each
 * rebalance. A transactional id that was in the group's previous description and is not in the
 * current one belongs to a member that left: it is fenced once (InitProducerId, which aborts the
 * transaction it has open and bumps the epoch), by every member that saw it go. That is safe
 * whatever the departed member is doing: out of the group, its offsets can no longer join a
 * transaction (TxnOffsetCommit fails with its old generation), so its transaction could only
 * abort; fenced, it learns so at its next transactional call and re-joins as any fenced member
 * does. A member that restarts with the same id (static membership) never leaves the group, so
 * it is never fenced by this; one that leaves on purpose has ended its transaction first.
 */
import type { TaskLogger } from '../processing/stream-task.js';
import { transactionalIdOfClientId } from './partition-owner-tracker.js';

export interface DepartedMemberFencerOptions {
  /** This instance's own transactional id (never fenced from here). */
  readonly own: string;
  /** Fences `transactionalId` (InitProducerId with it, then closes); rejects when that failed. */
  readonly fence: (transactionalId: string) => Promise<void>;
  readonly logger?: TaskLogger;
}

export class DepartedMemberFencer {
  /** Transactional ids of the group's members as of the last description; null before the first. */
  private known: Set<string> | null = null;
  private readonly inFlight = new Set<string>();
  private stopped = false;
  /** Fences started, for tests and shutdown. */
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly options: DepartedMemberFencerOptions) {}

  /** The client ids of the group's members, from a Stable description. */
  observe(clientIds: readonly string[]): void {
    if (this.stopped) return;
    const now = new Set<string>();
    for (const clientId of clientIds) {
      const id = transactionalIdOfClientId(clientId);
      if (id !== undefined) now.add(id);
    }
    const before = this.known;
    this.known = now;
    if (before === null) return;
    for (const id of before) {
      if (now.has(id) || id === this.options.own || this.inFlight.has(id)) continue;
      this.start(id);
    }
  }

  /** Resolves once every fence started so far has settled. */
  async settled(): Promise<void> {
    await Promise.all([...this.running]);
  }

  stop(): void {
    this.stopped = true;
  }

  private start(transactionalId: string): void {
    this.inFlight.add(transactionalId);
    const started = Date.now();
    const run = this.options.fence(transactionalId).then(
      () => this.options.logger?.info({ transactionalId, ms: Date.now() - started }, 'fenced the transactional id of a member that left the group: its open transaction is aborted'),
      (error: unknown) => this.options.logger?.warn({ transactionalId, err: error }, 'fencing the transactional id of a member that left the group failed: its partitions wait for its transaction to time out'),
    ).finally(() => {
      this.inFlight.delete(transactionalId);
      this.running.delete(run);
    });
    this.running.add(run);
  }
}
