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
 * would only join again. The removal has a deadline of its own (a stop must not spend its budget
 * here): past it, the cluster is disconnected and the member leaves when its session times out.
 */
import type { Cluster, Kafka } from 'kafkajs';
import { IqgateError } from '../errors.js';
import { toIqgateError } from './kafka-errors.js';
import { DetachedCluster } from './kafkajs-cluster.js';
import { requireKafkajs } from './kafkajs-patches/kafkajs-patch.js';

/** kafkajs' LeaveGroup request versions (src/protocol/requests/leaveGroup/index.js). */
interface LeaveGroupProtocol {
  protocol(options: { version: number }): (request: { groupId: string; memberId: string; groupInstanceId: string }) => unknown;
}

/** The part of kafkajs' Broker used here (src/broker/index.js; not in its type declarations). */
export interface CoordinatorBroker {
  readonly connectionPool: { send(protocolRequest: unknown): Promise<unknown> };
}

/** What the removal needs of a kafkajs Cluster (a seam for the unit tests). */
export interface CoordinatorLink {
  connect(): Promise<void>;
  coordinator(groupId: string): Promise<CoordinatorBroker>;
  disconnect(): Promise<void>;
}

/**
 * kafkajs' names (src/protocol/error.js) for a coordinator that moved or is not ready yet
 * (codes 16, 15, 14): look it up again and retry.
 */
const COORDINATOR_MOVED = new Set(['NOT_COORDINATOR_FOR_GROUP', 'GROUP_COORDINATOR_NOT_AVAILABLE', 'GROUP_LOAD_IN_PROGRESS']);
const ATTEMPTS = 3;
export const REMOVAL_DEADLINE_MS = 5_000;

/**
 * Removes the member with `groupInstanceId` from `groupId`. A member that is not in the group
 * (UNKNOWN_MEMBER_ID: its session already timed out, or it never joined) counts as removed.
 * Failures, and no answer within REMOVAL_DEADLINE_MS, are IqgateErrors; the member then leaves
 * when its session times out, as without this.
 */
/** A removal whose connection and coordinator lookup start now, while the member still commits and closes. */
export interface PreparedRemoval {
  /** Sends the LeaveGroup (call once the member is closed); then disconnects. */
  remove(): Promise<void>;
  /** Not needed after all (the stop kept the member's place): disconnects. */
  discard(): Promise<void>;
}

/**
 * Connects and finds the group's coordinator at once, so that remove(), called once the member
 * has committed and closed (a scale-down's stop), only sends the LeaveGroup: the partitions'
 * new owners hear of the departure that much sooner. A failure here is only remembered: the
 * removal's own attempts (and deadline) start from remove().
 */
export function prepareStaticMemberRemoval(kafka: Kafka, clientTag: string, groupId: string, groupInstanceId: string): PreparedRemoval {
  const detached = new DetachedCluster(kafka, `${clientTag}-leave`);
  let connected: Promise<void> | null = detached.connect();
  let found: Promise<CoordinatorBroker> | null = connected.then(() => coordinatorOf(detached.cluster, groupId));
  connected.catch(() => undefined);
  found.catch(() => undefined);
  return {
    remove: () => removeThrough({
      // The prepared attempt first; a failed one, and every retry, asks again.
      connect: () => {
        const prepared = connected;
        connected = null;
        return prepared?.catch(() => detached.connect()) ?? detached.connect();
      },
      coordinator: (group) => {
        const prepared = found;
        found = null;
        return prepared?.catch(() => coordinatorOf(detached.cluster, group)) ?? coordinatorOf(detached.cluster, group);
      },
      disconnect: () => detached.disconnect(),
    }, groupId, groupInstanceId),
    discard: () => detached.disconnect().catch(() => undefined),
  };
}

export async function removeThrough(link: CoordinatorLink, groupId: string, groupInstanceId: string, deadlineMs = REMOVAL_DEADLINE_MS): Promise<void> {
  const leaveGroup = (requireKafkajs('kafkajs/src/protocol/requests/leaveGroup/index.js') as LeaveGroupProtocol).protocol({ version: 3 });
  const context = `remove static member ${groupInstanceId} from group ${groupId}`;
  let expired = false;
  const attempts = async (): Promise<void> => {
    await link.connect();
    for (let attempt = 1; !expired; attempt += 1) {
      try {
        const coordinator = await link.coordinator(groupId);
        if (expired) return;
        await coordinator.connectionPool.send(leaveGroup({ groupId, memberId: '', groupInstanceId }));
        return;
      } catch (error) {
        const type = (error as { type?: string }).type;
        if (type === 'UNKNOWN_MEMBER_ID') return;
        if (attempt >= ATTEMPTS || type === undefined || !COORDINATOR_MOVED.has(type)) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      }
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      expired = true;
      reject(new IqgateError('KAFKA_ERROR', `${context}: no answer within ${deadlineMs} ms`, { retriable: true }));
    }, deadlineMs);
  });
  try {
    await Promise.race([attempts(), deadline]);
  } catch (error) {
    throw toIqgateError(error, context);
  } finally {
    clearTimeout(timer);
    await link.disconnect();
  }
}

async function coordinatorOf(cluster: Cluster, groupId: string): Promise<CoordinatorBroker> {
  return (await cluster.findGroupCoordinator({ groupId })) as unknown as CoordinatorBroker;
}
