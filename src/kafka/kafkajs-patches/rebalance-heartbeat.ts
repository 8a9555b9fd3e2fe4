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
 * REBALANCE_IN_PROGRESS, NOT_COORDINATOR_FOR_GROUP, ILLEGAL_GENERATION) for the generation and
 * member it was given to, and throws it again at once, without a request, until the member has
 * joined again (a new generation or member id). The rest of the fetch then settles at once and
 * the runner rejoins. It replaces the method on kafkajs' ConsumerGroup prototype, so the check is
 * by identity. It loads kafkajs' consumer files (Batch requires the file patch 1 replaces), so it
 * is installed after patch 1.
 */
import { type KafkajsPatch, patchNotInPlace, requireKafkajs } from './kafkajs-patch.js';

interface ConsumerGroupLike {
  generationId: number | null;
  memberId: string | null;
  [REJOIN]?: { readonly generationId: number | null; readonly memberId: string | null; readonly error: unknown };
}

type Heartbeat = (this: ConsumerGroupLike, options: { interval: number }) => Promise<void>;

interface ConsumerGroupPrototype {
  heartbeat: Heartbeat;
}

const REJOIN = Symbol('iqgate.rejoin');

/** kafkajs' errors.js isRebalancing. */
function isRebalancing(error: unknown): boolean {
  const type = (error as { type?: unknown } | null)?.type;
  return type === 'REBALANCE_IN_PROGRESS' || type === 'NOT_COORDINATOR_FOR_GROUP' || type === 'ILLEGAL_GENERATION';
}

function consumerGroupPrototype(): ConsumerGroupPrototype {
  return (requireKafkajs('kafkajs/src/consumer/consumerGroup') as { prototype: ConsumerGroupPrototype }).prototype;
}

/** kafkajs' own method, kept by install(). */
let kafkajsHeartbeat: Heartbeat | undefined;

export const heartbeat: Heartbeat = async function heartbeat(this: ConsumerGroupLike, options: { interval: number }): Promise<void> {
  const rejoin = this[REJOIN];
  if (rejoin !== undefined) {
    if (rejoin.generationId === this.generationId && rejoin.memberId === this.memberId) throw rejoin.error;
    delete this[REJOIN];
  }
  try {
    await kafkajsHeartbeat!.call(this, options);
  } catch (error) {
    if (isRebalancing(error)) this[REJOIN] = { generationId: this.generationId, memberId: this.memberId, error };
    throw error;
  }
};

export const rebalanceHeartbeatPatch: KafkajsPatch = {
  name: 'rebalance-heartbeat',
  install: () => {
    const prototype = consumerGroupPrototype();
    if (prototype.heartbeat !== heartbeat) {
      kafkajsHeartbeat = prototype.heartbeat;
      prototype.heartbeat = heartbeat;
    }
  },
  check: () => {
    if (consumerGroupPrototype().heartbeat !== heartbeat) {
      throw patchNotInPlace('rebalance-heartbeat', 'a kafkajs consumer sends one failed heartbeat per partition before it rejoins a rebalancing group');
    }
  },
};
