/**
 * `keyMetadata`: where a key lives, for clients that route themselves (Kafka Streams'
 * KafkaStreams#queryMetadataForKey, KeyQueryMetadata with its activeHost and standbyHosts, and
 * KIP-535's lags): the key's partition, the active owner's URL, and each standby host with the
 * lag it reports. A standby kept here reports its own lag; one elsewhere is asked for it (one small
 * signed POST per host, `store { localPartitions }`, bounded by forwardTimeoutMs); a host that
 * does not answer is listed with a null lag. A forwarded request asks no one (one hop at most).
 */
import type { ReplicaLag } from '../query/query-types.js';
import type { StoreDescriptor } from '../query/state-provider.js';
import { postForwarded } from './forward-request.js';
import { isForwarded, readableStore, type GatewayContext } from './gateway-context.js';
import { encodeKey } from './key-codec.js';
import { lagField } from './lag-field.js';

export interface StandbyHost {
  readonly url: string | null;
  readonly here: boolean;
  readonly lag: ReplicaLag | null;
}

const LAG_QUERY = `query IqgateStandbyLag($store: String!) {
  store(name: $store) { localPartitions { partition active standbyLag { offsets timeMs } } }
}`;

interface RemoteLocalPartitions {
  readonly store?: { readonly localPartitions: ReadonlyArray<{ partition: number; active: boolean; standbyLag: ReplicaLag | null }> } | null;
}

export interface KeyMetadata {
  readonly partition: number;
  readonly active: string | null;
  readonly activeHere: boolean;
  readonly standbys: readonly StandbyHost[];
}

export async function keyMetadata(context: GatewayContext, storeName: string, key: unknown): Promise<KeyMetadata> {
  const store = readableStore(context, storeName);
  const partition = context.engine.partitionOf(store, encodeKey(store.keySerde, key, 'key'));
  const { provider } = context;
  const self = provider.selfUrl?.() ?? null;
  const local = provider.localPartition(store.name, partition);
  const activeHere = local?.active === true;
  const standbys: Array<StandbyHost | Promise<StandbyHost>> = [];
  if (local !== undefined && !local.active) standbys.push({ url: self, here: true, lag: lagField(local.lag) });
  for (const url of provider.remoteStandbys?.(store.name, partition) ?? []) {
    standbys.push(isForwarded(context) ? { url, here: false, lag: null } : remoteLag(context, store, partition, url));
  }
  return {
    partition,
    active: activeHere ? self : provider.remoteOwner?.(store.name, partition) ?? null,
    activeHere,
    standbys: await Promise.all(standbys),
  };
}

async function remoteLag(context: GatewayContext, store: StoreDescriptor, partition: number, url: string): Promise<StandbyHost> {
  const { peer } = context.options;
  try {
    const response = await postForwarded<RemoteLocalPartitions>(url, LAG_QUERY, { store: store.name }, peer.timeoutMs, context.request?.signal, peer.secret);
    const hosted = response.data?.store?.localPartitions.find((p) => p.partition === partition && !p.active);
    return { url, here: false, lag: lagField(hosted?.standbyLag) };
  } catch {
    return { url, here: false, lag: null };
  }
}
