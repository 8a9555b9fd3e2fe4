/**
 * The in-memory committed store: sorted maps in an InMemoryDatabase that outlives the engine,
 * so tests can "crash" (close without committing) and reopen, as with LevelDB. Snapshots are
 * O(1) BTree clones. Like a LevelDB directory, a database is used by one engine at a time.
 */
import { IqgateError } from '../errors.js';
import { Position, type PositionJSON } from './position.js';
import { isAboveUpper, isBelowLower, type RangeQuery } from './key-bounds.js';
import { createSortedMap, fromInternalKey, toInternalKey, type SortedMap } from './sorted-map.js';
import { storeClosedError } from './store-errors.js';
import type {
  CommittedCursor,
  CommittedKeyspace,
  CommittedSnapshot,
  CommittedStore,
  CommittedWrite,
  StoreMeta,
} from './committed-store.js';
import type { KeyValue } from './types.js';
import { Buffer } from 'node:buffer';

interface StoredMeta {
  readonly changelogOffset: number | undefined;
  readonly position: PositionJSON;
}

/** The data that survives an in-memory engine's close, standing in for a state directory. */
export class InMemoryDatabase {
  readonly keyspaces = new Map<string, SortedMap<Buffer>>();
  readonly meta = new Map<string, StoredMeta>();
  inUse = false;
}

export function createInMemoryDatabase(): InMemoryDatabase {
  return new InMemoryDatabase();
}

const CURSOR_CHUNK = 256;

function metaKey(taskId: string, storeName: string): string {
  return `${taskId}\u0000${storeName}`;
}

function toStoreMeta(stored: StoredMeta | undefined): StoreMeta | undefined {
  return stored === undefined
    ? undefined
    : { changelogOffset: stored.changelogOffset, position: Position.fromJSON(stored.position) };
}

export class MemoryCommittedStore implements CommittedStore {
  closed = false;

  constructor(readonly database: InMemoryDatabase) {
    if (database.inUse) {
      throw new IqgateError('STORE_EXCEPTION', 'the in-memory database is already in use by an open engine');
    }
    database.inUse = true;
  }

  checkOpen(): void {
    if (this.closed) throw storeClosedError('store engine');
  }

  async keyspace(storeName: string, partition: number): Promise<CommittedKeyspace> {
    this.checkOpen();
    const name = `${storeName}\u0000${partition}`;
    if (!this.database.keyspaces.has(name)) this.database.keyspaces.set(name, createSortedMap<Buffer>());
    return new MemoryKeyspace(this, name, storeName, partition);
  }

  async readMeta(taskId: string, storeName: string): Promise<StoreMeta | undefined> {
    this.checkOpen();
    return toStoreMeta(this.database.meta.get(metaKey(taskId, storeName)));
  }

  async commit(writes: readonly CommittedWrite[]): Promise<void> {
    this.checkOpen();
    // Applied in one synchronous step: atomic, as LevelDB's batch.
    for (const write of writes) {
      const tree = (write.keyspace as MemoryKeyspace).tree();
      write.entries.forEachEntry((key, value) => {
        if (value === null) tree.delete(key);
        else tree.set(key, value);
      });
      this.database.meta.set(metaKey(write.taskId, write.keyspace.storeName), {
        changelogOffset: write.meta.changelogOffset,
        position: write.meta.position.toJSON(),
      });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.database.inUse = false;
  }
}

class MemoryKeyspace implements CommittedKeyspace {
  constructor(
    private readonly store: MemoryCommittedStore,
    private readonly name: string,
    readonly storeName: string,
    readonly partition: number,
  ) {}

  tree(): SortedMap<Buffer> {
    return this.store.database.keyspaces.get(this.name)!;
  }

  getSync(key: Buffer): Buffer | undefined {
    this.store.checkOpen();
    return this.tree().get(toInternalKey(key));
  }

  snapshot(taskId: string): CommittedSnapshot {
    this.store.checkOpen();
    const meta = this.store.database.meta.get(metaKey(taskId, this.storeName));
    const position = meta === undefined ? Position.empty() : Position.fromJSON(meta.position);
    return new MemorySnapshot(this.store, this.tree().clone(), position);
  }
}

class MemorySnapshot implements CommittedSnapshot {
  private closed = false;

  constructor(
    private readonly store: MemoryCommittedStore,
    private readonly tree: SortedMap<Buffer>,
    readonly position: Position,
  ) {}

  private checkOpen(): void {
    this.store.checkOpen();
    if (this.closed) throw storeClosedError('read view');
  }

  get(key: Buffer): Buffer | undefined {
    this.checkOpen();
    return this.tree.get(toInternalKey(key));
  }

  async getMany(keys: readonly Buffer[]): Promise<Array<Buffer | undefined>> {
    this.checkOpen();
    return keys.map((key) => this.tree.get(toInternalKey(key)));
  }

  cursor(query: RangeQuery): CommittedCursor {
    this.checkOpen();
    const { bounds, reverse } = query;
    const iterator = reverse
      ? bounds.lt !== undefined
        ? this.tree.entriesReversed(bounds.lt, undefined, true)
        : this.tree.entriesReversed(bounds.lte)
      : this.tree.entries(bounds.gte);
    let remaining = query.limit;
    let done = false;
    return {
      next: async () => {
        this.checkOpen();
        if (done) return undefined;
        const chunk: KeyValue[] = [];
        while (chunk.length < CURSOR_CHUNK && remaining > 0) {
          const step = iterator.next();
          if (step.done === true) break;
          const [key, value] = step.value;
          if (reverse ? isBelowLower(key, bounds) : isAboveUpper(key, bounds)) break;
          chunk.push({ key: fromInternalKey(key), value });
          remaining--;
        }
        if (chunk.length < CURSOR_CHUNK || remaining === 0) done = true;
        return chunk.length === 0 ? undefined : chunk;
      },
      close: async () => {
        done = true;
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
