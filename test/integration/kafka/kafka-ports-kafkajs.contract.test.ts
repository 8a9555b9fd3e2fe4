/**
 * The ports contract on the kafkajs adapter (createKafkaPorts), against the real broker: eager
 * rebalancing, one transactional producer per task, no stream producer.
 */
import { createKafkaPorts } from '../../../src/kafka/kafka-ports.js';
import { describeKafkaPortsContract } from '../../contract/kafka-ports-contract.js';
import { FAST_GROUP, realBrokerDriver } from './real-broker-driver.js';

describeKafkaPortsContract('kafkajs', realBrokerDriver({
  capabilities: { streamProducer: false, cooperative: false, staticMembership: false },
  createPorts: (brokers, config) => createKafkaPorts({
    brokers,
    clientId: `contract-${config.groupId}`,
    logLevel: 'nothing',
    transactionTimeoutMs: 10_000,
    consumer: { ...FAST_GROUP, groupId: config.groupId, topics: config.topics, taskGroups: [config.topics] },
  }),
}));
