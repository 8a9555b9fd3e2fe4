/**
 * bench:scale's baseline: the raw client (librdkafka through @confluentinc/kafka-javascript, or
 * kafkajs) consuming the same input topic in a group of its own, in a process of its own, with no
 * processing, no state and no transactions. It reports its per-partition positions to the
 * orchestrator (bench/scale.ts) like instance B does, and the orchestrator measures its pauses
 * exactly as it measures A's: what the broker and this machine let a bare consumer do in the same
 * windows, so a pause of A's staying tasks can be compared with the raw library's in the same run.
 */
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import type * as Rdkafka from '@confluentinc/kafka-javascript';
import { ProgressTracker, type BaselineConfig, type FromBaseline } from './scale-shared.js';

const config = JSON.parse(process.argv[2] ?? '{}') as BaselineConfig;
const groupId = `bench-scale-baseline-${config.client}-${Date.now().toString(36)}`;
const tracker = new ProgressTracker(config.partitions);
const send = (message: FromBaseline): void => {
  if (process.connected) process.send?.(message);
};

const reported = new Float64Array(config.partitions);
const report = setInterval(() => {
  const moved: Array<[number, number, number, number]> = [];
  for (let p = 0; p < config.partitions; p += 1) {
    const position = tracker.position[p]!;
    if (position === reported[p]) continue;
    reported[p] = position;
    moved.push([p, position, performance.timeOrigin + tracker.firstSinceMark[p]!, performance.timeOrigin + tracker.lastProgressAt[p]!]);
    tracker.firstSinceMark[p] = Number.NaN;
  }
  if (moved.length > 0) send({ t: 'progress', moved });
}, 50);

async function librdkafka(): Promise<() => Promise<void>> {
  const rd = createRequire(import.meta.url)('@confluentinc/kafka-javascript') as typeof Rdkafka;
  const consumer = new rd.KafkaConsumer({
    'metadata.broker.list': config.brokers.join(','),
    'group.id': groupId,
    'enable.auto.commit': false,
    'isolation.level': 'read_committed',
    'fetch.wait.max.ms': 100,
  }, { 'auto.offset.reset': 'earliest' });
  await new Promise<void>((resolve, reject) => consumer.connect({}, (err) => (err ? reject(err) : resolve())));
  consumer.setDefaultConsumeTimeout(100);
  consumer.subscribe([config.topic]);
  let stopped = false;
  const next = (): void => {
    consumer.consume(1000, (_err, messages) => {
      for (const m of messages ?? []) tracker.record(m.partition, m.offset);
      if (!stopped) setImmediate(next);
    });
  };
  next();
  return async () => {
    stopped = true;
    await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
  };
}

async function kafkajs(): Promise<() => Promise<void>> {
  await import('../src/kafka/kafkajs-patches.js');
  const { Kafka, logLevel } = (await import('kafkajs')).default;
  const consumer = new Kafka({ clientId: groupId, brokers: config.brokers, logLevel: logLevel.ERROR })
    .consumer({ groupId, readUncommitted: false, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topics: [config.topic], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) tracker.record(batch.partition, Number(m.offset));
    },
  });
  return () => consumer.disconnect();
}

try {
  const stop = await (config.client === 'librdkafka' ? librdkafka() : kafkajs());
  send({ t: 'ready' });
  const leave = async (): Promise<void> => {
    clearInterval(report);
    await stop().catch(() => undefined);
    process.exit(0);
  };
  process.on('disconnect', () => void leave());
  process.on('SIGTERM', () => void leave());
} catch (error) {
  send({ t: 'failed', error: String(error) });
  process.exit(1);
}
