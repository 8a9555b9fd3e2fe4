/**
 * bench:processing — end-to-end exactly-once wordcount vs a plain kafkajs consume→produce loop
 * (no state, no transactions) on the same broker and the same input, in one run (DESIGN.md §7).
 * Prints one line per figure and writes bench/results/processing.json ([{ name, unit, value }]).
 *
 * The plain loop does the stateless half of wordcount (line → one record per word), which is the
 * least any wordcount must do; the iqgate side does all of it: repartition, count in LevelDB-backed
 * stores, changelog, output, every 100 ms in a Kafka transaction per task.
 *
 * Brokers: KAFKA_BROKERS if set, else a local broker from scripts/kafka/broker.ts.
 * Knobs for experiments (defaults are the runtime's): BENCH_LINES (60000), BENCH_LOG=info (progress
 * lines), BENCH_SLICE_MS, BENCH_FETCH_MB, BENCH_BUFFERED.
 */
import { Figures } from './figures.js';
import '../src/kafka/kafkajs-patches.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { makeLine, produceLines, runWordcount, wordsOf } from '../examples/wordcount/index.js';

const LINES = Number(process.env.BENCH_LINES ?? 60_000);
const PARTITIONS = 4;
const suffix = `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;

async function brokers(): Promise<{ brokers: string[]; stop: () => Promise<void> }> {
  if (process.env.KAFKA_BROKERS) return { brokers: process.env.KAFKA_BROKERS.split(','), stop: async () => {} };
  const { startBroker } = await import('../scripts/kafka/broker.js');
  const broker = await startBroker();
  return { brokers: broker.brokers.split(','), stop: () => broker.stop() };
}

async function waitCaughtUp(admin: Admin, groupId: string, topics: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let done = true;
    for (const topic of topics) {
      const ends = await admin.fetchTopicOffsets(topic);
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      for (const end of ends) {
        const c = Number(committed?.partitions.find((p) => p.partition === end.partition)?.offset ?? -1);
        if (Number(end.high) > 0 && c < Number(end.high)) done = false;
      }
    }
    if (done) return;
    if (Date.now() > deadline) throw new Error(`group ${groupId} did not catch up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function plainLoop(kafka: Kafka, admin: Admin, input: string, output: string): Promise<number> {
  const groupId = `bench-plain-${suffix}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
  const producer = kafka.producer();
  await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topic: input, fromBeginning: true });
  const started = performance.now();
  await consumer.run({
    partitionsConsumedConcurrently: PARTITIONS,
    eachBatch: async ({ batch, heartbeat }) => {
      const messages = batch.messages.flatMap((m) => wordsOf(m.value?.toString() ?? '').map((word) => ({ key: word, value: '1' })));
      // Requests of at most 1000 records, as iqgate's producer sends them (broker message.max.bytes).
      for (let i = 0; i < messages.length; i += 1000) await producer.send({ topic: output, messages: messages.slice(i, i + 1000), acks: -1 });
      await heartbeat();
    },
  });
  await waitCaughtUp(admin, groupId, [input], 120_000);
  const seconds = (performance.now() - started) / 1000;
  await consumer.disconnect();
  await producer.disconnect();
  return LINES / seconds;
}

async function main(): Promise<void> {
  const broker = await brokers();
  const kafka = new Kafka({ clientId: 'bench-processing', brokers: broker.brokers, logLevel: logLevel.ERROR });
  const admin = kafka.admin();
  await admin.connect();
  const input = `bench-lines-${suffix}`;
  const plainOut = `bench-plain-out-${suffix}`;
  const wcOut = `bench-wc-out-${suffix}`;
  const dir = await mkdtemp(join(tmpdir(), 'iqgate-bench-'));
  const figures = new Figures();
  const report = figures.report.bind(figures);
  try {
    await admin.createTopics({ waitForLeaders: true, topics: [input, plainOut, wcOut].map((topic) => ({ topic, numPartitions: PARTITIONS })) });
    await produceLines({ brokers: broker.brokers, topic: input, seed: 42, count: LINES, batchSize: 2000 });

    let totalWords = 0;
    for (let i = 0; i < LINES; i += 1) totalWords += wordsOf(makeLine(42, i)).length;
    const plain = await plainLoop(kafka, admin, input, plainOut);

    const appId = `bench-wc-${suffix}`;
    const delay = monitorEventLoopDelay({ resolution: 10 });
    const started = performance.now();
    const runtime = await runWordcount({
      brokers: broker.brokers, inputTopic: input, outputTopic: wcOut, applicationId: appId,
      stateDir: dir, logLevel: (process.env.BENCH_LOG as 'warn' | undefined) ?? 'warn', sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1_000,
      ...(process.env.BENCH_SLICE_MS ? { processingSliceMs: Number(process.env.BENCH_SLICE_MS) } : {}),
      ...(process.env.BENCH_FETCH_MB ? { fetchMaxBytes: Number(process.env.BENCH_FETCH_MB) * 1048576, fetchMaxBytesPerPartition: Number(process.env.BENCH_FETCH_MB) * 1048576 / 4 } : {}),
      ...(process.env.BENCH_BUFFERED ? { maxBufferedRecordsPerTask: Number(process.env.BENCH_BUFFERED) } : {}),
    });
    delay.enable();
    const progress = process.env.BENCH_LOG === 'info' ? setInterval(() => {
      const tasks = (runtime as unknown as { manager: { localTasks(): Array<{ id: string; state: string; committing: boolean; buffered(): number; hasUncommitted(): boolean; nextOffsets: Map<string, number> }> } }).manager.localTasks();
      console.error(JSON.stringify(runtime.metricsSnapshot()), tasks.map((t) => `${t.id}:${t.state}:${t.committing ? 'C' : ''}${t.hasUncommitted() ? 'U' : ''}:${t.buffered()}:${[...t.nextOffsets.values()].join('/')}`).join(' '));
    }, 2000) : undefined;
    try {
      // Done when every line and every word has been processed in a committed transaction
      // (committed offsets cannot tell: a transactional topic's end is past its last commit marker).
      const deadline = Date.now() + 120_000;
      while (runtime.metricsSnapshot().recordsCommitted < LINES + totalWords) {
        if (Date.now() > deadline) throw new Error(`wordcount did not finish within 120 s: ${JSON.stringify(runtime.metricsSnapshot())}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      clearInterval(progress);
      delay.disable();
    }
    const seconds = (performance.now() - started) / 1000;
    const eos = LINES / seconds;
    const m = runtime.metricsSnapshot();
    await runtime.stop();

    report('plain kafkajs consume→produce', 'records/s', plain);
    report('wordcount exactly-once', 'records/s', eos);
    report('wordcount exactly-once / plain loop', 'ratio', eos / plain);
    report('commit latency p50', 'ms', m.commitLatencyP50Ms);
    report('commit latency p99', 'ms', m.commitLatencyP99Ms);
    report('commit phase p50: wait for sends', 'ms', m.commitPhasesP50Ms.send);
    report('commit phase p50: add offsets', 'ms', m.commitPhasesP50Ms.offsets);
    report('commit phase p50: Kafka commit', 'ms', m.commitPhasesP50Ms.kafkaCommit);
    report('commit phase p50: store commit', 'ms', m.commitPhasesP50Ms.storeCommit);
    report('processing pause p99 (event-loop delay)', 'ms', delay.percentile(99) / 1e6);
    report('processing slice p99', 'ms', m.sliceP99Ms);
    report('commits', 'count', m.commits);
    report('control queue max depth', 'ops', m.controlQueueMaxDepth);
    await figures.write('processing');
  } finally {
    await admin.deleteTopics({ topics: [input, plainOut, wcOut] }).catch(() => undefined);
    await admin.disconnect();
    await rm(dir, { recursive: true, force: true });
    await broker.stop();
  }
}

await main();
