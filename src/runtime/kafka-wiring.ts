/**
 * Builds the runtime's Kafka ports from its options: picks the client (select-kafka-client.ts),
 * logs the choice once, and wires either adapter with the same group settings. The one place
 * where runtime options meet a Kafka client's configuration.
 */
import type { Logger } from 'pino';
import { IqgateError } from '../errors.js';
import { createRdkafkaPorts } from '../kafka/librdkafka/rdkafka-ports.js';
import { createKafkaPorts } from '../kafka/kafka-ports.js';
import { describeKafkaSecurity } from '../kafka/kafka-security.js';
import { selectKafkaClient } from '../kafka/select-kafka-client.js';
import type { KafkaPorts } from '../processing/ports.js';
import { planSubTopologies } from '../processing/sub-topology-plan.js';
import type { Topology } from '../processing/topology.js';
import type { GroupSelf } from '../processing/join-warmup.js';
import { groupMemberOptions, readGroupMember } from './group-member-file.js';
import { instanceIdFor } from './instance-id.js';
import { sourceTopicGroups } from './prepare-topics.js';
import type { RuntimeOptions } from './runtime-options.js';

export interface KafkaWiring {
  readonly options: RuntimeOptions;
  readonly topology: Topology;
  readonly advertisedUrl: string | undefined;
  readonly logger: Logger;
}

export function createRuntimePorts({ options: o, topology, advertisedUrl, logger }: KafkaWiring): KafkaPorts {
  const groups = sourceTopicGroups(topology, o.applicationId);
  const coPartitioned = planSubTopologies(topology, o.applicationId).some((plan) => plan.sourceTopics.length > 1);
  const selected = selectKafkaClient(o.kafkaClient, { routing: advertisedUrl !== undefined, coPartitioned });
  // What the security settings are, never their secrets.
  logger.info({ kafkaClient: selected.client, reason: selected.reason, kafkaSecurity: describeKafkaSecurity(o.kafkaSecurity) }, `Kafka client: ${selected.client}`);
  const security = o.kafkaSecurity === undefined ? {} : { security: o.kafkaSecurity };
  const log = logger.child({ component: selected.client });
  const group = {
    groupId: o.applicationId,
    topics: groups.flat(),
    sessionTimeoutMs: o.sessionTimeoutMs,
    heartbeatIntervalMs: o.heartbeatIntervalMs,
    rebalanceTimeoutMs: o.rebalanceTimeoutMs,
    maxWaitTimeMs: o.maxWaitTimeMs,
  };
  if (o.clientProperties !== undefined && selected.client !== 'librdkafka') {
    throw new IqgateError('INVALID_CONFIG', `clientProperties are librdkafka properties, and the Kafka client is ${selected.client} (${selected.reason})`);
  }
  if (selected.client === 'librdkafka') {
    const instanceId = instanceIdFor(o.stateDir);
    const transactionTimeoutMs = o.transactionTimeoutMs ?? 10_000;
    if (o.stateDir !== undefined) {
      logger.info({ groupInstanceId: `${o.applicationId}-${instanceId}` }, 'static group membership: a restart on this state directory takes its place in the group back at once');
      // A member that dies with its transaction open keeps its partitions until its session
      // expires; their new owners then wait for that transaction to time out before they restore
      // (the changelog's stable end stops at its records). With the transaction timeout below the
      // session timeout, it has timed out by the time the partitions move.
      if (o.processingGuarantee === 'exactly_once' && transactionTimeoutMs >= o.sessionTimeoutMs) {
        logger.warn({ transactionTimeoutMs, sessionTimeoutMs: o.sessionTimeoutMs }, 'transactionTimeoutMs is not below sessionTimeoutMs: when an instance dies, the new owners of its partitions wait for its open transaction to time out before they run');
      }
    }
    return createRdkafkaPorts(selected.module, {
      brokers: o.brokers,
      clientId: o.clientId,
      ...security,
      ...(o.clientProperties === undefined ? {} : { clientProperties: o.clientProperties }),
      logLevel: o.kafkaLogLevel,
      log,
      transactionTimeoutMs,
      transactionalId: `${o.applicationId}-${instanceId}`,
      fenceDepartedMembers: o.processingGuarantee === 'exactly_once' && advertisedUrl !== undefined,
      // Static membership only where the id survives a restart (a state directory): a fresh
      // id per start would leave a crashed member holding its partitions until its session ends.
      consumer: {
        ...group,
        ...(coPartitioned ? { coPartitioned } : {}),
        ...(o.stateDir === undefined ? {} : { groupInstanceId: `${o.applicationId}-${instanceId}` }),
        ...(advertisedUrl === undefined ? {} : {
          advertisedUrl,
          onOwnersError: (error: unknown) => logger.warn({ err: error }, 'learning the partition owners (describeGroup) failed; routing tries again shortly'),
        }),
      },
    });
  }
  return createKafkaPorts({
    brokers: o.brokers,
    clientId: o.clientId,
    ...security,
    logLevel: o.kafkaLogLevel,
    log,
    transactionTimeoutMs: o.transactionTimeoutMs ?? 60_000,
    consumer: {
      ...group,
      taskGroups: groups,
      maxBytesPerPartition: o.fetchMaxBytesPerPartition,
      maxBytes: o.fetchMaxBytes,
      ...(advertisedUrl === undefined ? {} : { advertisedUrl }),
      onOwnersError: (error) => logger.warn({ err: error }, 'learning the partition owners (describeGroup) failed; routing waits for the next rebalance'),
      ...(o.stateDir === undefined ? {} : groupMemberOptions(o.stateDir, o.applicationId, logger)),
    },
  });
}

/**
 * What tells this instance among its group's members (join-warmup.ts): the transactional id a
 * librdkafka member advertises (its instance id, kept in the state directory), and the member
 * id a kafkajs member recorded there. Without a state directory every start is a new instance.
 */
export function groupSelfOf(o: RuntimeOptions): GroupSelf {
  if (o.stateDir === undefined) return {};
  const previousMemberId = readGroupMember(o.stateDir, o.applicationId);
  return { transactionalId: `${o.applicationId}-${instanceIdFor(o.stateDir)}`, ...(previousMemberId === undefined ? {} : { previousMemberId }) };
}
