/**
 * kafkajs patch 4 — coordinator lookups of transactional producers (commit latency).
 *
 * kafkajs 2.2.4 sends a FindCoordinator before every AddPartitionsToTxn, AddOffsetsToTxn,
 * TxnOffsetCommit and EndTxn (`src/producer/eosManager/index.js:91-96`, docs/kafkajs-notes.md §5 "Cost of
 * each transaction"): four of the ~12 sequential round trips of each transaction. The patched
 * `Cluster#findGroupCoordinator` (`src/cluster/index.js:343`) remembers the coordinator's node id
 * per Cluster (one Cluster per producer) for COORDINATOR_CACHE_MS and resolves it through the
 * broker pool as kafkajs does. Measured in bench:processing: FindCoordinator per transaction
 * 4 → ~1.3, commit latency p50 ~245 → ~175 ms.
 *
 * Only clusters that look up TRANSACTION coordinators (transactional producers) cache at all, so
 * consumers and admins are untouched. A metadata refresh (what kafkajs' send retrier does on
 * NOT_COORDINATOR and other retriable errors; `Cluster#refreshMetadata`, `src/cluster/index.js:171`)
 * or an unreachable broker drops the cache, and an entry never lives longer than
 * COORDINATOR_CACHE_MS, so kafkajs' own retries see a fresh coordinator within about a second; a
 * failed commit discards the producer and its cache. Brokers reject requests for transactions or
 * groups they do not coordinate, so a stale entry can only cost a retry, never change what a
 * transaction commits.
 *
 * The check is by identity: the prototype holds the methods every Cluster calls.
 */
import { type KafkajsPatch, kafkajsPrototype, patchNotInPlace, replaceMethod } from './kafkajs-patch.js';

interface CoordinatorArgs { readonly groupId: string; readonly coordinatorType?: number }
type FindGroupCoordinator = (this: ClusterLike, args: CoordinatorArgs) => Promise<{ nodeId: number }>;
type RefreshMetadata = (this: ClusterLike) => Promise<void>;
interface ClusterPrototype {
  findGroupCoordinator: FindGroupCoordinator;
  refreshMetadata: RefreshMetadata;
}
interface ClusterLike extends ClusterPrototype {
  findBroker(this: ClusterLike, args: { nodeId: number }): Promise<{ nodeId: number }>;
  [COORDINATORS]?: Map<string, { nodeId: number; at: number }>;
}

const COORDINATORS = Symbol('iqgate:transactionCoordinators');
const TRANSACTION_COORDINATOR = 1; // kafkajs/src/protocol/coordinatorTypes.js
export const COORDINATOR_CACHE_MS = 1_000;

// kafkajs' own methods, kept by install() before it replaces them.
let kafkajsFindGroupCoordinator: FindGroupCoordinator | undefined;
let kafkajsRefreshMetadata: RefreshMetadata | undefined;

async function findCachedCoordinator(this: ClusterLike, args: CoordinatorArgs): Promise<{ nodeId: number }> {
  const findGroupCoordinator = kafkajsFindGroupCoordinator!; // set before this method is installed
  // Transactional producers only: their first request is InitProducerId, after a TRANSACTION lookup.
  if (args.coordinatorType !== TRANSACTION_COORDINATOR && this[COORDINATORS] === undefined) return findGroupCoordinator.call(this, args);
  const cache = (this[COORDINATORS] ??= new Map());
  const key = `${args.coordinatorType ?? 0}:${args.groupId}`;
  const known = cache.get(key);
  if (known !== undefined && Date.now() - known.at < COORDINATOR_CACHE_MS) {
    try {
      return await this.findBroker({ nodeId: known.nodeId });
    } catch {
      cache.delete(key); // gone from the metadata or unreachable: look it up again
    }
  }
  const broker = await findGroupCoordinator.call(this, args);
  cache.set(key, { nodeId: broker.nodeId, at: Date.now() });
  return broker;
}

async function refreshMetadataAndCoordinators(this: ClusterLike): Promise<void> {
  this[COORDINATORS]?.clear();
  await kafkajsRefreshMetadata!.call(this); // set before this method is installed
}

function clusterPrototype(): ClusterPrototype {
  return kafkajsPrototype('kafkajs/src/cluster');
}

export const coordinatorCachePatch: KafkajsPatch = {
  name: 'coordinator-cache',
  install: () => {
    const cluster = clusterPrototype();
    kafkajsFindGroupCoordinator ??= replaceMethod(cluster, 'findGroupCoordinator', findCachedCoordinator);
    kafkajsRefreshMetadata ??= replaceMethod(cluster, 'refreshMetadata', refreshMetadataAndCoordinators);
  },
  check: () => {
    const cluster = clusterPrototype();
    if (cluster.findGroupCoordinator !== findCachedCoordinator || cluster.refreshMetadata !== refreshMetadataAndCoordinators) {
      throw patchNotInPlace('coordinator-cache', 'kafkajs\' transactional producers look their coordinator up before every transaction step');
    }
  },
};
