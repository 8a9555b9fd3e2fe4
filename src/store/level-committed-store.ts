/**
 * The committed store on LevelDB (`level` 10 / classic-level 3): one database per state
 * directory, a keyspace per store partition (level-key-layout.ts), and per task the changelog
 * offsets and committed Position in the SAME chained batch as the data (KIP-1035), with
 * sync:false — a killed process loses no acknowledged batch and never shows half of one
 * (docs/leveldb-notes.md §1).
 *
 * Hot paths follow docs/leveldb-notes.md §3: getSync with pre-normalised options (an options object
 * whose encodings differ from the defaults is cloned on every call), chained batches (each
 * put goes native at once), nextv with highWaterMarkBytes sized for the chunk.
 */
import { Level } from 'level';
import { IqgateError, isIqgateError } from '../errors.js';
import { Position } from './position.js';
import type { RangeQuery } from './key-bounds.js';
import {
  DATA_PREFIX_BYTES,
  FORMAT_KEY,
  FORMAT_VALUE,
  MAX_STORE_ID,
  STORE_ID_KEY_PREFIX,
  dataKey,
  dataPrefix,
  prefixEnd,
  storeIdKey,
  taskMetaKey,
} from './level-key-layout.js';
import { checkStateDir, stateDirOpenError } from './state-dir.js';
import { corruptMarker, markCorrupt, wipeLevelFiles } from './corrupt-state.js';
import { isCorruption, storeClosedError, toStoreError } from './store-errors.js';
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

type Db = Level<Buffer, Buffer>;
type LevelSnapshot = ReturnType<Db['snapshot']>;

const ENCODINGS = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;
const CURSOR_CHUNK = 1000;
/** Internal keys up to this length are copied into the batch scratch by a JS loop (see commit). */
const SHORT_KEY_CHARS = 64;
/** ≥ chunk × typical entry size, so one nextv() call fills a chunk (docs/leveldb-notes.md §3). */
const HIGH_WATER_MARK_BYTES = 128 * 1024;

interface StoredMeta {
  changelogOffset?: number;
  position: Record<string, Record<string, number>>;
}

function encodeMeta(meta: StoreMeta): Buffer {
  const stored: StoredMeta = { position: meta.position.toJSON() };
  if (meta.changelogOffset !== undefined) stored.changelogOffset = meta.changelogOffset;
  return Buffer.from(JSON.stringify(stored), 'utf8');
}

function decodeMeta(bytes: Buffer | undefined): StoreMeta | undefined {
  if (bytes === undefined) return undefined;
  try {
    const stored = JSON.parse(bytes.toString('utf8')) as StoredMeta;
    return { changelogOffset: stored.changelogOffset, position: Position.fromJSON(stored.position) };
  } catch (error) {
    throw new IqgateError('DECODE_FAILED', 'stored store metadata is corrupt', { cause: error });
  }
}

/** Buffer#latin1Write: what write(s, offset, 'latin1') ends in; public but missing from @types/node. */
interface Latin1Writer {
  latin1Write(text: string, offset: number): number;
}

/**
 * A LevelDB snapshot shared by the views taken in one synchronous step: closed once that step
 * is over and the last of its views closed.
 */
class SharedSnapshot {
  private users = 0;
  private stepOver = false;

  constructor(readonly snapshot: LevelSnapshot) {}

  use(): this {
    this.users++;
    return this;
  }

  endStep(): void {
    this.stepOver = true;
    if (this.users === 0) void this.snapshot.close().catch(() => {});
  }

  release(): Promise<void> {
    this.users--;
    // After the database closed, the snapshot is already released.
    return this.stepOver && this.users === 0 ? this.snapshot.close().catch(() => {}) : Promise.resolve();
  }
}

export class LevelCommittedStore implements CommittedStore {
  private readonly storeIds = new Map<string, number>();
  private nextStoreId = 1;
  /** Scratch buffer for keys put into a chained batch (see commit). */
  private batchScratch = Buffer.allocUnsafe(256);
  /** The snapshot of the current synchronous step (stepSnapshot()). */
  private stepShared: SharedSnapshot | undefined = undefined;

  private constructor(
    readonly db: Db,
    private readonly directory: string,
  ) {}

  /**
   * Opens `directory`. Damaged files (found now, or marked by an earlier run that found them
   * while reading: markCorrupt) are wiped, as Kafka Streams wipes a corrupted task's state,
   * and the stores open empty: each task restores from its changelog. `onWipe` is told why.
   */
  static async open(directory: string, onWipe?: (reason: string) => void): Promise<LevelCommittedStore> {
    checkStateDir(directory); // locked or not writable: a coded error before LevelDB touches anything
    const marked = corruptMarker(directory);
    if (marked !== undefined) {
      onWipe?.(`an earlier run found it damaged (${marked})`);
      wipeLevelFiles(directory);
    }
    try {
      return await LevelCommittedStore.openOnce(directory);
    } catch (error) {
      if (!isIqgateError(error, 'STATE_CORRUPTED')) throw error;
      onWipe?.(error.message);
      wipeLevelFiles(directory);
      return LevelCommittedStore.openOnce(directory);
    }
  }

  private static async openOnce(directory: string): Promise<LevelCommittedStore> {
    const db: Db = new Level<Buffer, Buffer>(directory, ENCODINGS);
    try {
      await db.open();
    } catch (error) {
      if (isCorruption(error)) throw toStoreError(error, `opening ${directory}`);
      throw stateDirOpenError(directory, error);
    }
    const store = new LevelCommittedStore(db, directory);
    try {
      const format = await db.get(FORMAT_KEY);
      if (format === undefined) await db.put(FORMAT_KEY, FORMAT_VALUE);
      else if (!format.equals(FORMAT_VALUE)) {
        throw new IqgateError('STORE_EXCEPTION', `unknown state directory format "${format.toString()}"`, { details: { directory } });
      }
      for await (const [key, value] of db.iterator({ gte: STORE_ID_KEY_PREFIX, lt: prefixEnd(STORE_ID_KEY_PREFIX) })) {
        const id = value.readUInt16BE(0);
        store.storeIds.set(key.subarray(STORE_ID_KEY_PREFIX.length).toString('utf8'), id);
        store.nextStoreId = Math.max(store.nextStoreId, id + 1);
      }
    } catch (error) {
      await db.close();
      throw toStoreError(error, `opening ${directory}`);
    }
    return store;
  }

  checkOpen(): void {
    if (this.db.status !== 'open') throw storeClosedError('store engine');
  }

  /** The coded error for a failed call; damaged files also mark the directory for the next start. */
  failure(error: unknown, what: string): IqgateError {
    const coded = toStoreError(error, what);
    if (coded.code === 'STATE_CORRUPTED') markCorrupt(this.directory, coded.message);
    return coded;
  }

  async keyspace(storeName: string, partition: number): Promise<CommittedKeyspace> {
    this.checkOpen();
    if (storeName.includes('\u0000')) throw new TypeError('store names may not contain NUL');
    let id = this.storeIds.get(storeName);
    if (id === undefined) {
      if (this.nextStoreId > MAX_STORE_ID) throw new IqgateError('STORE_EXCEPTION', `more than ${MAX_STORE_ID} stores`);
      id = this.nextStoreId++;
      this.storeIds.set(storeName, id);
      const value = Buffer.alloc(2);
      value.writeUInt16BE(id, 0);
      try {
        await this.db.put(storeIdKey(storeName), value);
      } catch (error) {
        throw this.failure(error, `registering store ${storeName}`);
      }
    }
    return new LevelKeyspace(this, storeName, partition, dataPrefix(id, partition));
  }

  async readMeta(taskId: string, storeName: string): Promise<StoreMeta | undefined> {
    this.checkOpen();
    let bytes: Buffer | undefined;
    try {
      bytes = await this.db.get(taskMetaKey(taskId, storeName));
    } catch (error) {
      throw this.failure(error, `reading metadata of task ${taskId}`);
    }
    return decodeMeta(bytes);
  }

  async commit(writes: readonly CommittedWrite[]): Promise<void> {
    this.checkOpen();
    const batch = this.db.batch();
    try {
      for (const write of writes) {
        const keyspace = write.keyspace as LevelKeyspace;
        // classic-level's chained batch copies each key into the native WriteBatch inside
        // put()/del() (docs/leveldb-notes.md §1), and abstract-level keeps no reference to it unless
        // 'write' listeners or prewrite hooks exist, which this database never has: so one
        // scratch buffer serves every key instead of an allocation per entry.
        // A view of the scratch is reused while keys keep the same length (the common case).
        const { prefix } = keyspace;
        let scratch = this.batchScratch;
        prefix.copy(scratch, 0);
        let fullKey = scratch.subarray(0, 0);
        write.entries.forEachEntry((key, value) => {
          const length = DATA_PREFIX_BYTES + key.length;
          if (scratch.length < length) {
            scratch = this.batchScratch = Buffer.allocUnsafe(Math.max(length, scratch.length * 2));
            prefix.copy(scratch, 0);
            fullKey = scratch.subarray(0, length);
          }
          if (key.length <= SHORT_KEY_CHARS) {
            // A JS loop beats the native latin1Write call for short keys.
            for (let i = 0; i < key.length; i++) scratch[DATA_PREFIX_BYTES + i] = key.charCodeAt(i);
          } else {
            (scratch as unknown as Latin1Writer).latin1Write(key, DATA_PREFIX_BYTES);
          }
          if (fullKey.length !== length) fullKey = scratch.subarray(0, length);
          if (value === null) batch.del(fullKey);
          else batch.put(fullKey, value);
        });
        batch.put(keyspace.metaKey(write.taskId), encodeMeta(write.meta));
      }
      await batch.write();
    } catch (error) {
      // Idempotent; releases the native batch if write() was never reached.
      await batch.close().catch(() => {});
      throw this.failure(error, `commit of ${describeTasks(writes)}`);
    }
  }

  /**
   * The LevelDB snapshot of this synchronous step: every view taken before the step ends (the
   * next microtask) reads the same instant. A query takes all its partitions' views in one step
   * (query-engine.ts, openAll), and an instance commit writes all its tasks in one batch
   * (commit-group.ts), so a query never sees part of an instance commit. One native snapshot
   * for a query's partitions instead of one each, too.
   */
  stepSnapshot(): SharedSnapshot {
    let shared = this.stepShared;
    if (shared === undefined) {
      const created = new SharedSnapshot(this.db.snapshot());
      this.stepShared = shared = created;
      queueMicrotask(() => {
        if (this.stepShared === created) this.stepShared = undefined;
        created.endStep();
      });
    }
    return shared.use();
  }

  async close(): Promise<void> {
    // Closing the database also closes every snapshot and iterator still open.
    await this.db.close();
  }
}

class LevelKeyspace implements CommittedKeyspace {
  private readonly metaKeys = new Map<string, Buffer>();
  readonly end: Buffer;
  /** Scratch for synchronous lookups, prefix pre-written; getSync copies the key before returning. */
  private scratch = Buffer.allocUnsafe(256);
  /** A view of the scratch of the last key length used, reused while lengths repeat. */
  private scratchView: Buffer;

  constructor(
    readonly store: LevelCommittedStore,
    readonly storeName: string,
    readonly partition: number,
    readonly prefix: Buffer,
  ) {
    this.end = prefixEnd(prefix);
    prefix.copy(this.scratch, 0);
    this.scratchView = this.scratch.subarray(0, DATA_PREFIX_BYTES);
  }

  /** The prefixed key in the scratch buffer, valid until the next call: only for synchronous reads. */
  scratchKey(key: Buffer): Buffer {
    const length = DATA_PREFIX_BYTES + key.length;
    if (this.scratch.length < length) {
      this.scratch = Buffer.allocUnsafe(Math.max(length, this.scratch.length * 2));
      this.prefix.copy(this.scratch, 0);
      this.scratchView = this.scratch.subarray(0, length);
    }
    this.scratch.set(key, DATA_PREFIX_BYTES);
    if (this.scratchView.length !== length) this.scratchView = this.scratch.subarray(0, length);
    return this.scratchView;
  }

  metaKey(taskId: string): Buffer {
    let key = this.metaKeys.get(taskId);
    if (key === undefined) {
      key = taskMetaKey(taskId, this.storeName);
      this.metaKeys.set(taskId, key);
    }
    return key;
  }

  getSync(key: Buffer): Buffer | undefined {
    try {
      // No options: abstract-level's dedicated fast path; the database defaults are buffers.
      return this.store.db.getSync(this.scratchKey(key));
    } catch (error) {
      throw this.store.failure(error, `store ${this.storeName}`);
    }
  }

  snapshot(taskId: string): CommittedSnapshot {
    let shared: SharedSnapshot;
    try {
      shared = this.store.stepSnapshot();
    } catch (error) {
      throw this.store.failure(error, `store ${this.storeName}`);
    }
    try {
      const options = { snapshot: shared.snapshot, ...ENCODINGS };
      // The Position stored in the same batch as the data this snapshot sees (KIP-1035).
      const meta = decodeMeta(this.store.db.getSync(this.metaKey(taskId), options));
      return new LevelSnapshotView(this, shared, options, meta?.position ?? Position.empty());
    } catch (error) {
      void shared.release();
      throw this.store.failure(error, `store ${this.storeName}`);
    }
  }
}

class LevelSnapshotView implements CommittedSnapshot {
  private closed = false;

  constructor(
    private readonly keyspace: LevelKeyspace,
    private readonly shared: SharedSnapshot,
    private readonly options: { readonly snapshot: LevelSnapshot; readonly keyEncoding: 'buffer'; readonly valueEncoding: 'buffer' },
    readonly position: Position,
  ) {}

  private checkOpen(): void {
    if (this.closed) throw storeClosedError('read view');
  }

  get(key: Buffer): Buffer | undefined {
    this.checkOpen();
    try {
      return this.keyspace.store.db.getSync(this.keyspace.scratchKey(key), this.options);
    } catch (error) {
      throw this.keyspace.store.failure(error, `store ${this.keyspace.storeName}`);
    }
  }

  async getMany(keys: readonly Buffer[]): Promise<Array<Buffer | undefined>> {
    this.checkOpen();
    try {
      return await this.keyspace.store.db.getMany(
        keys.map((key) => Buffer.concat([this.keyspace.prefix, key])),
        this.options,
      );
    } catch (error) {
      throw this.keyspace.store.failure(error, `store ${this.keyspace.storeName}`);
    }
  }

  cursor(query: RangeQuery, firstChunk?: number): CommittedCursor {
    this.checkOpen();
    const { prefix } = this.keyspace;
    const { bounds } = query;
    const range: { gte: Buffer; lte?: Buffer; lt?: Buffer } = {
      gte: bounds.gte === undefined ? prefix : dataKey(prefix, bounds.gte),
    };
    if (bounds.lte !== undefined) range.lte = dataKey(prefix, bounds.lte);
    else range.lt = bounds.lt !== undefined ? dataKey(prefix, bounds.lt) : this.keyspace.end;
    let iterator: ReturnType<Db['iterator']>;
    try {
      iterator = this.keyspace.store.db.iterator({
        ...range,
        ...this.options,
        reverse: query.reverse,
        limit: query.limit === Infinity ? -1 : query.limit,
        highWaterMarkBytes: HIGH_WATER_MARK_BYTES,
      });
    } catch (error) {
      throw this.keyspace.store.failure(error, `store ${this.keyspace.storeName}`);
    }
    let chunkSize = Math.max(1, Math.min(CURSOR_CHUNK, query.limit, firstChunk ?? CURSOR_CHUNK));
    let done = false;
    return {
      next: async () => {
        if (done) return undefined;
        let entries: Array<[Buffer, Buffer]>;
        try {
          entries = (await iterator.nextv(chunkSize)) as Array<[Buffer, Buffer]>;
          chunkSize = Math.min(CURSOR_CHUNK, chunkSize * 4);
        } catch (error) {
          throw this.keyspace.store.failure(error, `store ${this.keyspace.storeName}`);
        }
        if (entries.length === 0) {
          done = true;
          return undefined;
        }
        const chunk = new Array<KeyValue>(entries.length);
        for (let i = 0; i < entries.length; i++) {
          const [key, value] = entries[i]!;
          chunk[i] = { key: key.subarray(DATA_PREFIX_BYTES), value };
        }
        return chunk;
      },
      close: async () => {
        done = true;
        await iterator.close();
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.shared.release();
  }
}

/** "task 0_1", or "tasks 0_1, 0_2 and 3 more": for a failure's message. */
function describeTasks(writes: readonly CommittedWrite[]): string {
  const tasks = [...new Set(writes.map((write) => write.taskId))];
  if (tasks.length === 1) return `task ${tasks[0]!}`;
  const shown = tasks.slice(0, 3).join(', ');
  return `tasks ${shown}${tasks.length > 3 ? ` and ${tasks.length - 3} more` : ''}`;
}
