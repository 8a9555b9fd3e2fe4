/**
 * bench:restart — time from a restart after SIGKILL to serving: from process spawn to the first
 * query answered by every partition without a failure, on a store of 1 M keys over 4 partitions
 * (issue 9, item 3: target ≤ 1 s).
 *
 * Set-up (not timed): BENCH_KEYS records on a 4-partition input topic, one instance of
 * `npm start`'s entry on bench/restart-app.ts (the topic as a table in the store `kv`)
 * materializes them into its state directory, and is SIGKILLed once everything is committed.
 * Then BENCH_RUNS times: spawn the same command on the same state directory, poll
 * `range(store: "kv", first: 1)` over HTTP until all 4 partitions answer without failure,
 * SIGKILL. Idle input: a restart has no changelog tail to replay.
 *
 * Figures (median over the runs, ms), each a phase of the one before it:
 *   restart.serving           spawn → first query answered by all 4 partitions (the headline)
 *   restart.node_start        spawn → the process's time origin (the node binary starting)
 *   restart.module_load       → Runtime.start() (loading main, the loader, iqgate, the app module)
 *   restart.store_open        → the state directory (LevelDB) open
 *   restart.topics            → the Kafka client created, topics checked
 *   restart.group_join        → the first assignment applied
 *   restart.restore           → every task RUNNING (changelog end read, tail replayed)
 *   restart.first_query       → a query answered without failure (serve(), the URL, the poll)
 *   restart.cpu               CPU time the process used up to that answer (user + system, every
 *                             thread; Linux): what the wall-clock figures cost a quiet machine
 * The phases come from the instance's 'start-up timings' log line (src/runtime/runtime.ts).
 *
 * The command: `node [--import tsx] <entry>`, entry the compiled `dist/src/main.js` (what
 * `npm start` and the Docker image run; the npm script builds first) unless `--entry <path>`
 * (`--entry src/main.ts --app bench/restart-app.ts`: the sources under tsx);
 * `--node-arg <arg>` adds node arguments (repeatable); `.ts` entries get `--import tsx`;
 * `--app <path>` another application module (default bench/restart-app.mjs; the .ts ones need
 * tsx); several `--app`s take turns in each
 * run on the same state directory, the first reported as restart.*, the others as
 * restart.<module file name>.* (bench/restart-app-full.ts imports 'iqgate' instead of
 * 'iqgate/app': every module loads before the runtime starts).
 * Brokers: KAFKA_BROKERS if set, else a local broker. Knobs: BENCH_KEYS (1000000),
 * BENCH_RUNS (5), BENCH_CLIENT (auto | librdkafka | kafkajs), BENCH_KEEP=1 keeps the state dir.
 * Writes bench/results/restart.json.
 */
import '../src/kafka/kafkajs-patches.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import type { StartupTimings } from '../src/runtime/runtime.js';
import { benchBroker } from './bench-broker.js';
import { Figures } from './figures.js';
import { createTopicsRetrying } from '../scripts/kafka/create-topics.js';
import { Buffer } from 'node:buffer';

const { values: args } = parseArgs({ options: {
  entry: { type: 'string', default: 'dist/src/main.js' },
  app: { type: 'string', multiple: true, default: ['bench/restart-app.mjs'] },
  'node-arg': { type: 'string', multiple: true, default: [] },
} });
const ENTRY = args.entry;
const APPS = args.app;
const NODE_ARGS = [...(ENTRY.endsWith('.ts') ? ['--import', 'tsx'] : []), ...args['node-arg']];
const KEYS = Number(process.env.BENCH_KEYS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const PARTITIONS = 4;
const suffix = `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
const APP_ID = `restart-bench-${suffix}`;
const TOPIC = `${APP_ID}-in`;

const log = (line: string): void => { process.stderr.write(`${line}\n`); };

/** KEYS distinct keys, ~50 bytes of value each, spread over the partitions by key. */
async function produceKeys(kafka: Kafka): Promise<void> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const value = 'v'.repeat(48);
  const batch = 20_000;
  const inFlight: Array<Promise<unknown>> = [];
  for (let from = 0; from < KEYS; from += batch) {
    const messages = [];
    for (let i = from; i < Math.min(KEYS, from + batch); i += 1) messages.push({ key: `key-${i.toString().padStart(8, '0')}`, value });
    inFlight.push(producer.send({ topic: TOPIC, acks: 1, messages }));
    if (inFlight.length >= 4) await inFlight.shift();
  }
  await Promise.all(inFlight);
  await producer.disconnect();
}

interface Instance {
  readonly child: ChildProcess;
  readonly spawnedAt: number;
  url(): Promise<string>;
  timings(): Promise<StartupTimings>;
  output(): string;
  kill(): Promise<void>;
}

function startInstance(brokerList: readonly string[], stateDir: string, app: string): Instance {
  const spawnedAt = Date.now();
  const child = spawn(process.execPath, [...NODE_ARGS, ENTRY], {
    env: {
      ...process.env,
      KAFKA_BROKERS: brokerList.join(','),
      IQGATE_APP: app,
      IQGATE_APP_ID: APP_ID,
      IQGATE_STATE_DIR: stateDir,
      IQGATE_LOG_FORMAT: 'json',
      IQGATE_LOG_LEVEL: 'info',
      ...(process.env.BENCH_CLIENT ? { IQGATE_KAFKA_CLIENT: process.env.BENCH_CLIENT } : {}),
      RESTART_TOPIC: TOPIC,
      PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let url: string | undefined;
  let timings: StartupTimings | undefined;
  const waiters = new Set<() => void>();
  const onLine = (line: string): void => {
    const graphiql = /^GraphiQL: (\S+)/.exec(line);
    if (graphiql) url = graphiql[1];
    if (line.startsWith('{') && line.includes('"start-up timings"')) timings = (JSON.parse(line) as { startupTimings: StartupTimings }).startupTimings;
    for (const wake of waiters) wake();
  };
  let pending = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) onLine(line);
  });
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => { for (const wake of waiters) wake(); resolve(); }));
  const waitFor = async <T>(what: string, get: () => T | undefined, timeoutMs = 300_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = get();
      if (value !== undefined) return value;
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the instance exited before ${what}:\n${output.slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms:\n${output.slice(-4000)}`);
      await new Promise<void>((resolve) => {
        waiters.add(resolve);
        setTimeout(resolve, 1000).unref();
      }).finally(() => undefined);
      waiters.clear();
    }
  };
  return {
    child,
    spawnedAt,
    url: () => waitFor('GraphiQL URL', () => url),
    timings: () => waitFor('start-up timings', () => timings, 30_000),
    output: () => output,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Polls until one range query is answered by every partition without failure; returns when (epoch ms). */
async function firstFullAnswer(url: string): Promise<number> {
  const body = JSON.stringify({ query: '{ range(store: "kv", first: 1) { partitions { partition failure { reason } } } }' });
  for (;;) {
    try {
      const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const answer = (await response.json()) as { data?: { range?: { partitions: Array<{ failure: unknown }> } } };
      const partitions = answer.data?.range?.partitions ?? [];
      if (partitions.length === PARTITIONS && partitions.every((p) => p.failure === null)) return Date.now();
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

async function committedEverything(kafka: Kafka): Promise<boolean> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ends = await admin.fetchTopicOffsets(TOPIC);
    const [committed] = await admin.fetchOffsets({ groupId: APP_ID, topics: [TOPIC] });
    return ends.every((end) => committed?.partitions.find((p) => p.partition === end.partition)?.offset === end.high);
  } finally {
    await admin.disconnect();
  }
}

/**
 * CPU time (user + system, all threads) the process has used so far, from /proc/<pid>/stat
 * (Linux; fields 14 and 15 in clock ticks, 100 per second); undefined elsewhere. Unlike the
 * wall-clock phases it hardly depends on what else the machine runs.
 */
function cpuTimeMs(pid: number | undefined): number | undefined {
  try {
    const stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function main(): Promise<void> {
  const broker = await benchBroker();
  const kafka = new Kafka({ clientId: 'restart-bench', brokers: broker.brokers, logLevel: logLevel.NOTHING });
  const stateDir = await mkdtemp(join(tmpdir(), 'iqgate-restart-bench-'));
  try {
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsRetrying(admin, [{ topic: TOPIC, numPartitions: PARTITIONS }]);
    await admin.disconnect();
    let started = Date.now();
    await produceKeys(kafka);
    log(`set-up: ${KEYS} keys produced to ${TOPIC} in ${Date.now() - started} ms`);

    started = Date.now();
    const loader = startInstance(broker.brokers, stateDir, APPS[0]!);
    await loader.url();
    while (!(await committedEverything(kafka))) await new Promise((resolve) => setTimeout(resolve, 500));
    await loader.kill();
    log(`set-up: ${KEYS} keys of ${TOPIC} materialized by ${APP_ID} into ${stateDir} in ${Date.now() - started} ms; SIGKILLed; command: node ${[...NODE_ARGS, ENTRY].join(' ')}`);

    const phases: Record<string, number[]> = {};
    const add = (name: string, value: number): void => { (phases[name] ??= []).push(value); };
    for (let run = 1; run <= RUNS; run += 1) for (const [index, app] of APPS.entries()) {
      // The first module's figures are restart.*, another's restart.<its file name>.* (the
      // modules take turns, so all meet the same machine load).
      const prefix = index === 0 ? '' : `${basename(app).replace(/\.[^.]+$/, '')}.`;
      const instance = startInstance(broker.brokers, stateDir, app);
      const url = await instance.url();
      const answeredAt = await firstFullAnswer(url);
      const cpuMs = cpuTimeMs(instance.child.pid);
      const t = await instance.timings();
      await instance.kill();
      const serving = answeredAt - instance.spawnedAt;
      const marks = [instance.spawnedAt, t.processStart, t.start, t.storeOpened, t.topicsReady, t.assigned, t.tasksRunning, answeredAt];
      const names = ['node_start', 'module_load', 'store_open', 'topics', 'group_join', 'restore', 'first_query'];
      add(`${prefix}serving`, serving);
      if (cpuMs !== undefined) add(`${prefix}cpu`, cpuMs);
      names.forEach((name, i) => add(`${prefix}${name}`, (marks[i + 1] ?? Number.NaN) - (marks[i] ?? Number.NaN)));
      log(`run ${run} ${app}: serving after ${serving} ms, ${cpuMs ?? '?'} ms CPU (${names.map((name) => `${name} ${phases[`${prefix}${name}`]!.at(-1)}`).join(', ')})`);
    }
    const figures = new Figures((f) => `${f.name}: ${f.value} ${f.unit}`);
    for (const [name, values] of Object.entries(phases)) figures.report(`restart.${name}`, 'ms', median(values));
    await figures.write('restart');
  } finally {
    if (process.env.BENCH_KEEP !== '1') await rm(stateDir, { recursive: true, force: true });
    else log(`state directory kept: ${stateDir}`);
    await broker.stop();
  }
}

await main();
