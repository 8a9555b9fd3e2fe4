/**
 * The snapshots that paged listings are pinned to (docs/architecture.md §5, "Pinned pages").
 * The first page of a range or prefix listing is read from one ReadView per local partition —
 * a LevelDB snapshot plus the copy-on-write clones of the in-memory layers (read-view.ts) —
 * and instead of closing those views the engine hands them here, under a random id that the
 * listing's cursors carry. Later pages read the same views, so the whole listing is one
 * point in time per partition, whatever is written, committed or rolled back in between.
 *
 * Held views cost memory (the clones keep the tree nodes later writes replace) and keep LevelDB
 * from dropping the versions they see, so a pin is bounded in time and in number:
 * - it lives `ttlMs` from the first page, not from the last use: however a client pages, a
 *   listing never reads state older than that (a slow reader starts again, STALE_CURSOR);
 * - at most `maxPinned` are held; a new one evicts the oldest;
 * - it goes when one of its partitions closes (revoked, task closed, engine closed), and all
 *   go at close().
 * Since every pin lives the same time, the map's insertion order is also expiry order: one
 * timer, for the oldest, does (unref'd: a pin never keeps the process alive). A pin that is
 * released while a page is reading it closes its views when that read is done.
 */
import { randomBytes } from 'node:crypto';
import type { Bytes, KeyValueStorePartition, ReadView } from '../store/types.js';
import { SNAPSHOT_ID_BYTES } from './cursor.js';
import { Buffer } from 'node:buffer';

/** The leading bytes of a snapshot id that name the process that pinned it. */
const NONCE_BYTES = 4;
import { performance } from 'node:perf_hooks';

/** Defaults of the gateway's cursorSnapshotTtlMs and maxPinnedSnapshots (and the QueryEngine's). */
export const DEFAULT_CURSOR_SNAPSHOT_TTL_MS = 30_000;
export const DEFAULT_MAX_PINNED_SNAPSHOTS = 1000;

export interface PinnedSnapshotOptions {
  /** How long a pin lives after its first page, in ms. 0 turns pinning off. */
  readonly ttlMs: number;
  /** Pins held at most; the oldest goes when a new one would exceed it. */
  readonly maxPinned: number;
  /** The clock, in ms (monotonic); tests pass their own. Default performance.now. */
  readonly now?: () => number;
}

/** One partition's part of a pin: the view, and the store partition it was taken from. */
export interface PinnedPartition {
  readonly store: KeyValueStorePartition;
  readonly view: ReadView;
}

export interface Pin {
  readonly id: Bytes;
  /** The listing's scan fingerprint (cursor.ts) and isolation: a cursor must match both. */
  readonly fingerprint: Bytes;
  readonly readCommitted: boolean;
  readonly partitions: ReadonlyMap<number, PinnedPartition>;
  readonly expiresAt: number;
}

interface Held extends Pin {
  readers: number;
  released: boolean;
  readonly unhook: Array<() => void>;
}

export class PinnedSnapshots {
  private readonly pins = new Map<string, Held>();
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  /** View closes under way, awaited by close(). */
  private readonly closing = new Set<Promise<void>>();
  private closed = false;
  /** Leads every id this store pins (pinnedHere). */
  private readonly nonce = randomBytes(NONCE_BYTES);

  constructor(private readonly options: PinnedSnapshotOptions) {
    if (!Number.isSafeInteger(options.ttlMs) || options.ttlMs < 0) throw new TypeError('ttlMs must be a non-negative integer');
    if (!Number.isSafeInteger(options.maxPinned) || options.maxPinned < 1) throw new TypeError('maxPinned must be a positive integer');
    this.now = options.now ?? (() => performance.now());
  }

  /** Whether listings are pinned at all (ttlMs > 0, not closed). */
  get enabled(): boolean {
    return this.options.ttlMs > 0 && !this.closed;
  }

  /** Pins held now. */
  get size(): number {
    return this.pins.size;
  }

  /**
   * Takes over `partitions`' views (they are closed here, never by the caller) and returns the
   * id their cursors carry; undefined when pinning is off, the views then closed at once.
   */
  pin(fingerprint: Bytes, readCommitted: boolean, partitions: ReadonlyMap<number, PinnedPartition>): Bytes | undefined {
    if (!this.enabled || partitions.size === 0) {
      for (const { view } of partitions.values()) this.closeView(view);
      return undefined;
    }
    while (this.pins.size >= this.options.maxPinned) this.release(this.pins.values().next().value!);
    const id = Buffer.concat([this.nonce, randomBytes(SNAPSHOT_ID_BYTES - NONCE_BYTES)]);
    const held: Held = { id, fingerprint, readCommitted, partitions, expiresAt: this.now() + this.options.ttlMs, readers: 0, released: false, unhook: [] };
    this.pins.set(id.toString('latin1'), held);
    for (const { store } of partitions.values()) held.unhook.push(store.onClose(() => this.release(held)));
    this.schedule();
    return id;
  }

  /**
   * The pin `id` names, held for a read until done(); undefined when it is unknown, expired
   * (it is released now, whether or not the timer came yet) or released.
   */
  /**
   * Whether `id` was pinned by this process: ids start with a nonce of the process's own, so a
   * cursor another instance (or an earlier run of this one) pinned is told apart from one whose
   * snapshot this process held and let go.
   */
  pinnedHere(id: Bytes): boolean {
    return id.length === SNAPSHOT_ID_BYTES && id.subarray(0, NONCE_BYTES).equals(this.nonce);
  }

  acquire(id: Bytes): Pin | undefined {
    const held = this.pins.get(id.toString('latin1'));
    if (held === undefined || held.released) return undefined;
    if (this.now() >= held.expiresAt) {
      this.release(held);
      return undefined;
    }
    held.readers++;
    return held;
  }

  /** A read that acquire() let in is over. */
  done(pin: Pin): void {
    const held = pin as Held;
    held.readers--;
    if (held.released && held.readers === 0) this.closeViews(held);
  }

  /** Lets the pin `id` names go (a listing that turned out to fit one page). */
  releaseId(id: Bytes): void {
    const held = this.pins.get(id.toString('latin1'));
    if (held !== undefined) this.release(held);
  }

  /** Releases every pin and stops pinning; resolves once their views are closed. */
  async close(): Promise<void> {
    this.closed = true;
    for (const held of [...this.pins.values()]) this.release(held);
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.closing.size > 0) await Promise.all([...this.closing]);
  }

  private release(held: Held): void {
    if (held.released) return;
    held.released = true;
    this.pins.delete(held.id.toString('latin1'));
    for (const unhook of held.unhook) unhook();
    if (held.readers === 0) this.closeViews(held);
  }

  private closeViews(held: Held): void {
    for (const { view } of held.partitions.values()) this.closeView(view);
  }

  private closeView(view: ReadView): void {
    // A view closed under a closed database has nothing left to release; never an unhandled rejection.
    const closing = view.close().catch(() => {});
    this.closing.add(closing);
    void closing.then(() => this.closing.delete(closing));
  }

  /** One timer, for the oldest pin (the first to expire). */
  private schedule(): void {
    if (this.timer !== undefined) return;
    const oldest = this.pins.values().next().value;
    if (oldest === undefined) return;
    this.timer = setTimeout(() => this.sweep(), Math.max(0, Math.ceil(oldest.expiresAt - this.now())));
    this.timer.unref();
  }

  private sweep(): void {
    this.timer = undefined;
    const now = this.now();
    for (const held of [...this.pins.values()]) {
      if (held.expiresAt > now) break;
      this.release(held);
    }
    this.schedule();
  }
}
