/**
 * A ReadView: one store partition at one point in time. A committed view reads only the
 * committed snapshot; an uncommitted one reads the in-memory layers (cloned copy-on-write in
 * the same synchronous tick as the snapshot was taken) over it. Cursors the view opens are
 * closed when iteration ends or is abandoned by `return()`, and at the latest by `close()`.
 */
import { prefixQuery, rangeQuery, type RangeQuery } from './key-bounds.js';
import { mergeRange, type MemoryLayer } from './merge-range.js';
import { toInternalKey } from './sorted-map.js';
import { storeClosedError } from './store-errors.js';
import type { CommittedCursor, CommittedSnapshot } from './committed-store.js';
import type { Position } from './position.js';
import type { Bytes, KeyValue, PrefixOptions, RangeOptions, ReadView } from './types.js';
import { Buffer } from 'node:buffer';

export class LayeredReadView implements ReadView {
  private closed = false;
  private readonly cursors = new Set<CommittedCursor>();

  constructor(
    readonly storeName: string,
    readonly partition: number,
    readonly readCommitted: boolean,
    readonly position: Position,
    /** Highest priority first; empty for a committed view. */
    private readonly layers: readonly MemoryLayer[],
    private readonly snapshot: CommittedSnapshot,
  ) {}

  private checkOpen(): void {
    if (this.closed) throw storeClosedError('read view');
  }

  async get(key: Bytes): Promise<Bytes | undefined> {
    this.checkOpen();
    if (!Buffer.isBuffer(key)) throw new TypeError('key must be a Buffer');
    if (this.layers.length > 0) {
      const k = toInternalKey(key);
      for (const layer of this.layers) {
        const value = layer.get(k);
        if (value !== undefined) return value ?? undefined;
      }
    }
    return this.snapshot.get(key);
  }

  async getMany(keys: readonly Bytes[]): Promise<Array<Bytes | undefined>> {
    this.checkOpen();
    for (const key of keys) if (!Buffer.isBuffer(key)) throw new TypeError('keys must be Buffers');
    const results = new Array<Bytes | undefined>(keys.length);
    const missing: number[] = [];
    for (let i = 0; i < keys.length; i++) {
      let found = false;
      const k = this.layers.length > 0 ? toInternalKey(keys[i]!) : '';
      for (const layer of this.layers) {
        const value = layer.get(k);
        if (value !== undefined) {
          results[i] = value ?? undefined;
          found = true;
          break;
        }
      }
      if (!found) missing.push(i);
    }
    if (missing.length > 0) {
      const values = await this.snapshot.getMany(missing.map((i) => keys[i]!));
      for (let j = 0; j < missing.length; j++) results[missing[j]!] = values[j];
    }
    return results;
  }

  range(options?: RangeOptions): AsyncIterableIterator<KeyValue> {
    this.checkOpen();
    return this.read(rangeQuery(options));
  }

  prefix(prefix: Bytes, options?: PrefixOptions): AsyncIterableIterator<KeyValue> {
    this.checkOpen();
    return this.read(prefixQuery(prefix, options));
  }

  private read(query: RangeQuery): AsyncIterableIterator<KeyValue> {
    return mergeRange(this.layers, (q, firstChunk) => this.openCursor(q, firstChunk), query);
  }

  private openCursor(query: RangeQuery, firstChunk?: number): CommittedCursor {
    this.checkOpen();
    const cursor = this.snapshot.cursor(query, firstChunk);
    this.cursors.add(cursor);
    return {
      next: () => cursor.next(),
      close: async () => {
        this.cursors.delete(cursor);
        await cursor.close();
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const cursors = [...this.cursors];
    this.cursors.clear();
    try {
      await Promise.all(cursors.map((cursor) => cursor.close()));
    } finally {
      await this.snapshot.close();
    }
  }
}
