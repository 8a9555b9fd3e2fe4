/**
 * The ports contract on the in-memory fake the unit tests run the processing layer on: what the
 * unit tests assume of Kafka is what the real adapters are held to. Fetches happen when the
 * suite calls settle() (the fake's consumers are driven, not running on their own).
 */
import { describeKafkaPortsContract } from '../../contract/kafka-ports-contract.js';
import { FakeBroker, fakePorts } from './fake-kafka.js';

const broker = new FakeBroker();
const noFailures = { send: false, commit: false };

describeKafkaPortsContract('in-memory fake', {
  capabilities: { streamProducer: true, cooperative: false, staticMembership: false },
  waitMs: 2_000,
  testTimeoutMs: 5_000,
  createTopics: async (topics, partitions) => {
    for (const topic of topics) broker.createTopic(topic, partitions);
  },
  createPorts: (config) => fakePorts(broker, config.groupId, noFailures, true, { topics: config.topics, transactionalId: config.transactionalId }),
  createUnreachablePorts: (config) => {
    const away = new FakeBroker();
    away.unreachable = true;
    return fakePorts(away, config.groupId, noFailures, true, { topics: config.topics, transactionalId: config.transactionalId });
  },
  produce: async (topic, records) => {
    for (const r of records) {
      const offset = broker.append(topic, r.partition, r.key === null ? null : Buffer.from(r.key), r.value === null ? null : Buffer.from(r.value), null, { ...r.headers });
      const entry = broker.logs.get(topic)?.[r.partition]?.[offset];
      if (entry !== undefined && r.timestamp !== undefined) entry.record = { ...entry.record, timestamp: r.timestamp };
    }
  },
  readCommitted: async (tp) => broker.readCommitted(tp.topic, tp.partition, 0).records,
  logEnd: async (tp) => broker.logs.get(tp.topic)?.[tp.partition]?.length ?? 0,
  settle: async () => {
    // Let queued promise chains (the stream producer's sends) run, then fetch until dry.
    await new Promise((resolve) => setImmediate(resolve));
    while (broker.deliverAll() > 0) { /* deliver every pending record */ }
  },
  close: async () => undefined,
});
