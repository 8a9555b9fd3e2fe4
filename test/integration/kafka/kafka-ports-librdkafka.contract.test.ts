/**
 * The ports contract on the librdkafka adapter (createRdkafkaPorts), against the real broker:
 * cooperative-sticky consumer, static membership, the instance's transactional stream producer
 * (KIP-447).
 *
 * The native module must load: CI builds it, so a missing or broken build fails this file
 * (it is not skipped).
 */
import { createRdkafkaPorts } from '../../../src/kafka/librdkafka/rdkafka-ports.js';
import { loadLibrdkafka } from '../../../src/kafka/librdkafka/native.js';
import { describeKafkaPortsContract } from '../../contract/kafka-ports-contract.js';
import { FAST_GROUP, realBrokerDriver } from './real-broker-driver.js';

const native = loadLibrdkafka();
if (!native.ok) throw new Error(`@confluentinc/kafka-javascript does not load, so the librdkafka adapter cannot be tested: ${native.reason}`);
const rd = native.module;

describeKafkaPortsContract('librdkafka', realBrokerDriver({
  capabilities: { streamProducer: true, cooperative: true, staticMembership: true },
  createPorts: (brokers, config) => createRdkafkaPorts(rd, {
    brokers,
    clientId: `contract-${config.groupId}`,
    logLevel: 'nothing',
    transactionalId: config.transactionalId,
    transactionTimeoutMs: 10_000,
    consumer: {
      ...FAST_GROUP,
      groupId: config.groupId,
      topics: config.topics,
      ...(config.groupInstanceId === undefined ? {} : { groupInstanceId: config.groupInstanceId }),
      ...(config.sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs: config.sessionTimeoutMs }),
    },
  }),
}));
