/**
 * Key lookups for partitions hosted by another instance, forwarded to that instance's GraphQL
 * endpoint — what a Kafka Streams application does by hand with queryMetadataForKey and its
 * own RPC layer, done here by the gateway.
 *
 * - One POST per owner per batch: the key loader (gateway-context.ts) collects every `get` and
 *   `getMany` key of a request that share read options, answers the local ones in one
 *   engine.getMany, and hands the rest to `forwardKeys`, grouped by owner. The owner answers
 *   them with its own key loader, so they cost it one read per partition too.
 * - The same read options travel along (readCommitted, positionBound, boundTimeoutMs,
 *   requireActive, allowStale, executionInfo): the owner applies IQv2's checks itself.
 * - No loops: the POST carries FORWARDED_HEADER, and a request carrying it is never forwarded
 *   again. If the owner no longer hosts the partition (the group rebalanced), its NOT_PRESENT
 *   (with the owner it knows of) comes back as the answer; the client may follow it.
 * - Never a crash: anything that goes wrong with one owner (refused, timed out, an HTTP or
 *   GraphQL error, an answer that does not fit) fails that owner's keys with FORWARD_FAILED;
 *   local keys and other owners' keys are unaffected.
 */
import type { KeyLookup, PartitionFailure, PartitionOutcome, QueryOptions } from '../query/query-types.js';
import type { StoreDescriptor } from '../query/state-provider.js';
import { Position, type PositionJSON } from '../store/position.js';
import type { Bytes } from '../store/types.js';
import { decodeForGraphQL, encodeKey } from './key-codec.js';

/** Marks a forwarded request; its NOT_PRESENT keys are answered as such, never forwarded again. */
export const FORWARDED_HEADER = 'x-iqgate-forwarded';

export interface ForwardedAnswer {
  readonly lookup: KeyLookup;
  readonly outcome: PartitionOutcome;
}

const FAILURE_FIELDS = 'failure { reason message owner }';
const FORWARD_QUERY = `query IqgateForward($store: String!, $keys: [Key!]!, $readCommitted: Boolean, $positionBound: Position, $boundTimeoutMs: Int, $requireActive: Boolean, $allowStale: Boolean, $executionInfo: Boolean) {
  getMany(store: $store, keys: $keys, readCommitted: $readCommitted, positionBound: $positionBound, boundTimeoutMs: $boundTimeoutMs, requireActive: $requireActive, allowStale: $allowStale, executionInfo: $executionInfo) {
    entries { value found partition ${FAILURE_FIELDS} }
    partitions { partition position ${FAILURE_FIELDS} executionInfo }
  }
}`;

interface RemoteFailure {
  readonly reason: PartitionFailure['reason'];
  readonly message: string;
  readonly owner?: string | null;
}

interface RemoteResponse {
  readonly data?: {
    readonly getMany?: {
      readonly entries: ReadonlyArray<{ value: unknown; found: boolean; partition: number; failure: RemoteFailure | null }>;
      readonly partitions: ReadonlyArray<{ partition: number; position: PositionJSON | null; failure: RemoteFailure | null; executionInfo: string[] | null }>;
    } | null;
  } | null;
  readonly errors?: ReadonlyArray<{ message: string; extensions?: { code?: unknown } }>;
}

class ForwardError extends Error {}

/**
 * Asks `owner` for `keys` (all routed to partitions it hosts), answering each in order.
 * `partitions[i]` is the partition of `keys[i]`, as computed here. Never rejects.
 */
export async function forwardKeys(
  owner: string,
  store: StoreDescriptor,
  options: QueryOptions,
  keys: readonly Bytes[],
  partitions: readonly number[],
  timeoutMs: number,
): Promise<ForwardedAnswer[]> {
  const started = performance.now();
  // The owner may wait up to boundTimeoutMs for the bound: the timeout covers that wait.
  const budget = timeoutMs + options.boundTimeoutMs;
  try {
    const response = await post(owner, store, options, keys, budget);
    const result = response.data?.getMany;
    if (result == null) {
      const first = response.errors?.[0];
      const code = typeof first?.extensions?.code === 'string' ? first.extensions.code : 'no data';
      throw new ForwardError(`${owner} answered with an error (${code}): ${first?.message ?? 'no getMany result'}`);
    }
    if (result.entries.length !== keys.length) throw new ForwardError(`${owner} answered ${result.entries.length} entries for ${keys.length} keys`);
    const outcomes = new Map(result.partitions.map((p) => [p.partition, p]));
    const took = `forwarded to ${owner}, answered in ${(performance.now() - started).toFixed(3)} ms`;
    return keys.map((key, i) => {
      const entry = result.entries[i]!;
      const partition = partitions[i]!;
      const remote = outcomes.get(partition);
      const failure = entry.failure === null ? undefined : toFailure(entry.failure);
      const outcome: PartitionOutcome = {
        partition,
        ...(remote?.position == null ? {} : { position: Position.fromJSON(remote.position) }),
        ...(remote?.failure == null ? (failure === undefined ? {} : { failure }) : { failure: toFailure(remote.failure) }),
        ...(options.executionInfo ? { executionInfo: [took, ...(remote?.executionInfo ?? [])] } : {}),
      };
      if (failure !== undefined) return { lookup: { key, partition, failure }, outcome };
      if (!entry.found || entry.value === null) return { lookup: { key, partition }, outcome };
      let value: Bytes;
      try {
        value = encodeKey(store.valueSerde, entry.value, 'value');
      } catch {
        const bad: PartitionFailure = { reason: 'FORWARD_FAILED', message: `${owner} answered a value that does not fit the store's ${store.valueSerde.name} serde.`, owner };
        return { lookup: { key, partition, failure: bad }, outcome: { partition, failure: bad } };
      }
      return { lookup: { key, partition, value }, outcome };
    });
  } catch (error) {
    const failure: PartitionFailure = { reason: 'FORWARD_FAILED', message: describe(error, owner, budget), owner };
    return keys.map((key, i) => ({ lookup: { key, partition: partitions[i]!, failure }, outcome: { partition: partitions[i]!, failure } }));
  }
}

async function post(owner: string, store: StoreDescriptor, options: QueryOptions, keys: readonly Bytes[], budget: number): Promise<RemoteResponse> {
  const timeout = AbortSignal.timeout(budget);
  const signal = options.signal === undefined ? timeout : AbortSignal.any([timeout, options.signal]);
  const response = await fetch(owner, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', [FORWARDED_HEADER]: '1' },
    body: JSON.stringify({
      query: FORWARD_QUERY,
      variables: {
        store: store.name,
        keys: keys.map((key) => decodeForGraphQL(store.keySerde, key)),
        readCommitted: options.readCommitted,
        positionBound: options.positionBound?.toJSON() ?? null,
        boundTimeoutMs: options.boundTimeoutMs,
        requireActive: options.requireActive,
        allowStale: options.allowStale,
        executionInfo: options.executionInfo,
      },
    }),
    signal,
  });
  const type = response.headers.get('content-type') ?? '';
  if (!type.includes('json')) {
    await response.body?.cancel();
    throw new ForwardError(`${owner} answered HTTP ${response.status} (${type || 'no content type'})`);
  }
  return (await response.json()) as RemoteResponse;
}

function toFailure(remote: RemoteFailure): PartitionFailure {
  return { reason: remote.reason, message: remote.message, ...(remote.owner == null ? {} : { owner: remote.owner }) };
}

/** A message for clients: what went wrong, not the stack or the HTTP client's internals. */
function describe(error: unknown, owner: string, budget: number): string {
  if (error instanceof ForwardError) return `Forwarding failed: ${error.message}.`;
  const name = error instanceof Error ? error.name : '';
  if (name === 'TimeoutError') return `Forwarding to ${owner} timed out after ${budget} ms.`;
  if (name === 'AbortError') return `Forwarding to ${owner} was abandoned: the request was aborted.`;
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  const code = typeof cause?.code === 'string' ? cause.code : error instanceof SyntaxError ? 'invalid JSON' : 'request failed';
  return `Forwarding to ${owner} failed: ${code}.`;
}
