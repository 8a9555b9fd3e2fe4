/**
 * bench:scale's baseline: the raw client (librdkafka through @confluentinc/kafka-javascript, or
 * kafkajs) consuming the same input topic in a group of its own, in a process of its own, with no
 * processing, no state and no transactions. It reports its per-partition positions to the
 * orchestrator (bench/scale.ts) like instance B does, and the orchestrator measures its pauses
 * exactly as it measures A's: what the broker and this machine let a bare consumer do in the same
 * windows, so a pause of A's staying tasks can be compared with the raw library's in the same run.
 * After iqgate's roll, a second member joins this group and leaves it again on the orchestrator's
 * word (rollMember): the same roll, on the bare client.
 */
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import type * as Rdkafka from '@confluentinc/kafka-javascript';
import { ProgressTracker, type BaselineConfig, type FromBaseline, type ToBaseline } from './scale-shared.js';

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

/** One member of the baseline's group; `onOwned` hears its whole assignment after every change. */
type StartMember = (onOwned?: (owned: number[]) => void) => Promise<() => Promise<void>>;

/**
 * librdkafka as a bare application would run it next to iqgate: cooperative-sticky, as iqgate's
 * adapter, with offsets committed automatically every 100 ms (so a partition's next member starts
 * about where its last one was) and iqgate's heartbeat interval.
 */
const librdkafka: StartMember = async (onOwned) => {
  const rd = createRequire(import.meta.url)('@confluentinc/kafka-javascript') as typeof Rdkafka;
  const owned = new Set<number>();
  const consumer = new rd.KafkaConsumer({
    'metadata.broker.list': config.brokers.join(','),
    'group.id': groupId,
    'enable.auto.commit': true,
    'auto.commit.interval.ms': 100,
    'partition.assignment.strategy': 'cooperative-sticky',
    'heartbeat.interval.ms': config.heartbeatIntervalMs,
    'isolation.level': 'read_committed',
    'fetch.wait.max.ms': 100,
    rebalance_cb: true,
  }, { 'auto.offset.reset': 'earliest' });
  consumer.on('rebalance', (err, assignment) => {
    const add = err.code === -175; // ERR__ASSIGN_PARTITIONS; -174 revokes
    for (const tp of assignment) {
      if (add) owned.add(tp.partition);
      else owned.delete(tp.partition);
    }
    onOwned?.([...owned]);
  });
  await new Promise<void>((resolve, reject) => consumer.connect({}, (err) => (err ? reject(err) : resolve())));
  consumer.setDefaultConsumeTimeout(100);
  // As iqgate's adapter: wait for the first record only, then take what is ready (without it,
  // consume(n) waits up to the timeout for each of its n records, and a trickle stalls for ~1 s).
  (consumer as unknown as { setDefaultIsTimeoutOnlyForFirstMessage(only: boolean): void }).setDefaultIsTimeoutOnlyForFirstMessage(true);
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
};

/** kafkajs (with iqgate's patches), its default assigner and auto-commit every 100 ms, at iqgate's heartbeat interval. */
const kafkajs: StartMember = async (onOwned) => {
  await import('../src/kafka/kafkajs-patches.js');
  const { Kafka, logLevel } = (await import('kafkajs')).default;
  const consumer = new Kafka({ clientId: groupId, brokers: config.brokers, logLevel: logLevel.ERROR })
    .consumer({ groupId, readUncommitted: false, maxWaitTimeInMs: 100, heartbeatInterval: config.heartbeatIntervalMs });
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => onOwned?.(payload.memberAssignment[config.topic] ?? []));
  await consumer.connect();
  await consumer.subscribe({ topics: [config.topic], fromBeginning: true });
  await consumer.run({
    autoCommit: true,
    autoCommitInterval: 100,
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) tracker.record(batch.partition, Number(m.offset));
    },
  });
  return () => consumer.disconnect();
};

/**
 * The roll (bench/scale.ts, after instance B's): a second member joins the group on `join`,
 * reporting its assignment, and leaves it on `leave` — the same join and leave a bare consumer
 * group goes through, with the same load.
 */
function rollMember(start: StartMember): (message: ToBaseline) => void {
  let stopSecond: Promise<() => Promise<void>> | null = null;
  return (message) => {
    if (message.t === 'join' && stopSecond === null) {
      stopSecond = start((owned) => send({ t: 'owned', owned }));
      stopSecond.catch((error: unknown) => send({ t: 'failed', error: `second member: ${String(error)}` }));
    } else if (message.t === 'leave' && stopSecond !== null) {
      const stopping = stopSecond;
      stopSecond = null;
      void stopping.then((stop) => stop()).then(() => send({ t: 'left' }), (error: unknown) => send({ t: 'failed', error: `second member: ${String(error)}` }));
    }
  };
}

try {
  const start = config.client === 'librdkafka' ? librdkafka : kafkajs;
  const stop = await start();
  process.on('message', rollMember(start));
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
