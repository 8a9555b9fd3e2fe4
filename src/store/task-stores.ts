/**
 * The stores of one task, committed together (DESIGN.md §4): flush() moves dirty cache
 * entries to the write batches and the flush listeners; commit() writes every store's batch,
 * changelog offset and Position in ONE atomic batch of the committed store (KIP-1035: the
 * offsets and Position can never disagree with the data after a crash); abort() drops all of
 * it. Commits and restores of a task run one at a time, in call order.
 */
import { IqgateError } from '../errors.js';
import { storeClosedError, toStoreError } from './store-errors.js';
import type { CommittedStore } from './committed-store.js';
import type { Position } from './position.js';
import type { PreparedCommit, StorePartition } from './store-partition.js';
import type { Change, FlushedChange, FlushListener, KeyValueStorePartition, TaskStores } from './types.js';
import type { UncommittedBudget } from './uncommitted-budget.js';

type TaskState = 'open' | 'closing' | 'closed';

export class LayeredTaskStores implements TaskStores {
  private state: TaskState = 'open';
  private readonly partitions = new Map<string, StorePartition>();
  private readonly flushListeners = new Set<FlushListener>();
  /** The tail of the chain of commits and restores. */
  private pending: Promise<void> = Promise.resolve();

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

  storeNames(): readonly string[] {
    return [...this.partitions.keys()];
  }

  flush(): void {
    this.checkOpen();
    for (const partition of this.partitions.values()) partition.flushCache();
  }

  commit(changelogOffsets: Readonly<Record<string, number>>): Promise<void> {
    this.checkOpen();
    for (const [name, offset] of Object.entries(changelogOffsets)) {
      this.partitionOf(name);
      if (!Number.isSafeInteger(offset) || offset < 0) throw new TypeError(`changelog offset of ${name} must be a non-negative integer`);
    }
    return this.enqueue(() => {
      this.checkOpen();
      // Kafka Streams flushes the cache on every commit; the flush is synchronous, so what
      // the runtime sent to the changelog and what this commit writes are the same entries.
      this.flush();
      return [...this.partitions.values()].map((partition) => partition.prepareCommit(changelogOffsets[partition.storeName]));
    });
  }

  restore(storeName: string, changes: readonly Change[], nextChangelogOffset: number, position: Position): Promise<void> {
    this.checkOpen();
    const partition = this.partitionOf(storeName);
    if (!Number.isSafeInteger(nextChangelogOffset) || nextChangelogOffset < 0) {
      throw new TypeError('nextChangelogOffset must be a non-negative integer');
    }
    return this.enqueue(() => {
      this.checkOpen();
      return [partition.prepareRestore(changes, nextChangelogOffset, position)];
    });
  }

  /** Runs prepare → one atomic committed-store write → settle, after every earlier commit. */
  private enqueue(prepare: () => PreparedCommit[]): Promise<void> {
    const run = async (): Promise<void> => {
      const prepared = prepare();
      try {
        await this.committed.commit(
          this.taskId,
          prepared.map((p) => p.write),
        );
      } catch (error) {
        for (const p of prepared) p.fail();
        throw toStoreError(error, `commit of task ${this.taskId}`);
      } finally {
        this.budget.rearm();
      }
      for (const p of prepared) p.complete();
    };
    const result = this.pending.then(run);
    this.pending = result.catch(() => {});
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

  /** Drops everything uncommitted (like abort) after any commit in flight has settled. */
  async close(): Promise<void> {
    if (this.state !== 'open') return this.pending;
    this.state = 'closing';
    await this.pending;
    for (const partition of this.partitions.values()) partition.close();
    this.flushListeners.clear();
    this.budget.rearm();
    this.state = 'closed';
    this.onClosed(this);
  }
}
