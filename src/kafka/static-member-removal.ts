/**
 * Takes a static group member (KIP-345: `group.instance.id`) out of its group at once.
 *
 * librdkafka sends no LeaveGroup when a static member closes. That is the point of static
 * membership: a restart on the same instance id takes the member's place back without a
 * rebalance. The price is that a member gone for good (a scale-down) keeps its partitions until
 * its session times out (`session.timeout.ms`), and only then do the other members get them.
 *
 * For a member that goes for good, this sends what Kafka's Java AdminClient sends for
 * `removeMembersFromConsumerGroup` (and Kafka Streams for `close(CloseOptions.leaveGroup(true))`):
 * LeaveGroup v3 naming the group instance id with an unknown member id. The coordinator removes
 * the static member, whatever its current member id, and rebalances the group at once.
 *
 * kafkajs' Broker.leaveGroup() passes only a member id, so the request is built from kafkajs'
 * own v3 encoder and sent on the coordinator's connection, from a Cluster of our own
 * (kafkajs-cluster.ts). The member is closed before this is sent: a member that still heartbeats
 * would only join again.
 */
import type { Cluster, Kafka } from 'kafkajs';
import { toIqgateError } from './kafka-errors.js';
import { DetachedCluster } from './kafkajs-cluster.js';
import { requireKafkajs } from './kafkajs-patches/kafkajs-patch.js';

/** kafkajs' LeaveGroup request versions (src/protocol/requests/leaveGroup/index.js). */
interface LeaveGroupProtocol {
  protocol(options: { version: number }): (request: { groupId: string; memberId: string; groupInstanceId: string }) => unknown;
}

/** The part of kafkajs' Broker used here (src/broker/index.js; not in its type declarations). */
interface CoordinatorBroker {
  readonly connectionPool: { send(protocolRequest: unknown): Promise<unknown> };
}

/** Answers that name a coordinator that moved or is not ready yet: look it up again and retry. */
const COORDINATOR_MOVED = new Set(['NOT_COORDINATOR', 'COORDINATOR_NOT_AVAILABLE', 'COORDINATOR_LOAD_IN_PROGRESS']);
const ATTEMPTS = 3;

/**
 * Removes the member with `groupInstanceId` from `groupId`. A member that is not in the group
 * (UNKNOWN_MEMBER_ID: its session already timed out, or it never joined) counts as removed.
 * Failures are IqgateErrors; the member then leaves when its session times out, as without this.
 */
export async function removeStaticMember(kafka: Kafka, clientTag: string, groupId: string, groupInstanceId: string): Promise<void> {
  const leaveGroup = (requireKafkajs('kafkajs/src/protocol/requests/leaveGroup/index.js') as LeaveGroupProtocol).protocol({ version: 3 });
  const detached = new DetachedCluster(kafka, `${clientTag}-leave`);
  try {
    await detached.connect();
    for (let attempt = 1; ; attempt += 1) {
      try {
        const coordinator = await coordinatorOf(detached.cluster, groupId);
        await coordinator.connectionPool.send(leaveGroup({ groupId, memberId: '', groupInstanceId }));
        return;
      } catch (error) {
        const type = (error as { type?: string }).type;
        if (type === 'UNKNOWN_MEMBER_ID') return;
        if (attempt >= ATTEMPTS || type === undefined || !COORDINATOR_MOVED.has(type)) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      }
    }
  } catch (error) {
    throw toIqgateError(error, `remove static member ${groupInstanceId} from group ${groupId}`);
  } finally {
    await detached.disconnect();
  }
}

async function coordinatorOf(cluster: Cluster, groupId: string): Promise<CoordinatorBroker> {
  return (await cluster.findGroupCoordinator({ groupId })) as unknown as CoordinatorBroker;
}
