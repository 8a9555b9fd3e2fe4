/**
 * kafkajs patch 9 — no heartbeat round trip per batch once the group is rebalancing (rebalance time).
 *
 * kafkajs 2.2.4 rejoins its group only once its runner has handled a whole fetch: the worker
 * queue (`src/consumer/workerQueue.js:20-32`) settles every batch of the fetch, one per partition,
 * before it throws the first error, and the runner (`src/consumer/runner.js:207-216`, `:378-461`)
 * heartbeats after each batch, empty ones included. ConsumerGroup's heartbeat
 * (`src/consumer/consumerGroup.js:132-147`) times only a heartbeat that succeeded, so once the
 * coordinator has answered REBALANCE_IN_PROGRESS every further batch sends another heartbeat and
 * waits for the same answer. In bench:scale (1000 partitions, eager rebalancing) the first
 * instance sent 1,000–1,500 failed heartbeats over 20 s before it rejoined when a second instance
 * joined, and none of its tasks processed a record meanwhile.
 *
 * The patched heartbeat remembers an answer that means "join again" (kafkajs' own isRebalancing:
 * REBALANCE_IN_PROGRESS, NOT_COORDINATOR_FOR_GROUP, ILLEGAL_GENERATION) and throws it again at
 * once, without a request, until the member's next join starts or ends (`joinAndSync`, which
 * every rejoin of kafkajs goes through: the runner's, the one after UNKNOWN_MEMBER_ID and the
 * one `fetch` starts on stale metadata). The rest of the fetch then settles at once and the
 * runner rejoins. Not the generation: a member that rejoins a stable group with the same
 * metadata gets its generation back (after a coordinator moved, say), and would then never
 * heartbeat again. An answer to a heartbeat that was under way while a join started or ended is
 * not remembered (it may be about the generation the join has just left).
 *
 * The patched joinAndSync also tells a listener registered for the consumer (by its kafkajs
 * Cluster, as patch 10's fetch-size hint) that a join starts: the session watchdog
 * (session-watchdog.ts) checks nothing while the member joins, and kafkajs emits REBALANCING
 * before only some of its joins (docs/kafkajs-notes.md §1, caveats c and d).
 * It replaces two methods on kafkajs' ConsumerGroup prototype, so the check is by identity. It
 * loads kafkajs' consumer files (Batch requires the file patch 1 replaces), so it is installed
 * after patch 1.
 */
import { type KafkajsPatch, kafkajsPrototype, patchNotInPlace, replaceMethod, requireKafkajs } from './kafkajs-patch.js';

const REJOIN = Symbol('iqgate.rejoin');
const JOINS = Symbol('iqgate.joins');

interface ConsumerGroupLike {
  readonly cluster?: object;
  /** The rebalancing answer to throw again until the next join starts or ends. */
  [REJOIN]?: unknown;
  /** Joins started plus joins ended. */
  [JOINS]?: number;
}

type Heartbeat = (this: ConsumerGroupLike, options: { interval: number }) => Promise<void>;
type JoinAndSync = (this: ConsumerGroupLike, ...args: unknown[]) => Promise<void>;

interface ConsumerGroupPrototype {
  heartbeat: Heartbeat;
  joinAndSync: JoinAndSync;
}

const { isRebalancing } = requireKafkajs('kafkajs/src/errors') as { isRebalancing: (error: unknown) => boolean };

function consumerGroupPrototype(): ConsumerGroupPrototype {
  return kafkajsPrototype('kafkajs/src/consumer/consumerGroup');
}

const joinListeners = new WeakMap<object, () => void>();

/** From now on, `listener` hears when each join (JoinGroup, then SyncGroup) of the consumer whose kafkajs Cluster is `cluster` starts. */
export function onJoinStart(cluster: object, listener: () => void): void {
  joinListeners.set(cluster, listener);
}

/** kafkajs' own methods, kept by install(). */
let kafkajsHeartbeat: Heartbeat | undefined;
let kafkajsJoinAndSync: JoinAndSync | undefined;

export const heartbeat: Heartbeat = async function heartbeat(this: ConsumerGroupLike, options: { interval: number }): Promise<void> {
  if (this[REJOIN] !== undefined) throw this[REJOIN];
  const joins = this[JOINS] ?? 0;
  try {
    await kafkajsHeartbeat!.call(this, options);
  } catch (error) {
    if (isRebalancing(error) && (this[JOINS] ?? 0) === joins) this[REJOIN] = error;
    throw error;
  }
};

export const joinAndSync: JoinAndSync = async function joinAndSync(this: ConsumerGroupLike, ...args: unknown[]): Promise<void> {
  this[JOINS] = (this[JOINS] ?? 0) + 1;
  delete this[REJOIN];
  if (this.cluster !== undefined) joinListeners.get(this.cluster)?.();
  try {
    await kafkajsJoinAndSync!.apply(this, args);
  } finally {
    this[JOINS] = (this[JOINS] ?? 0) + 1;
    delete this[REJOIN];
  }
};

export const rebalanceHeartbeatPatch: KafkajsPatch = {
  name: 'rebalance-heartbeat',
  install: () => {
    const prototype = consumerGroupPrototype();
    kafkajsHeartbeat ??= replaceMethod(prototype, 'heartbeat', heartbeat);
    kafkajsJoinAndSync ??= replaceMethod(prototype, 'joinAndSync', joinAndSync);
  },
  check: () => {
    const prototype = consumerGroupPrototype();
    if (prototype.heartbeat !== heartbeat || prototype.joinAndSync !== joinAndSync) {
      throw patchNotInPlace('rebalance-heartbeat', 'a kafkajs consumer sends one failed heartbeat per partition before it rejoins a rebalancing group');
    }
  },
};
