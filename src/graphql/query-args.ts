/**
 * Decodes GraphQL arguments into the query engine's normalised requests, once, at the edge.
 * Everything that can be wrong with a request is found here and reported with a code.
 */
import { IqgateError } from '../errors.js';
import { decodeCursor, scanFingerprint } from '../query/cursor.js';
import type { PageRequest, QueryOptions, ScanSpec } from '../query/query-types.js';
import type { StoreDescriptor } from '../query/state-provider.js';
import type { Position } from '../store/position.js';
import type { Bytes, Order } from '../store/types.js';
import type { ResolvedGatewayOptions } from './gateway-options.js';
import { encodeKey } from './key-codec.js';
import { Buffer } from 'node:buffer';

export interface CommonArgs {
  readonly store: string;
  readonly readCommitted?: boolean | null;
  readonly positionBound?: Position | null;
  readonly boundTimeoutMs?: number | null;
  readonly requireActive?: boolean | null;
  readonly allowStale?: boolean | null;
  readonly executionInfo?: boolean | null;
  readonly partitions?: readonly number[] | null;
  readonly maxLag?: number | null;
}

export interface PageArgs extends CommonArgs {
  readonly order?: 'ASC' | 'DESC' | null;
  readonly first?: number | null;
  readonly after?: string | null;
  readonly last?: number | null;
  readonly before?: string | null;
}

/**
 * The partitions argument, each listed once. Partitions the store does not have stay in (each
 * answers DOES_NOT_EXIST, as in IQv2), but at most maxPageSize of them: every one becomes a
 * result, and a variable is not bounded by the document's token limit.
 */
export function partitionsArg(partitions: readonly number[] | null | undefined, options: ResolvedGatewayOptions): number[] | undefined {
  if (partitions == null) return undefined;
  const distinct = [...new Set(partitions)];
  if (distinct.length > options.maxPageSize) {
    throw new IqgateError('INVALID_ARGUMENT', `partitions lists at most ${options.maxPageSize} partitions; got ${distinct.length}.`, {
      details: { maxPartitions: options.maxPageSize },
    });
  }
  return distinct;
}

/**
 * `request`: the HTTP request's, whose signal aborts when the client goes away, so that its
 * waits for a bound and its forwards stop. The signal is read only when one of those uses it:
 * the node:http fast path creates it on first use (an AbortController and a close listener per
 * request were ~2% of a single-key query).
 */
export function toQueryOptions(args: CommonArgs, options: ResolvedGatewayOptions, request?: { readonly signal: AbortSignal }): QueryOptions {
  const boundTimeoutMs = args.boundTimeoutMs ?? 0;
  if (!Number.isInteger(boundTimeoutMs) || boundTimeoutMs < 0 || boundTimeoutMs > options.maxBoundTimeoutMs) {
    throw new IqgateError('INVALID_ARGUMENT', `boundTimeoutMs must be between 0 and ${options.maxBoundTimeoutMs}.`);
  }
  const partitions = partitionsArg(args.partitions, options);
  const maxLag = args.maxLag;
  if (maxLag != null && (!Number.isSafeInteger(maxLag) || maxLag < 0)) {
    throw new IqgateError('INVALID_ARGUMENT', `maxLag must be a non-negative integer (changelog offsets a standby may be behind); got ${String(maxLag)}.`);
  }
  const result: QueryOptions = {
    store: args.store,
    ...(partitions === undefined ? {} : { partitions }),
    ...(args.positionBound == null ? {} : { positionBound: args.positionBound }),
    boundTimeoutMs,
    requireActive: args.requireActive ?? false,
    allowStale: args.allowStale ?? false,
    readCommitted: args.readCommitted ?? true,
    executionInfo: args.executionInfo ?? false,
    ...(maxLag == null ? {} : { maxLag }),
  };
  // A getter in a literal (not defineProperty, which leaves a slow dictionary-mode object).
  return request === undefined
    ? result
    : {
        ...result,
        get signal() {
          return request.signal;
        },
      };
}

/** A stable string of the options that decide how keys are read, to share one DataLoader. */
export function loaderSignature(options: QueryOptions): string {
  return JSON.stringify([
    options.store,
    options.readCommitted,
    options.positionBound?.toJSON() ?? null,
    options.boundTimeoutMs,
    options.requireActive,
    options.allowStale,
    options.executionInfo,
    options.maxLag ?? null,
  ]);
}

export function rangeScan(store: StoreDescriptor, from: unknown, to: unknown): ScanSpec {
  const fromBytes = from == null ? undefined : encodeKey(store.keySerde, from, 'from');
  const toBytes = to == null ? undefined : encodeKey(store.keySerde, to, 'to');
  if (fromBytes !== undefined && toBytes !== undefined && Buffer.compare(fromBytes, toBytes) > 0) {
    throw new IqgateError('INVALID_RANGE', 'from sorts after to (by serialized key bytes); ask for descending order with order: DESC instead.');
  }
  return { type: 'range', ...(fromBytes === undefined ? {} : { from: fromBytes }), ...(toBytes === undefined ? {} : { to: toBytes }) };
}

export interface DecodedPage {
  readonly request: PageRequest;
  readonly fingerprint: Bytes;
}

/** Relay arguments → one page request. first/after and last/before are not mixed. */
export function toPageRequest(store: StoreDescriptor, scan: ScanSpec, args: PageArgs, options: ResolvedGatewayOptions): DecodedPage {
  const order: Order = args.order === 'DESC' ? 'desc' : 'asc';
  const fingerprint = scanFingerprint(store.name, scan, order);
  const backward = args.last != null || args.before != null;
  if (backward && (args.first != null || args.after != null)) {
    throw new IqgateError('INVALID_ARGUMENT', 'Page forward with first/after or backward with last/before, not both.');
  }
  const size = (backward ? args.last : args.first) ?? options.defaultPageSize;
  if (!Number.isInteger(size) || size < 0) throw new IqgateError('INVALID_ARGUMENT', 'first/last must be a non-negative integer.');
  if (size > options.maxPageSize) {
    throw new IqgateError('PAGE_SIZE_EXCEEDED', `A page holds at most ${options.maxPageSize} entries; asked for ${size}.`, {
      details: { maxPageSize: options.maxPageSize },
    });
  }
  const cursor = backward ? args.before : args.after;
  const decoded = cursor == null ? undefined : decodeCursor(cursor, fingerprint);
  return {
    fingerprint,
    request: {
      scan,
      order,
      direction: backward ? 'backward' : 'forward',
      size,
      ...(decoded === undefined ? {} : { cursorKey: decoded.key }),
      ...(decoded?.snapshot === undefined ? {} : { snapshot: decoded.snapshot }),
    },
  };
}
