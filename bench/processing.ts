/**
 * bench:processing — end-to-end exactly-once wordcount vs a plain kafkajs consume→produce loop
 * (no state, no transactions) on the same broker and the same input, in one run (DESIGN.md §7).
 * Prints one line per figure and writes bench/results/processing.json ([{ name, unit, value }]).
 *
 * The plain loop (bench/plain-loop.ts) does the stateless half of wordcount (line → one record per
 * word), which is the least any wordcount must do; the iqgate side does all of it: repartition,
 * count in LevelDB-backed stores, changelog, output, every 100 ms in a Kafka transaction per task.
 * The plain loop runs twice, in processes of its own: on kafkajs as published, and on kafkajs
 * with iqgate's patches, which speed up plain producers too (the record encoder above all); a
 * ratio is given against each. Records/s count input lines.
 *
 * Brokers: KAFKA_BROKERS if set, else a local broker from scripts/kafka/broker.ts.
 * Knobs for experiments (defaults are the runtime's): BENCH_LINES (60000), BENCH_LOG=info (progress
 * lines), BENCH_SLICE_MS, BENCH_FETCH_MB, BENCH_BUFFERED.
 */
import { Figures } from './figures.js';
import '../src/kafka/kafkajs-patches.js';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Kafka, logLevel } from 'kafkajs';
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

/** Lines per second of bench/plain-loop.ts in a process of its own, on stock or patched kafkajs. */
function plainLoop(brokerList: readonly string[], input: string, output: string, flavour: 'stock' | 'patched'): number {
  const child = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./plain-loop.ts', import.meta.url)), brokerList.join(','), input, output, String(LINES), flavour], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 180_000,
  });
  if (child.status !== 0) throw new Error(`bench/plain-loop.ts (${flavour}) failed with status ${String(child.status)}: ${child.stdout}`);
  return (JSON.parse(child.stdout.trim().split('\n').pop() ?? '{}') as { linesPerSecond: number }).linesPerSecond;
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
    const stock = plainLoop(broker.brokers, input, plainOut, 'stock');
    const plain = plainLoop(broker.brokers, input, plainOut, 'patched');

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

    report('plain consume→produce, stock kafkajs 2.2.4', 'records/s', stock);
    report('plain consume→produce, kafkajs with iqgate patches', 'records/s', plain);
    report('wordcount exactly-once', 'records/s', eos);
    report('wordcount exactly-once / plain loop on stock kafkajs', 'ratio', eos / stock);
    report('wordcount exactly-once / plain loop on patched kafkajs', 'ratio', eos / plain);
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
