/**
 * One committed-store batch for the store writes of many tasks: exactly-once v2 commits every
 * task of the instance in one Kafka transaction, and writing their stores as one LevelDB batch
 * makes the committed view across the instance's partitions the cut of that transaction — a
 * reader never sees one task's part of it without the others' (a query takes the views of all
 * its partitions in one step, and those share one LevelDB snapshot: level-committed-store.ts).
 *
 * Each task's write still waits its turn in its own queue (an earlier commit or restore of the
 * task), so members join the group when their turn comes. The owner registers members as it
 * hands out the writes, seals the group once all are handed out, and the batch is written once
 * every registered member has joined or withdrawn (a member whose earlier commit failed never
 * joins). A failed batch fails every member: none of them is in the committed store.
 */
import type { CommittedStore, CommittedWrite } from './committed-store.js';

export interface CommitGroupMember {
  /** This member's writes; resolves or rejects with the group's batch. */
  join(store: CommittedStore, writes: readonly CommittedWrite[]): Promise<void>;
  /** This member will not join (its turn failed); the group writes without it. */
  withdraw(): void;
}

interface Joined {
  readonly writes: readonly CommittedWrite[];
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

export class CommitGroup {
  private sealed = false;
  private outstanding = 0;
  private readonly joined = new Map<CommittedStore, Joined[]>();

  /** A member slot, taken synchronously when the member's write is handed out. */
  register(): CommitGroupMember {
    if (this.sealed) throw new TypeError('commit group is sealed');
    this.outstanding++;
    let done = false;
    const settle = (): void => {
      if (done) throw new TypeError('commit group member settled twice');
      done = true;
      this.outstanding--;
    };
    return {
      join: (store, writes) =>
        new Promise<void>((resolve, reject) => {
          settle();
          let members = this.joined.get(store);
          if (members === undefined) {
            members = [];
            this.joined.set(store, members);
          }
          members.push({ writes, resolve, reject });
          this.maybeWrite();
        }),
      withdraw: () => {
        settle();
        this.maybeWrite();
      },
    };
  }

  /** No more members: the batch is written once the registered ones have all joined or withdrawn. */
  seal(): void {
    this.sealed = true;
    this.maybeWrite();
  }

  private maybeWrite(): void {
    if (!this.sealed || this.outstanding > 0) return;
    // One batch per committed store (one per instance in practice: a single state directory).
    for (const [store, members] of this.joined) {
      store.commit(members.flatMap((member) => member.writes)).then(
        () => {
          for (const member of members) member.resolve();
        },
        (error: unknown) => {
          for (const member of members) member.reject(error);
        },
      );
    }
    this.joined.clear();
  }
}
