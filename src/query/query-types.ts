/**
 * The IQv2 vocabulary of iqgate (Kafka Streams' StateQueryRequest / StateQueryResult /
 * QueryResult / FailureReason), over byte keys. Callers (the GraphQL layer) decode their
 * arguments into these shapes once; the engine trusts them.
 */
import type { Bytes, Order } from '../store/types.js';
import type { Position } from '../store/position.js';

/** Kafka Streams' FailureReason, one per partition. */
export const FAILURE_REASONS = {
  NOT_PRESENT: 'The partition is not hosted on this instance.',
  NOT_ACTIVE: 'The partition is here but not active (standby, or restoring without allowStale).',
  NOT_UP_TO_BOUND: 'The partition did not reach the position bound within the wait.',
  UNKNOWN_QUERY_TYPE: 'The store partition does not support this query type.',
  STORE_EXCEPTION: 'Reading the store partition failed.',
  DOES_NOT_EXIST: 'The store has no such partition at all.',
  /** iqgate's: the key was forwarded to the partition's owner, which did not answer usably. */
  FORWARD_FAILED: 'The partition is hosted by another instance, and forwarding the query to it failed (unreachable, timed out, or it answered with an error).',
} as const;

export type FailureReason = keyof typeof FAILURE_REASONS;

export interface PartitionFailure {
  readonly reason: FailureReason;
  readonly message: string;
  /** NOT_PRESENT / FORWARD_FAILED: the GraphQL URL of the instance hosting the partition, when known. */
  readonly owner?: string;
  /**
   * NOT_PRESENT: where the partition's standby replicas are, in order of preference — the URLs
   * of other instances, and `local` when this instance keeps one — for a caller to fall back on
   * when the owner cannot answer.
   */
  readonly standbys?: readonly string[];
  /**
   * Not sent to clients. NOT_PRESENT: a standby kept here may answer (within maxLag); NOT_ACTIVE:
   * the active task here is restoring and no standby elsewhere exists, so its committed data may
   * answer as a standby's (QueryOptions.restoringAsStandby).
   */
  readonly standbyHere?: boolean;
}

/** How far a standby replica is behind (KIP-535's offset and time lag); an active has none. */
export interface ReplicaLag {
  /** Changelog offsets behind the changelog's committed end, as of the standby's last poll; Infinity while not known yet. */
  readonly offsets: number;
  /** Milliseconds since the standby was last known to be caught up. */
  readonly timeMs: number;
}

export type QueryType = 'key' | 'range' | 'prefix';

/** Options every query takes (IQv2's StateQueryRequest knobs plus iqgate's additions). */
export interface QueryOptions {
  readonly store: string;
  /** Restrict to these partitions; absent = all partitions the query may touch. */
  readonly partitions?: readonly number[];
  /**
   * Each partition must have reached, for its own partition number, the bound's offsets
   * (Kafka Streams' StoreQueryUtils.isPermitted). Absent = unbounded.
   */
  readonly positionBound?: Position;
  /** How long a partition may wait for the bound before failing NOT_UP_TO_BOUND. 0 = fail at once. */
  readonly boundTimeoutMs: number;
  readonly requireActive: boolean;
  /** Serve a RESTORING partition's committed data instead of failing NOT_ACTIVE. */
  readonly allowStale: boolean;
  readonly readCommitted: boolean;
  readonly executionInfo: boolean;
  /** Aborted when the caller has gone away (the HTTP request closed): waits for the bound end at once. */
  readonly signal?: AbortSignal;
  /**
   * KIP-535: a standby replica may answer when it is at most this many changelog offsets
   * behind; one within it answers before the active owner is asked (it is here, or nearer).
   * Absent: standbys answer only when the active owner cannot (standbyFallback).
   */
  readonly maxLag?: number;
  /**
   * A standby kept here answers even though an active owner is known elsewhere: the caller tried
   * the owner and it failed, or this request was itself forwarded (it goes no further).
   */
  readonly standbyFallback?: boolean;
  /**
   * Internal, with standbyFallback: an active task here that is still RESTORING answers from its
   * committed data as a standby would (flagged standby, no lag) — set only by the gateway's
   * fallback when the owner could not answer and no standby elsewhere exists (standbyHere).
   */
  readonly restoringAsStandby?: boolean;
}

/** How a partition answered: the Position it was served at, or a typed failure. */
export interface PartitionOutcome {
  readonly partition: number;
  readonly position?: Position;
  readonly failure?: PartitionFailure;
  readonly executionInfo?: readonly string[];
  /** True when a standby replica answered (with its lag). */
  readonly standby?: boolean;
  readonly lag?: ReplicaLag;
  /** The URL of the instance that answered, when known (this one's advertised URL, or a peer's). */
  readonly servedBy?: string;
}

export interface KeyLookup {
  readonly key: Bytes;
  readonly partition: number;
  /** undefined when absent or when the partition failed (see `failure`). */
  readonly value?: Bytes;
  readonly failure?: PartitionFailure;
}

export interface MultiKeyResult {
  /** In the order the keys were asked for. */
  readonly lookups: readonly KeyLookup[];
  readonly partitions: readonly PartitionOutcome[];
}

export interface RangeSpec {
  readonly type: 'range';
  readonly from?: Bytes;
  readonly to?: Bytes;
}

export interface PrefixSpec {
  readonly type: 'prefix';
  readonly prefix: Bytes;
}

export type ScanSpec = RangeSpec | PrefixSpec;

/** One page of a scan merged across partitions in key-byte order. */
export interface PageRequest {
  readonly scan: ScanSpec;
  /** The order of the returned entries. */
  readonly order: Order;
  /** forward: entries after `cursorKey` in `order`; backward: the last ones before it. */
  readonly direction: 'forward' | 'backward';
  /** Exclusive: the key of the cursor the page starts after (forward) or ends before (backward). */
  readonly cursorKey?: Bytes;
  readonly size: number;
  /**
   * The pinned snapshot the cursor's listing reads (pinned-snapshots.ts): the partitions it
   * holds are read from it; STALE_CURSOR when it is no longer held.
   */
  readonly snapshot?: Bytes;
  /** Without `snapshot`: keep this page's views as the listing's snapshot (a client's listing, not a forwarded part of one). */
  readonly pin?: boolean;
}

export interface MergedEntry {
  readonly key: Bytes;
  readonly value: Bytes;
  readonly partition: number;
}

export interface Page {
  /** In `order`, whatever the direction. */
  readonly entries: readonly MergedEntry[];
  /** More entries exist beyond the page in the direction of travel. */
  readonly hasMore: boolean;
  readonly partitions: readonly PartitionOutcome[];
  /** The snapshot the page was read from (`request.snapshot`) or has just pinned (`pinnedNow`). */
  readonly snapshot?: Bytes;
  readonly pinnedNow?: boolean;
}
