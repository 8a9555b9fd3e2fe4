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
 * - No loops: the POST carries FORWARDED_HEADER (forward-request.ts), and a request carrying
 *   it is never forwarded again. If the owner no longer hosts the partition (the group rebalanced), its NOT_PRESENT
 *   (with the owner it knows of) comes back as the answer; the client may follow it.
 * - Never a crash: anything that goes wrong with one owner (refused, timed out, an HTTP or
 *   GraphQL error, an answer that does not fit) fails that owner's keys with FORWARD_FAILED;
 *   local keys and other owners' keys are unaffected.
 */
import type { KeyLookup, PartitionFailure, PartitionOutcome, QueryOptions } from '../query/query-types.js';
import type { StoreDescriptor } from '../query/state-provider.js';
import type { Bytes } from '../store/types.js';
import {
  FAILURE_FIELDS,
  ForwardError,
  PARTITION_FIELDS,
  READ_ARGUMENTS,
  READ_VARIABLES,
  forwardBudget,
  forwardFailure,
  noDataError,
  postForwarded,
  type PeerLink,
  readOptionVariables,
  remoteOutcome,
  toFailure,
  type RemoteFailure,
  type RemotePartition,
} from './forward-request.js';
import { decodeForGraphQL, encodeKey } from './key-codec.js';
import { performance } from 'node:perf_hooks';

export interface ForwardedAnswer {
  readonly lookup: KeyLookup;
  readonly outcome: PartitionOutcome;
}

const FORWARD_QUERY = `query IqgateForward($store: String!, $keys: [Key!]!, ${READ_VARIABLES}) {
  getMany(store: $store, keys: $keys, ${READ_ARGUMENTS}) {
    entries { value found partition ${FAILURE_FIELDS} }
    ${PARTITION_FIELDS}
  }
}`;

interface RemoteGetMany {
  readonly getMany?: {
    readonly entries: ReadonlyArray<{ value: unknown; found: boolean; partition: number; failure: RemoteFailure | null }>;
    readonly partitions: readonly RemotePartition[];
  } | null;
}

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
  link: PeerLink,
): Promise<ForwardedAnswer[]> {
  const started = performance.now();
  // The owner may wait up to boundTimeoutMs for the bound: the timeout covers that wait.
  const budget = forwardBudget(link.timeoutMs, options);
  try {
    const variables = { store: store.name, keys: keys.map((key) => decodeForGraphQL(store.keySerde, key)), ...readOptionVariables(options) };
    const response = await postForwarded<RemoteGetMany>(owner, FORWARD_QUERY, variables, budget, options.signal, link.secret);
    const result = response.data?.getMany;
    if (result == null) throw noDataError(owner, 'getMany', response.errors);
    if (result.entries.length !== keys.length) throw new ForwardError(`${owner} answered ${result.entries.length} entries for ${keys.length} keys`);
    const outcomes = new Map(result.partitions.map((p) => [p.partition, p]));
    const took = `forwarded to ${owner}, answered in ${(performance.now() - started).toFixed(3)} ms`;
    return keys.map((key, i) => {
      const entry = result.entries[i]!;
      const partition = partitions[i]!;
      const failure = entry.failure === null ? undefined : toFailure(entry.failure);
      const outcome = remoteOutcome(owner, partition, outcomes.get(partition), options, took, failure);
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
    const failure = forwardFailure(error, owner, budget);
    return keys.map((key, i) => ({ lookup: { key, partition: partitions[i]!, failure }, outcome: { partition: partitions[i]!, failure } }));
  }
}
