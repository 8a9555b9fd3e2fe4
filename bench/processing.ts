/**
 * bench:processing — exactly-once wordcount on each Kafka adapter against each client's own
 * ceiling, in one run on one broker and one input (docs/engine.md has the method and figures).
 *
 *   txn.<client>.rate   the client's bare transactional consume→produce loop (bench/txn-loop.ts,
 *                       a process of its own): the stateless half of wordcount (line → one
 *                       record per word), one producer, a transaction every 100 ms with the
 *                       consumed offsets, no state — what the client allows;
 *   eos.<client>.rate   iqgate's wordcount exactly-once on that adapter: all of it (repartition,
 *                       counts in LevelDB-backed stores, changelog, output), commit interval
 *                       100 ms (librdkafka: one transaction for the instance, processing through
 *                       commits; kafkajs: a transaction per task);
 *   eos.<client>.steady.rate   the same run from its first committed transaction to the end
 *                       (start-up and group join left out: Kafka Streams' "steady" figure);
 *   eos.<client>.first.commit   ms from start() to the run's first committed transaction
 *                       (start-up: internal topics, group join, task opening, first fetch);
 *   eos.<client>.cpu    CPU per input line of that run (µs, every thread of the process:
 *                       librdkafka's and libuv's included) — steadier than rates on a shared machine;
 *   eos.librdkafka.commit.p99 / .pause.p99   commit latency and event-loop delay of the librdkafka run;
 *   kstreams.rate / .steady.rate / .first.commit / .cpu   Kafka Streams' own wordcount
 *                       (bench/kstreams/WordCount.java: exactly-once v2, one stream thread,
 *                       commit every 100 ms, its defaults otherwise) on the same broker and
 *                       input (bench/kstreams-wordcount.ts), timed like iqgate's runs: from
 *                       its main() or its first commit to the last count in its output;
 *                       eos.<client>.steady.rate / kstreams.steady.rate compares the two in
 *                       one run, on one broker and input;
 *   consume.<client>.rate / .cost   the client only consuming wordcount's words back (the first
 *                       run's repartition topic; bench/consume-loop.ts): records/s and event-loop
 *                       µs per record; .wordcount.bound = the lines/s at which consuming alone
 *                       (a line and its words) fills one thread;
 *                       consume.librdkafka.wordcount.bound / eos.kafkajs.rate is the most
 *                       eos.librdkafka.rate / eos.kafkajs.rate could be in the run (a wordcount on
 *                       librdkafka whose only cost were consuming; an estimate: the cost per
 *                       record is measured on packed records and applied to lines too), printed
 *                       when both clients run.
 * Rates count input lines per second from start() to the moment the run's output topic holds
 * every word's final count (bench/count-watcher.ts, read_committed; start-up and the group join
 * included, as for the loops); a wrong count fails the run. Prints one line per figure and writes
 * bench/results/processing.json ([{ name, unit, value }]).
 *
 * Brokers: KAFKA_BROKERS if set, else a local broker from scripts/kafka/broker.ts.
 * Knobs: BENCH_LINES (200000, as in the first comparison with Kafka Streams), BENCH_CLIENTS (librdkafka,kafkajs), BENCH_KSTREAMS=0 (no Kafka
 * Streams run; it needs java and, once, mvn), BENCH_LOG=info (progress),
 * BENCH_OPTIONS='{"packRepartition":false}' (runtime options of the wordcount runs),
 * BENCH_SASL_SSL=1 (each client's wordcount once more over the local broker's SASL_SSL listener,
 * SCRAM-SHA-512 and TLS: eos.<client>.sasl_ssl.rate, and its ratio to the plaintext run),
 * BENCH_PROFILE=<dir> (a CPU profile of each wordcount run, start to last commit, written there
 * and summarised on stderr by bench/cpu-profile-summary.ts).
 */
import { benchBroker } from './bench-broker.js';
import { Figures } from './figures.js';
import { createTopicsRetrying } from '../scripts/kafka/create-topics.js';
import '../src/kafka/kafkajs-patches.js';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Session } from 'node:inspector/promises';
import { summariseCpuProfile, type CpuProfile } from './cpu-profile-summary.js';
import { Kafka, logLevel } from 'kafkajs';
import { makeLine, produceLines, runWordcount, wordsOf } from '../examples/wordcount/index.js';
import { kstreamsJars, kstreamsWordcount, type KStreamsRun } from './kstreams-wordcount.js';
import { CountWatcher } from './count-watcher.js';
import type { KafkaSecurityInput } from '../src/kafka/kafka-security.js';

const LINES = Number(process.env.BENCH_LINES ?? 200_000);
const CLIENTS = (process.env.BENCH_CLIENTS ?? 'librdkafka,kafkajs').split(',') as Array<'librdkafka' | 'kafkajs'>;
const PARTITIONS = 4;
const PROFILE_DIR = process.env.BENCH_PROFILE;
const KSTREAMS = process.env.BENCH_KSTREAMS !== '0';
const SASL_SSL = process.env.BENCH_SASL_SSL === '1';
const suffix = `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;

/** Lines per second of bench/txn-loop.ts on `client`, in a process of its own. */
function txnLoop(brokerList: readonly string[], input: string, output: string, client: string): number {
  const child = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./txn-loop.ts', import.meta.url)), brokerList.join(','), input, output, String(LINES), client], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 240_000,
  });
  if (child.status !== 0) throw new Error(`bench/txn-loop.ts (${client}) failed with status ${String(child.status)}: ${child.stdout}`);
  return (JSON.parse(child.stdout.trim().split('\n').pop() ?? '{}') as { linesPerSecond: number }).linesPerSecond;
}

/** bench/consume-loop.ts on `client`, in a process of its own: records/s and event-loop µs per record. */
function consumeLoop(brokerList: readonly string[], topic: string, records: number, client: string): { records: number; recordsPerSecond: number; activeMicrosPerRecord: number } {
  const child = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./consume-loop.ts', import.meta.url)), brokerList.join(','), topic, String(records), client], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 180_000,
  });
  if (child.status !== 0) throw new Error(`bench/consume-loop.ts (${client}) failed with status ${String(child.status)}: ${child.stdout}`);
  return JSON.parse(child.stdout.trim().split('\n').pop() ?? '{}') as { records: number; recordsPerSecond: number; activeMicrosPerRecord: number };
}

/** Lines/s at which consuming alone — a line and its share of the repartitioned words — fills one thread. */
function wordcountBound(run: { readonly records: number; readonly activeMicrosPerRecord: number }): number {
  return 1e6 / (run.activeMicrosPerRecord * ((LINES + run.records) / LINES));
}

interface EosRun {
  readonly rate: number;
  readonly commitP99: number;
  readonly pauseP99: number;
  readonly commits: number;
  /** Lines/s from the first committed transaction to the last (start-up and group join left out, as Kafka Streams' "steady"). */
  readonly steadyRate: number;
  /** µs of CPU per input line, every thread of the process (librdkafka's and libuv's included). */
  readonly cpuPerLine: number;
  /** ms from start() to the first committed transaction. */
  readonly firstCommitMs: number;
}

/** Where a wordcount run's runtime connects, when not to the plaintext listener: the SASL_SSL one. */
interface SecuredRun {
  readonly brokers: string[];
  readonly kafkaSecurity: KafkaSecurityInput;
}

async function eosWordcount(brokerList: string[], input: string, output: string, client: 'librdkafka' | 'kafkajs', counts: ReadonlyMap<string, number>, secured?: SecuredRun): Promise<EosRun> {
  // The run ends when its output holds every final count, as Kafka Streams' run does (CountWatcher).
  const watcher = await CountWatcher.start(brokerList, output, `bench-wc-${client}-${suffix}-check`, counts);
  const dir = await mkdtemp(join(tmpdir(), 'iqgate-bench-'));
  const delay = monitorEventLoopDelay({ resolution: 10 });
  const profiler = PROFILE_DIR === undefined ? undefined : new Session();
  if (profiler !== undefined) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  let runtime: Awaited<ReturnType<typeof runWordcount>> | undefined;
  try {
    const started = performance.now();
    const cpu0 = process.cpuUsage();
    let firstCommitAt = 0;
    runtime = await runWordcount({
      brokers: secured?.brokers ?? brokerList, inputTopic: input, outputTopic: output, applicationId: `bench-wc-${client}-${secured === undefined ? '' : 'sasl-'}${suffix}`, kafkaClient: client,
      ...(secured === undefined ? {} : { kafkaSecurity: secured.kafkaSecurity }),
      stateDir: dir, logLevel: (process.env.BENCH_LOG as 'info' | undefined) ?? 'warn', sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1_000,
      ...(JSON.parse(process.env.BENCH_OPTIONS ?? '{}') as Record<string, unknown>),
    });
    const running = runtime;
    delay.enable();
    const progress = process.env.BENCH_LOG === 'info' ? setInterval(() => console.error(client, JSON.stringify(running.metricsSnapshot())), 2000) : undefined;
    try {
      const deadline = Date.now() + 240_000;
      while (watcher.doneAt === 0) {
        if (firstCommitAt === 0 && running.metricsSnapshot().recordsCommitted > 0) firstCommitAt = performance.now();
        watcher.check();
        if (Date.now() > deadline) throw new Error(`wordcount on ${client} did not finish within 240 s: ${watcher.progress()}, ${JSON.stringify(running.metricsSnapshot())}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      clearInterval(progress);
      delay.disable();
    }
    const ended = watcher.doneAt;
    const cpu = process.cpuUsage(cpu0);
    watcher.check();
    if (profiler !== undefined && PROFILE_DIR !== undefined) {
      const { profile } = await profiler.post('Profiler.stop');
      profiler.disconnect();
      await mkdir(PROFILE_DIR, { recursive: true });
      const file = join(PROFILE_DIR, `processing-eos-${client}.cpuprofile`);
      await writeFile(file, JSON.stringify(profile));
      console.error(summariseCpuProfile(profile as unknown as CpuProfile, `eos ${client} (${file})`));
    }
    const m = running.metricsSnapshot();
    return { rate: LINES / ((ended - started) / 1000), steadyRate: LINES / ((ended - firstCommitAt) / 1000), cpuPerLine: (cpu.user + cpu.system) / LINES, firstCommitMs: firstCommitAt - started, commitP99: m.commitLatencyP99Ms, pauseP99: delay.percentile(99) / 1e6, commits: m.commits };
  } finally {
    await runtime?.stop();
    await watcher.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const kstreamsLibs = KSTREAMS ? kstreamsJars() : undefined; // java and Kafka Streams' jars, before any run
  const broker = await benchBroker({ secured: SASL_SSL });
  if (SASL_SSL && broker.secured === undefined) throw new Error('BENCH_SASL_SSL=1 needs the local broker (unset KAFKA_BROKERS)');
  const kafka = new Kafka({ clientId: 'bench-processing', brokers: broker.brokers, logLevel: logLevel.ERROR });
  const admin = kafka.admin();
  await admin.connect();
  const input = `bench-lines-${suffix}`;
  const outputs = [
    ...CLIENTS.flatMap((c) => [`bench-txn-out-${c}-${suffix}`, `bench-wc-out-${c}-${suffix}`, ...(SASL_SSL ? [`bench-wc-sasl-out-${c}-${suffix}`] : [])]),
    ...(KSTREAMS ? [`bench-kstreams-out-${suffix}`] : []),
  ];
  const figures = new Figures();
  const report = figures.report.bind(figures);
  try {
    await createTopicsRetrying(admin, [input, ...outputs].map((topic) => ({ topic, numPartitions: PARTITIONS })));
    await produceLines({ brokers: broker.brokers, topic: input, seed: 42, count: LINES, batchSize: 2000 });
    const counts = new Map<string, number>();
    for (let i = 0; i < LINES; i += 1) for (const word of wordsOf(makeLine(42, i))) counts.set(word, (counts.get(word) ?? 0) + 1);

    const txn = new Map<string, number>();
    const eos = new Map<string, EosRun>();
    for (const client of CLIENTS) txn.set(client, txnLoop(broker.brokers, input, `bench-txn-out-${client}-${suffix}`, client));
    for (const client of CLIENTS) eos.set(client, await eosWordcount(broker.brokers, input, `bench-wc-out-${client}-${suffix}`, client, counts));
    // The same runs over SASL_SSL (SCRAM-SHA-512 as the super user admin, TLS to the broker's own CA).
    const sasl = new Map<string, EosRun>();
    if (broker.secured !== undefined) {
      const secured: SecuredRun = {
        brokers: [broker.secured.brokers],
        kafkaSecurity: { protocol: 'SASL_SSL', sasl: { mechanism: 'SCRAM-SHA-512', username: 'admin', password: broker.secured.users.admin }, ssl: { ca: broker.secured.caPem } },
      };
      for (const client of CLIENTS) sasl.set(client, await eosWordcount(broker.brokers, input, `bench-wc-sasl-out-${client}-${suffix}`, client, counts, secured));
    }
    // Kafka Streams last: a failure of its run is reported, and iqgate's figures are still written.
    let kstreams: KStreamsRun | undefined;
    if (kstreamsLibs !== undefined) {
      try {
        kstreams = await kstreamsWordcount({ brokers: broker.brokers, input, output: `bench-kstreams-out-${suffix}`, applicationId: `bench-kstreams-${suffix}`, lines: LINES, expected: counts, libs: kstreamsLibs });
      } catch (error) {
        console.error(`the Kafka Streams run failed: ${(error as Error).stack ?? String(error)}`);
        process.exitCode = 1;
      }
    }

    // The words the first wordcount run wrote to its repartition topic, as wordcount consumes
    // them: packed (a Kafka record carries up to 128 words), so the number of Kafka records is
    // read, not known (0: until the topic is read).
    const repartition = `bench-wc-${CLIENTS[0] ?? 'librdkafka'}-${suffix}-words-repartition`;
    const consume = new Map(CLIENTS.map((client) => [client, consumeLoop(broker.brokers, repartition, 0, client)] as const));

    for (const client of CLIENTS) report(`txn.${client}.rate`, 'lines/s', txn.get(client) ?? 0);
    for (const client of CLIENTS) report(`eos.${client}.rate`, 'lines/s', eos.get(client)?.rate ?? 0);
    for (const client of CLIENTS) {
      const run = eos.get(client);
      if (run === undefined) continue;
      report(`eos.${client}.steady.rate`, 'lines/s', run.steadyRate);
      report(`eos.${client}.first.commit`, 'ms', run.firstCommitMs);
      report(`eos.${client}.cpu`, 'µs/line', run.cpuPerLine);
      report(`eos.${client}.commit.p99`, 'ms', run.commitP99);
      report(`eos.${client}.pause.p99`, 'ms', run.pauseP99);
      report(`eos.${client}.commits`, 'count', run.commits);
      report(`eos.${client}.rate / txn.${client}.rate`, 'ratio', run.rate / (txn.get(client) ?? Number.NaN));
    }
    for (const client of CLIENTS) {
      const run = sasl.get(client);
      if (run === undefined) continue;
      report(`eos.${client}.sasl_ssl.rate`, 'lines/s', run.rate);
      report(`eos.${client}.sasl_ssl.steady.rate`, 'lines/s', run.steadyRate);
      report(`eos.${client}.sasl_ssl.cpu`, 'µs/line', run.cpuPerLine);
      report(`eos.${client}.sasl_ssl.rate / eos.${client}.rate`, 'ratio', run.rate / (eos.get(client)?.rate ?? Number.NaN));
    }
    for (const client of CLIENTS) {
      const run = consume.get(client);
      if (run === undefined) continue;
      report(`consume.${client}.rate`, 'records/s', run.recordsPerSecond);
      report(`consume.${client}.cost`, 'µs/record', run.activeMicrosPerRecord);
      // Consuming alone (a line, and its share of the repartition records), on one thread, bounds
      // wordcount at this many lines/s.
      report(`consume.${client}.repartition.records`, 'count', run.records);
      report(`consume.${client}.wordcount.bound`, 'lines/s', wordcountBound(run));
    }
    const rd = eos.get('librdkafka');
    const js = eos.get('kafkajs');
    if (rd !== undefined && js !== undefined) {
      report('eos.librdkafka.rate / eos.kafkajs.rate', 'ratio', rd.rate / js.rate);
      // The most that ratio could be in this run: librdkafka only consuming what wordcount consumes.
      const bound = consume.get('librdkafka');
      if (bound !== undefined) report('consume.librdkafka.wordcount.bound / eos.kafkajs.rate', 'ratio', wordcountBound(bound) / js.rate);
    }
    if (kstreams !== undefined) {
      report('kstreams.rate', 'lines/s', kstreams.rate);
      report('kstreams.steady.rate', 'lines/s', kstreams.steadyRate);
      report('kstreams.first.commit', 'ms', kstreams.firstCommitMs);
      report('kstreams.cpu', 'µs/line', kstreams.cpuPerLine);
      for (const client of CLIENTS) {
        const run = eos.get(client);
        if (run === undefined) continue;
        report(`eos.${client}.rate / kstreams.rate`, 'ratio', run.rate / kstreams.rate);
        report(`eos.${client}.steady.rate / kstreams.steady.rate`, 'ratio', run.steadyRate / kstreams.steadyRate);
      }
    }
    await figures.write('processing');
  } finally {
    await admin.deleteTopics({ topics: [input, ...outputs] }).catch(() => undefined);
    await admin.disconnect();
    await broker.stop();
  }
}

await main();
