/**
 * The stores of one task, committed together (docs/architecture.md §4): flush() moves dirty cache
 * entries to the write batches and the flush listeners; commit() writes every store's batch,
 * changelog offset and Position in ONE atomic batch of the committed store (KIP-1035: the
 * offsets and Position can never disagree with the data after a crash); abort() drops all of
 * it. Commits and restores of a task run one at a time, in call order.
 */
import { IqgateError } from '../errors.js';
import { storeClosedError, toStoreError } from './store-errors.js';
import type { CommitGroupMember } from './commit-group.js';
import type { CommittedStore } from './committed-store.js';
import type { Position } from './position.js';
import type { PreparedCommit, StorePartition } from './store-partition.js';
import type { CapturedCommit, Change, FlushedChange, FlushListener, KeyValueStorePartition, ProcessingStorePartition, TaskStores } from './types.js';
import type { UncommittedBudget } from './uncommitted-budget.js';

type TaskState = 'open' | 'closing' | 'closed';

export class LayeredTaskStores implements TaskStores {
  private state: TaskState = 'open';
  private readonly partitions = new Map<string, StorePartition>();
  private readonly flushListeners = new Set<FlushListener>();
  /** The last commit or restore queued; each one waits for the one before (and fails with it). */
  private pending: Promise<void> = Promise.resolve();
  /** Commits and restores queued or running; 0 means `pending` has settled. */
  private queued = 0;

  constructor(
    readonly taskId: string,
    private readonly committed: CommittedStore,
    private readonly budget: UncommittedBudget,
    private readonly onClosed: (task: LayeredTaskStores) => void,
  ) {}

  /** Called by the engine while opening the task. */
  addPartition(partition: StorePartition): void {
    this.partitions.set(partition.storeName, partition);
  }

  partitionList(): Iterable<StorePartition> {
    return this.partitions.values();
  }

  emitFlush(changes: readonly FlushedChange[]): void {
    for (const listener of this.flushListeners) listener(changes);
  }

  private checkOpen(): void {
    if (this.state !== 'open') throw storeClosedError(`task ${this.taskId}`);
  }

  private partitionOf(name: string): StorePartition {
    const partition = this.partitions.get(name);
    if (partition === undefined) {
      throw new IqgateError('STORE_NOT_FOUND', `task ${this.taskId} has no store "${name}"`, {
        details: { taskId: this.taskId, store: name, stores: [...this.partitions.keys()] },
      });
    }
    return partition;
  }

  store(name: string): KeyValueStorePartition {
    this.checkOpen();
    return this.partitionOf(name);
  }

  processingStore(name: string): ProcessingStorePartition {
    this.checkOpen();
    return this.partitionOf(name);
  }

  storeNames(): readonly string[] {
    return [...this.partitions.keys()];
  }

  flush(): void {
    this.checkOpen();
    for (const partition of this.partitions.values()) partition.flushCache();
  }

  commit(changelogOffsets: Readonly<Record<string, number>>): Promise<void> {
    try {
      this.checkOpen();
      for (const [name, offset] of Object.entries(changelogOffsets)) {
        this.partitionOf(name);
        if (!Number.isSafeInteger(offset) || offset < 0) throw new TypeError(`changelog offset of ${name} must be a non-negative integer`);
      }
    } catch (error) {
      return Promise.reject(error as Error);
    }
    // Captured now, not when the commit's turn comes: the commit holds exactly what was
    // written before the call (what the runtime sent to the changelog in the transaction it
    // just committed), never writes made while an earlier commit is still in flight. Kafka
    // Streams flushes the cache on every commit.
    this.flush();
    return this.enqueue([...this.partitions.values()].map((partition) => partition.prepareCommit(changelogOffsets[partition.storeName])));
  }

  capture(): CapturedCommit {
    this.checkOpen();
    this.flush();
    const prepared = [...this.partitions.values()].map((partition) => ({ partition, commit: partition.prepareCommit(undefined) }));
    let settled = false;
    return {
      write: (changelogOffsets, group) => {
        if (settled) return Promise.reject(new TypeError(`task ${this.taskId}: capture settled twice`));
        settled = true;
        for (const { partition, commit } of prepared) {
          const offset = changelogOffsets[partition.storeName];
          if (offset !== undefined) {
            if (!Number.isSafeInteger(offset) || offset < 0) return Promise.reject(new TypeError(`changelog offset of ${partition.storeName} must be a non-negative integer`));
            commit.setChangelogOffset(offset);
          }
        }
        if (this.state !== 'open') {
          for (const { commit } of prepared) commit.fail();
          return Promise.reject(storeClosedError(`task ${this.taskId}`));
        }
        return this.enqueue(prepared.map((p) => p.commit), group?.register());
      },
      abandon: () => {
        if (settled) return;
        settled = true;
        for (const { commit } of prepared) commit.fail();
        this.budget.rearm();
      },
    };
  }

  restore(storeName: string, changes: readonly Change[], nextChangelogOffset: number, position: Position): Promise<void> {
    let partition: StorePartition;
    try {
      this.checkOpen();
      partition = this.partitionOf(storeName);
      if (!Number.isSafeInteger(nextChangelogOffset) || nextChangelogOffset < 0) {
        throw new TypeError('nextChangelogOffset must be a non-negative integer');
      }
    } catch (error) {
      return Promise.reject(error as Error);
    }
    return this.enqueue([partition.prepareRestore(changes, nextChangelogOffset, position)]);
  }

  /**
   * Writes the prepared commits as one atomic committed-store batch once every earlier commit
   * settled — or, as a member of a commit group, in the group's one batch. A failure drops
   * everything uncommitted (commits queued behind it fail too): the committed store still holds
   * the last completed commit, and the runtime restores from the changelog, as Kafka Streams
   * does for a corrupted task.
   */
  private enqueue(prepared: PreparedCommit[], member?: CommitGroupMember): Promise<void> {
    // Only an operation still queued or running can fail this one: once a failure has settled
    // (and dropped what was uncommitted), the task starts afresh — the runtime restores and
    // commits again through this same TaskStores, which must not keep replaying the old error.
    const previous = this.queued === 0 ? undefined : this.pending;
    this.queued++;
    const run = async (): Promise<void> => {
      let joined = false;
      try {
        await previous;
        const writes = prepared.map((p) => p.write());
        joined = true;
        await (member === undefined ? this.committed.commit(writes) : member.join(this.committed, writes));
      } catch (error) {
        if (!joined) member?.withdraw();
        for (const p of prepared) p.fail();
        for (const partition of this.partitions.values()) partition.dropUncommitted();
        throw toStoreError(error, `commit of task ${this.taskId}`);
      } finally {
        this.queued--;
        this.budget.rearm();
      }
      for (const p of prepared) p.complete();
    };
    const result = run();
    this.pending = result;
    return result;
  }

  abort(): void {
    this.checkOpen();
    for (const partition of this.partitions.values()) partition.dropUncommitted();
    this.budget.rearm();
  }

  changelogOffsets(): Readonly<Record<string, number>> {
    const offsets: Record<string, number> = {};
    for (const partition of this.partitions.values()) {
      if (partition.changelogOffset !== undefined) offsets[partition.storeName] = partition.changelogOffset;
    }
    return offsets;
  }

  onFlush(listener: FlushListener): () => void {
    const wrapped: FlushListener = (changes) => listener(changes);
    this.flushListeners.add(wrapped);
    return () => this.flushListeners.delete(wrapped);
  }

  /** Bytes this task holds uncommitted: dirty cache entries, write batches and any batch being committed. */
  uncommittedBytes(): number {
    let bytes = 0;
    for (const partition of this.partitions.values()) bytes += partition.uncommittedBytes();
    return bytes;
  }

  /**
   * Drops everything uncommitted (like abort) after any commit in flight has settled, so that
   * subscribers get that commit's events before they hear `reason`.
   */
  async close(reason?: IqgateError): Promise<void> {
    if (this.state !== 'open') return this.pending.catch(() => {});
    this.state = 'closing';
    await this.pending.catch(() => {});
    for (const partition of this.partitions.values()) partition.close(reason);
    this.flushListeners.clear();
    this.budget.rearm();
    this.state = 'closed';
    this.onClosed(this);
  }
}
