/**
 * One page of a range or prefix scan, asked of the instance that hosts some of its partitions:
 * the scatter half of gather-page.ts's scatter-gather.
 *
 * The owner runs the very same scan (store, bounds, order, direction, page size, read options)
 * restricted to `partitions`, so its page holds its first `size` entries after the cursor, which
 * is what mergePages needs. The cursor travels without its snapshot id: a cursor is the key plus
 * a fingerprint of store, scan and order (cursor.ts), never of partitions, so the owner accepts
 * ours and we accept its; the snapshot it may name lives here, not at the owner. Its edges'
 * keys are taken from their cursors, decoded with our fingerprint: the
 * exact serialized bytes the owner's store holds (no trip through the key's GraphQL form), and
 * a check that the owner ran the same scan. Values come back in their GraphQL form and are
 * encoded again with the store's value serde, as forwarded key lookups do.
 *
 * Never rejects: anything that goes wrong fails all of `partitions` with FORWARD_FAILED.
 */
import { isIqgateError } from '../errors.js';
import { decodeCursor, encodeCursor } from '../query/cursor.js';
import type { MergedEntry, PageRequest, PartitionOutcome, QueryOptions } from '../query/query-types.js';
import type { StoreDescriptor } from '../query/state-provider.js';
import type { Bytes } from '../store/types.js';
import {
  ForwardError,
  forwardBudget,
  forwardFailure,
  noDataError,
  PARTITION_FIELDS,
  postForwarded,
  type PeerLink,
  READ_ARGUMENTS,
  READ_VARIABLES,
  readOptionVariables,
  remoteOutcome,
  type RemoteError,
  type RemotePartition,
} from './forward-request.js';
import { decodeForGraphQL, encodeKey } from './key-codec.js';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';

/** A merged entry; `valueError` when the owner could not decode the value (DECODE_FAILED there). */
export interface GatheredEntry extends MergedEntry {
  readonly valueError?: string;
}

export interface ForwardedPage {
  readonly entries: readonly GatheredEntry[];
  readonly hasMore: boolean;
  /** One per partition asked for, in that order. */
  readonly partitions: readonly PartitionOutcome[];
  /** The snapshot of this instance's partitions that the listing reads (its cursors name it). */
  readonly snapshot?: Bytes;
}

const PAGE_VARIABLES = '$store: String!, $order: Order, $first: Int, $after: String, $last: Int, $before: String, $partitions: [Int!]';
const PAGE_ARGS = 'store: $store, order: $order, first: $first, after: $after, last: $last, before: $before, partitions: $partitions';
const SELECTION = `{
    edges { cursor node { value partition } }
    pageInfo { hasNextPage hasPreviousPage }
    ${PARTITION_FIELDS}
  }`;
/** Aliased `page` so that both answer the same shape. */
const QUERIES = {
  range: `query IqgateForwardRange(${PAGE_VARIABLES}, $from: Key, $to: Key, ${READ_VARIABLES}) {
  page: range(${PAGE_ARGS}, from: $from, to: $to, ${READ_ARGUMENTS}) ${SELECTION}
}`,
  prefix: `query IqgateForwardPrefix(${PAGE_VARIABLES}, $prefix: Key!, ${READ_VARIABLES}) {
  page: prefix(${PAGE_ARGS}, prefix: $prefix, ${READ_ARGUMENTS}) ${SELECTION}
}`,
} as const;

interface RemotePage {
  readonly page?: {
    readonly edges: ReadonlyArray<{ cursor: string; node: { value: unknown; partition: number } }>;
    readonly pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean };
    readonly partitions: readonly RemotePartition[];
  } | null;
}

export async function forwardPage(
  owner: string,
  store: StoreDescriptor,
  options: QueryOptions,
  request: PageRequest,
  fingerprint: Bytes,
  partitions: readonly number[],
  link: PeerLink,
): Promise<ForwardedPage> {
  const started = performance.now();
  const budget = forwardBudget(link.timeoutMs, options);
  try {
    const response = await postForwarded<RemotePage>(owner, QUERIES[request.scan.type], variables(store, options, request, fingerprint, partitions), budget, options.signal, link.secret);
    const page = response.data?.page;
    if (page == null) throw noDataError(owner, request.scan.type, response.errors);
    const valueErrors = valueErrorsByEdge(owner, response.errors);
    const asked = new Set(partitions);
    const entries = page.edges.map((edge, i): GatheredEntry => {
      if (!asked.has(edge.node.partition)) throw new ForwardError(`${owner} answered an entry of partition ${edge.node.partition}, which it was not asked for`);
      const key = keyOf(owner, edge.cursor, fingerprint);
      const valueError = valueErrors.get(i);
      if (valueError !== undefined) return { key, value: Buffer.alloc(0), partition: edge.node.partition, valueError };
      return { key, value: valueOf(owner, store, edge.node.value), partition: edge.node.partition };
    });
    if (entries.length > request.size) throw new ForwardError(`${owner} answered ${entries.length} entries for a page of ${request.size}`);
    const outcomes = new Map(page.partitions.map((p) => [p.partition, p]));
    const took = `forwarded to ${owner}, answered in ${(performance.now() - started).toFixed(3)} ms`;
    const missing = { reason: 'FORWARD_FAILED', message: `${owner} did not report on this partition.`, owner } as const;
    return {
      entries,
      hasMore: request.direction === 'forward' ? page.pageInfo.hasNextPage : page.pageInfo.hasPreviousPage,
      partitions: partitions.map((p) => remoteOutcome(owner, p, outcomes.get(p), options, took, outcomes.has(p) ? undefined : missing)),
    };
  } catch (error) {
    const failure = forwardFailure(error, owner, budget);
    return { entries: [], hasMore: false, partitions: partitions.map((partition) => ({ partition, failure })) };
  }
}

function variables(store: StoreDescriptor, options: QueryOptions, request: PageRequest, fingerprint: Bytes, partitions: readonly number[]): Record<string, unknown> {
  const { scan } = request;
  const forward = request.direction === 'forward';
  // Never the listing's snapshot id: it names a snapshot of this instance's partitions, and the
  // owner reads its own at the state each page meets (gather-page.ts).
  const cursor = request.cursorKey === undefined ? null : encodeCursor(fingerprint, request.cursorKey);
  return {
    store: store.name,
    ...(scan.type === 'range'
      ? { from: graphqlKey(store, scan.from, 'from'), to: graphqlKey(store, scan.to, 'to') }
      : { prefix: graphqlKey(store, scan.prefix, 'prefix') }),
    order: request.order === 'desc' ? 'DESC' : 'ASC',
    ...(forward ? { first: request.size, after: cursor } : { last: request.size, before: cursor }),
    partitions,
    ...readOptionVariables(options),
  };
}

/**
 * A scan bound in the GraphQL form the owner will encode again. The owner must arrive at the
 * same bytes, or its bounds (and the cursor fingerprint) would differ: checked here through the
 * JSON the request travels as (a float64 -0 would not survive it).
 */
function graphqlKey(store: StoreDescriptor, bytes: Bytes | undefined, what: string): unknown {
  if (bytes === undefined) return null;
  const value = decodeForGraphQL(store.keySerde, bytes);
  const travelled: unknown = JSON.parse(JSON.stringify(value) ?? 'null');
  if (!encodeKey(store.keySerde, travelled, what).equals(bytes)) throw new ForwardError(`the ${what} key cannot be sent exactly as a GraphQL value`);
  return value;
}

function keyOf(owner: string, cursor: string, fingerprint: Bytes): Bytes {
  try {
    return decodeCursor(cursor, fingerprint).key;
  } catch (error) {
    if (isIqgateError(error, 'INVALID_CURSOR')) throw new ForwardError(`${owner} answered a cursor that does not belong to this scan`);
    throw error;
  }
}

function valueOf(owner: string, store: StoreDescriptor, value: unknown): Bytes {
  try {
    return encodeKey(store.valueSerde, value, 'value');
  } catch {
    throw new ForwardError(`${owner} answered a value that does not fit the store's ${store.valueSerde.name} serde`);
  }
}

/**
 * The owner serves a page even when one value fails to decode (that field alone errs, with
 * DECODE_FAILED at edges[i].node.value): so do we, with the same error on the same edge. Any
 * other error makes the answer unusable.
 */
function valueErrorsByEdge(owner: string, errors: readonly RemoteError[] | undefined): Map<number, string> {
  const byEdge = new Map<number, string>();
  for (const error of errors ?? []) {
    const [field, edges, index, node, value] = error.path ?? [];
    if (field === 'page' && edges === 'edges' && typeof index === 'number' && node === 'node' && value === 'value' && error.extensions?.code === 'DECODE_FAILED') {
      byEdge.set(index, error.message);
    } else {
      throw noDataError(owner, 'page', [error]);
    }
  }
  return byEdge;
}
