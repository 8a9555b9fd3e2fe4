/**
 * The StoreEngine both engines share: it owns the committed store, the process-wide record
 * cache and the uncommitted-bytes budget, and assembles each task's stores (cache → write
 * batch → committed keyspace) in one place, as Kafka Streams' KeyValueStoreBuilder stacks its
 * wrappers. Only the CommittedStore differs between the in-memory and the LevelDB engine.
 */
import { storeClosedError } from './store-errors.js';
import { RecordCache } from './record-cache.js';
import { StorePartition } from './store-partition.js';
import { LayeredTaskStores } from './task-stores.js';
import { UncommittedBudget } from './uncommitted-budget.js';
import type { CommittedStore } from './committed-store.js';
import type { ResolvedStoreOptions } from './store-options.js';
import type { StoreEngine, TaskStores } from './types.js';

type EngineState = 'open' | 'closing' | 'closed';

export class LayeredStoreEngine implements StoreEngine {
  private state: EngineState = 'open';
  private readonly budget: UncommittedBudget;
  private readonly cache: RecordCache;
  private readonly tasks = new Map<string, LayeredTaskStores>();
  /** "store\0partition" → owning task id: a store partition belongs to one open task. */
  private readonly owners = new Map<string, string>();

  constructor(
    private readonly committed: CommittedStore,
    readonly options: ResolvedStoreOptions,
  ) {
    this.budget = new UncommittedBudget(options.uncommittedMaxBytes);
    this.cache = new RecordCache(options.cacheMaxBytes, this.budget);
  }

  private checkOpen(): void {
    if (this.state !== 'open') throw storeClosedError('store engine');
  }

  async openTask(
    taskId: string,
    stores: ReadonlyArray<{ readonly name: string; readonly partition: number }>,
  ): Promise<TaskStores> {
    this.checkOpen();
    if (this.tasks.has(taskId)) throw new TypeError(`task ${taskId} is already open`);
    const names = new Set<string>();
    for (const { name, partition } of stores) {
      if (typeof name !== 'string' || name.length === 0) throw new TypeError('store name must be a non-empty string');
      if (!Number.isSafeInteger(partition) || partition < 0 || partition > 0xffffffff) {
        throw new TypeError(`partition of store ${name} must be an unsigned 32-bit integer`);
      }
      if (names.has(name)) throw new TypeError(`task ${taskId} lists store ${name} twice`);
      names.add(name);
      const owner = this.owners.get(`${name}\u0000${partition}`);
      if (owner !== undefined) throw new TypeError(`store ${name} partition ${partition} is already open in task ${owner}`);
    }
    const task = new LayeredTaskStores(taskId, this.committed, this.budget, (closed) => this.release(closed));
    // Reserve synchronously so that a concurrent openTask cannot claim the same partitions.
    this.tasks.set(taskId, task);
    for (const { name, partition } of stores) this.owners.set(`${name}\u0000${partition}`, taskId);
    try {
      for (const { name, partition } of stores) {
        const keyspace = await this.committed.keyspace(name, partition);
        const meta = await this.committed.readMeta(taskId, name);
        this.checkOpen();
        task.addPartition(
          new StorePartition({
            taskId,
            storeName: name,
            partition,
            keyspace,
            cache: this.cache,
            budget: this.budget,
            options: this.options,
            meta,
            emitFlush: (changes) => task.emitFlush(changes),
          }),
        );
      }
    } catch (error) {
      this.release(task);
      throw error;
    }
    return task;
  }

  private release(task: LayeredTaskStores): void {
    if (this.tasks.get(task.taskId) !== task) return;
    this.tasks.delete(task.taskId);
    for (const [key, owner] of this.owners) if (owner === task.taskId) this.owners.delete(key);
  }

  onCommitNeeded(listener: (uncommittedBytes: number) => void): () => void {
    return this.budget.onCommitNeeded(listener);
  }

  uncommittedBytes(): number {
    return this.budget.bytes;
  }

  /** Closes every task (dropping what is uncommitted), then the committed store. */
  async close(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'closing';
    try {
      await Promise.allSettled([...this.tasks.values()].map((task) => task.close()));
    } finally {
      await this.committed.close();
      this.state = 'closed';
    }
  }
}
