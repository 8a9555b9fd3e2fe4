/**
 * bench:query:busy — do key queries stay fast while the same instance processes a backlog flat
 * out? (issue 8 item 6: busy q/s ≥ 0.5 × idle, busy p99 ≤ 2 × idle.)
 *
 * One run, one broker, one input (BENCH_LINES wordcount lines on 4 partitions), and for each
 * client (the runtime's default — `auto`, librdkafka when its native module loads — and
 * `kafkajs`) a fresh instance: runWordcount + serve(runtime, { port: 0 }) in this process, a
 * LevelDB state directory, exactly-once, default options (plus BENCH_OPTIONS). The queries are
 * single-key `get(store: "word-counts", key, readCommitted: true|false) { value }` over real
 * HTTP from bench/query-load.ts, a process of its own (16 keep-alive clients, closed loop), so
 * the load generator shares neither the event loop nor the thread being measured:
 *
 *   busy  once the group has committed BENCH_BUSY_AFTER (0.1) of the input lines — both halves
 *         of wordcount at work (lines split into the repartition topic, words counted from it),
 *         past the group join and the first transactions — and processed BENCH_PRE_MS more
 *         without queries (the solo rates): BENCH_ROUNDS windows of a 1 s warm-up and
 *         BENCH_SECONDS of queries. A window counts only if input lines were left after it: once
 *         the lines are consumed only the counting of the repartitioned words remains, a
 *         lighter load (librdkafka splits the lines in ~30 s here, then counts for ~15 s).
 *   idle  the same instance once the whole backlog is processed and committed (and every count
 *         checked): BENCH_ROUNDS windows again. This is the fair idle: the same process,
 *         connections, stores (every key present and final) and a warm JIT; the consumer keeps
 *         long-polling and the commit timer ticking, as on any idle instance. Before the backlog
 *         the tasks would not be open yet (or the stores empty, answers cheaper than the busy
 *         ones) and the gateway's code cold.
 * The machine is shared, so of each phase's rounds the one with the most answers is kept (as
 * bench/query.ts does); every round is printed on stderr.
 *
 * Figures per client (<c> = '' for the default client, '.kafkajs' for kafkajs):
 *   query.key.busy.ratio<c>       busy q/s ÷ idle q/s         (target ≥ 0.5)
 *   query.key.busy.p99.ratio<c>   busy p99 ÷ idle p99         (target ≤ 2)
 *   query.key.busy.ratio.per.cpu<c>  the q/s ratio per second of main-thread CPU: on a shared
 *                                 machine the OS may give the thread well under a core, which
 *                                 moves both q/s; this compares runs
 *   query.key.{idle,busy}.{rate,p50,p99}<c>, and the p99 of each readCommitted variant
 *   query.key.{idle,busy}.eld.p99<c>  event-loop delay (perf_hooks, 5 ms resolution) p99
 *   query.key.{idle,busy}.elu<c>      event-loop utilization
 *   query.key.{idle,busy}.cpu.{main,machine}<c>  CPU time per s: the main thread, the machine
 *   query.key.busy.{slice.p99,slice.max}<c>  processing slices (TaskManager.loop), ms
 *   query.key.busy.{gc,gc.max}<c>     GC pauses: ms per s of the window, and the longest
 *   query.key.busy.commit.p99<c>      commit latency in the window
 *   query.key.busy.lines.rate<c>      input lines consumed (committed) per s in the busy window,
 *                                     and .lines.solo.rate<c> just before it, without queries
 *   query.key.busy.records.rate<c>    the same in input records (lines + repartitioned words),
 *                                     and .records.solo.rate<c>
 *   query.key.busy.{backlog,lines}.left<c>  share of the backlog's records not yet committed
 *                                     when the window ended, and of the input lines not consumed
 * Prints one line per figure and writes bench/results/query-busy.json ([{ name, unit, value }]).
 *
 * Brokers: KAFKA_BROKERS if set, else a local broker from scripts/kafka/broker.ts.
 * Knobs: BENCH_LINES (1500000: with 600000 the lines ran out before the third busy window on a
 * fast machine, librdkafka and kafkajs alike, and the windows after it do not count), BENCH_CLIENTS (auto,kafkajs; also librdkafka), BENCH_SECONDS (4),
 * BENCH_ROUNDS (3), BENCH_CONCURRENCY (16), BENCH_PRE_MS (2000), BENCH_BUSY_AFTER (0.1),
 * BENCH_OPTIONS (JSON merged into runWordcount's options, e.g. '{"processingSliceMs":2}'),
 * BENCH_PROFILE=<dir> (a CPU profile of the last busy window of each client written there and
 * summarised on stderr by bench/cpu-profile-summary.ts; BENCH_PROFILE_IDLE=1 the last idle
 * window too; the profiler slows what it watches: figures of such a run are diagnostics),
 * BENCH_LOG=info (progress on stderr).
 */
import { benchBroker } from './bench-broker.js';
import { Figures } from './figures.js';
import { createTopicsRetrying } from '../scripts/kafka/create-topics.js';
import '../src/kafka/kafkajs-patches.js';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import pino from 'pino';
import { makeLine, produceLines, runWordcount, wordsOf } from '../examples/wordcount/index.js';
import { serve } from '../src/serve.js';
import { summariseCpuProfile, type CpuProfile } from './cpu-profile-summary.js';

type Client = 'auto' | 'librdkafka' | 'kafkajs';

const LINES = Number(process.env.BENCH_LINES ?? 1_500_000);
const CLIENTS = (process.env.BENCH_CLIENTS ?? 'auto,kafkajs').split(',') as Client[];
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const PRE_MS = Number(process.env.BENCH_PRE_MS ?? 2000);
const BUSY_AFTER = Number(process.env.BENCH_BUSY_AFTER ?? 0.1);
const WARMUP_MS = 1000;
const OPTIONS = JSON.parse(process.env.BENCH_OPTIONS ?? '{}') as Record<string, unknown>;
const PROFILE_DIR = process.env.BENCH_PROFILE;
const PROFILE_IDLE = process.env.BENCH_PROFILE_IDLE === '1';
// The machine is shared: each phase is measured in ROUNDS windows and the best is kept.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PARTITIONS = 4;
/** USER_HZ of /proc's tick counts: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS = 100;
const SEED = 42;
const suffix = `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
const log = (message: string): void => {
  if (process.env.BENCH_LOG === 'info') console.error(`[${new Date().toISOString().slice(11, 23)}] ${message}`);
};

interface LoadSummary {
  readonly requests: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

interface LoadResult extends LoadSummary {
  readonly errors: number;
  readonly seconds: number;
  readonly from: number;
  readonly to: number;
  readonly variants: Record<string, LoadSummary>;
  readonly firstError: string | null;
  /** The load generator's own CPU per second of its window (cores). */
  readonly cpu: number;
}

/**
 * Runs bench/query-load.ts against `url` (warm-up, then SECONDS measured); `onWindow` is called
 * when its measured window starts (it says so on stdout). Resolves with its figures.
 */
function runLoad(url: string, bodies: ReadonlyArray<{ body: string; variant: string }>, onWindow: () => void): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./query-load.ts', import.meta.url))], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (!out.includes('window\n') && (out + chunk).includes('window\n')) onWindow();
      out += chunk;
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`bench/query-load.ts exited with ${String(code)}: ${out}`));
      else resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as LoadResult);
    });
    child.stdin.end(JSON.stringify({ url, bodies, concurrency: CONCURRENCY, warmupMs: WARMUP_MS, durationMs: SECONDS * 1000 }));
  });
}

/** A counter sampled over time, to read its rate over any window afterwards. */
class Sampler {
  private readonly samples: Array<[number, number]> = [];
  private readonly timer: NodeJS.Timeout;
  private busy = false;
  constructor(private readonly read: () => number | Promise<number>, everyMs: number) {
    this.timer = setInterval(() => void this.sample(), everyMs);
  }
  async sample(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const value = await this.read();
      this.samples.push([Date.now(), value]);
    } catch {
      // a failed admin request: the next sample fills in
    } finally {
      this.busy = false;
    }
  }
  get last(): number {
    return this.samples[this.samples.length - 1]?.[1] ?? 0;
  }
  /** The value at epoch ms `t` (linear between samples). */
  at(t: number): number {
    let before: [number, number] | undefined;
    for (const s of this.samples) {
      if (s[0] <= t) before = s;
      else {
        if (before === undefined) return s[1];
        return before[1] + ((s[1] - before[1]) * (t - before[0])) / Math.max(1, s[0] - before[0]);
      }
    }
    return before?.[1] ?? 0;
  }
  rate(from: number, to: number): number {
    return (this.at(to) - this.at(from)) / ((to - from) / 1000);
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

/** What the bench process saw of its own event loop during a window. */
interface LoopFigures {
  readonly eldP99: number;
  readonly eldMax: number;
  readonly elu: number;
  readonly gcMsPerSecond: number;
  readonly gcMaxMs: number;
  /** CPU time per second of the window (cores): the main thread, the process's other threads (libuv pool, librdkafka, V8), the machine (of availableParallelism()). */
  readonly cpuMain: number;
  readonly cpuOtherThreads: number;
  readonly cpuMachine: number;
}

/** utime + stime of this process's main thread, ms (Linux /proc; NaN elsewhere). */
function mainThreadCpuMs(): number {
  try {
    const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** Busy CPU time of the whole machine, ms (Linux /proc/stat; NaN elsewhere). */
function machineCpuMs(): number {
  try {
    const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
    const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
    return ((ticks.slice(0, 8).reduce((a, b) => a + b, 0) - idle) * 1000) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

function watchLoop(): () => LoopFigures {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const elu = performance.eventLoopUtilization();
  const started = performance.now();
  let gcMs = 0;
  let gcMax = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gcMs += entry.duration;
      gcMax = Math.max(gcMax, entry.duration);
    }
  });
  gc.observe({ entryTypes: ['gc'] });
  const main0 = mainThreadCpuMs();
  const process0 = process.cpuUsage();
  const machine0 = machineCpuMs();
  return () => {
    const wallMs = performance.now() - started;
    const mainMs = mainThreadCpuMs() - main0;
    const processUs = process.cpuUsage(process0);
    delay.disable();
    gc.disconnect();
    const seconds = (performance.now() - started) / 1000;
    return {
      eldP99: delay.percentile(99) / 1e6,
      eldMax: delay.max / 1e6,
      elu: performance.eventLoopUtilization(elu).utilization,
      gcMsPerSecond: gcMs / seconds,
      gcMaxMs: gcMax,
      cpuMain: mainMs / wallMs,
      cpuOtherThreads: ((processUs.user + processUs.system) / 1000 - mainMs) / wallMs,
      cpuMachine: (machineCpuMs() - machine0) / wallMs,
    };
  };
}

/** One measured window: the load's figures, the bench process's loop meanwhile, and processing. */
interface Window {
  readonly load: LoadResult;
  readonly loop: LoopFigures;
  readonly sliceP99: number;
  readonly sliceMax: number;
  readonly commitP99: number;
  /** Input lines consumed (offsets committed) per second in the window. */
  readonly linesRate: number;
  /** Input records (lines + repartitioned words) committed per second in the window. */
  readonly processingRate: number;
  /** Share of the backlog's records not yet committed when the window ended. */
  readonly backlogLeft: number;
  /** Share of the input lines not yet consumed (committed input offsets) just after the window. */
  readonly linesLeft: number;
}

interface ClientRun {
  readonly selected: string;
  readonly idle: Window;
  readonly busy: Window;
  /** Lines and records committed per second just before the first busy window, without queries. */
  readonly soloLinesRate: number;
  readonly soloRate: number;
}

async function measureClient(admin: Admin, brokerList: string[], input: string, client: Client, expectedRecords: number, bodies: Array<{ body: string; variant: string }>, expectedCounts: ReadonlyMap<string, number>): Promise<ClientRun> {
  const applicationId = `bench-busy-${client}-${suffix}`;
  /** Input lines whose offsets the group has committed (in its transactions). */
  const linesConsumed = async (): Promise<number> => {
    const [topic] = await admin.fetchOffsets({ groupId: applicationId, topics: [input] });
    return (topic?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
  };
  const dir = await mkdtemp(join(tmpdir(), 'iqgate-bench-busy-'));
  let selected = client as string;
  // The runtime's own start-up line says which client it took (and why); the rest at warn.
  const logger = pino({ level: 'info' }, {
    write(line: string) {
      const entry = JSON.parse(line) as { level: number; msg: string; reason?: string };
      if (entry.msg.startsWith('Kafka client:')) {
        selected = entry.msg.slice('Kafka client:'.length).trim();
        console.error(`${client}: ${entry.msg} (${entry.reason ?? ''})`);
      } else if (entry.level >= 40 || process.env.BENCH_LOG === 'info') process.stderr.write(line);
    },
  });
  const runtime = await runWordcount({
    brokers: brokerList, inputTopic: input, outputTopic: `bench-busy-out-${client}-${suffix}`, applicationId,
    stateDir: dir, logger, sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1_000,
    ...(client === 'auto' ? {} : { kafkaClient: client }),
    ...OPTIONS,
  });
  const serving = await serve(runtime, { port: 0 });
  // The counter itself: metricsSnapshot() sorts every reservoir, too costly to call 20 times a second.
  const records = new Sampler(() => runtime.metrics.recordsCommitted, 50);
  const lines = new Sampler(linesConsumed, 250);
  const progress = process.env.BENCH_LOG === 'info'
    ? setInterval(() => log(`${client} lines consumed ${(100 * lines.last / LINES).toFixed(0)}% ${JSON.stringify(runtime.metricsSnapshot())}`), 2000)
    : undefined;
  const waitFor = async (what: string, done: () => boolean, timeoutMs: number): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`${client}: ${what} not within ${timeoutMs} ms: ${JSON.stringify(runtime.metricsSnapshot())}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  /** One window of queries; `profile` names the CPU profile to take of it. */
  const measure = async (phase: string, profile: string | undefined): Promise<Window> => {
    const session = profile === undefined || PROFILE_DIR === undefined ? undefined : new Session();
    if (session !== undefined) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 250 });
    }
    // Loop figures and the profile cover the measured window only, not the child's start-up and warm-up.
    let stopLoop: (() => LoopFigures) | undefined;
    const load = await runLoad(serving.url, bodies, () => {
      stopLoop = watchLoop();
      runtime.metrics.slices.reset();
      runtime.metrics.commitLatency.reset();
      void session?.post('Profiler.start');
    });
    if (stopLoop === undefined) throw new Error('the load generator never started its window');
    const loop = stopLoop();
    if (session !== undefined && profile !== undefined && PROFILE_DIR !== undefined) {
      const { profile: taken } = await session.post('Profiler.stop');
      session.disconnect();
      await mkdir(PROFILE_DIR, { recursive: true });
      const file = join(PROFILE_DIR, profile);
      await writeFile(file, JSON.stringify(taken));
      console.error(summariseCpuProfile(taken as unknown as CpuProfile, `${selected} ${phase} (${file})`));
    }
    await Promise.all([records.sample(), lines.sample()]);
    if (load.errors > 0) throw new Error(`${client} ${phase}: ${load.errors} failed queries, first: ${load.firstError ?? ''}`);
    const window: Window = {
      load, loop,
      sliceP99: runtime.metrics.slices.percentile(99),
      sliceMax: runtime.metrics.slices.percentile(100),
      commitP99: runtime.metrics.commitLatency.percentile(99),
      linesRate: lines.rate(load.from, load.to),
      processingRate: records.rate(load.from, load.to),
      backlogLeft: 1 - records.at(load.to) / expectedRecords,
      linesLeft: 1 - lines.at(load.to) / LINES,
    };
    console.error(`${client} ${phase}: ${(load.requests / load.seconds).toFixed(0)} q/s, p50 ${load.p50.toFixed(1)} ms, p99 ${load.p99.toFixed(1)} ms, max ${load.max.toFixed(0)} ms; event-loop delay p99 ${loop.eldP99.toFixed(1)} ms, max ${loop.eldMax.toFixed(0)} ms, utilization ${loop.elu.toFixed(2)}, GC ${loop.gcMsPerSecond.toFixed(0)} ms/s (longest ${loop.gcMaxMs.toFixed(1)} ms); CPU main thread ${loop.cpuMain.toFixed(2)}, other threads ${loop.cpuOtherThreads.toFixed(2)}, load generator ${load.cpu.toFixed(2)}, machine ${loop.cpuMachine.toFixed(2)} of ${availableParallelism()} cores; slices p99 ${window.sliceP99} ms, max ${window.sliceMax} ms; processing ${window.linesRate.toFixed(0)} lines/s, ${window.processingRate.toFixed(0)} records/s; left: ${(100 * window.linesLeft).toFixed(0)}% of the lines, ${(100 * window.backlogLeft).toFixed(0)}% of the records`);
    return window;
  };
  /** The round with the most queries answered: a burst of foreign load on the shared machine does not decide a figure. */
  const best = (windows: Window[]): Window => windows.reduce((a, b) => (b.load.requests > a.load.requests ? b : a));

  try {
    // Busy once a share of the lines is consumed: both halves of wordcount at work (splitting
    // lines into the repartition topic, counting words from it), past the group join and the
    // first transactions.
    await waitFor(`${BUSY_AFTER * 100}% of the lines`, () => lines.last >= BUSY_AFTER * LINES, 120_000);
    const soloFrom = Date.now();
    await new Promise((r) => setTimeout(r, PRE_MS));
    await Promise.all([records.sample(), lines.sample()]);
    const soloTo = Date.now();
    const soloRate = records.rate(soloFrom, soloTo);
    const soloLinesRate = lines.rate(soloFrom, soloTo);
    const busyWindows: Window[] = [];
    // A window counts while input lines are left: once they are all consumed only the cheaper
    // half of wordcount (counting the repartitioned words) remains, which is not "flat out".
    for (let round = 0; round < ROUNDS; round += 1) {
      const window = await measure(`busy ${round + 1}`, round === ROUNDS - 1 ? `query-busy-${selected}.cpuprofile` : undefined);
      if (window.linesLeft <= 0) {
        console.error(`${client}: the input lines ran out during busy window ${round + 1}; it does not count (raise BENCH_LINES)`);
        break;
      }
      busyWindows.push(window);
    }
    if (busyWindows.length === 0) throw new Error(`${client}: the input lines ran out during the first busy window; raise BENCH_LINES`);

    // Idle: the same instance once everything is processed and committed, answers checked.
    await waitFor('the whole backlog', () => runtime.metrics.recordsCommitted >= expectedRecords, 240_000);
    for (const [word, count] of expectedCounts) {
      const response = await fetch(serving.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: `{ get(store: "word-counts", key: ${JSON.stringify(word)}) { value } }` }) });
      const json = (await response.json()) as { data?: { get: { value: unknown } } };
      if (Number(json.data?.get.value) !== count) throw new Error(`${client}: word-counts[${word}] is ${JSON.stringify(json)}, expected ${count}`);
    }
    const idleWindows: Window[] = [];
    for (let round = 0; round < ROUNDS; round += 1) idleWindows.push(await measure(`idle ${round + 1}`, round === ROUNDS - 1 && PROFILE_IDLE ? `query-idle-${selected}.cpuprofile` : undefined));
    return { selected, idle: best(idleWindows), busy: best(busyWindows), soloRate, soloLinesRate };
  } finally {
    clearInterval(progress);
    records.stop();
    lines.stop();
    await serving.close();
    await runtime.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const broker = await benchBroker();
  const kafka = new Kafka({ clientId: 'bench-query-busy', brokers: broker.brokers, logLevel: logLevel.ERROR });
  const admin = kafka.admin();
  await admin.connect();
  const input = `bench-busy-lines-${suffix}`;
  const outputs = CLIENTS.map((c) => `bench-busy-out-${c}-${suffix}`);
  const figures = new Figures();
  const report = figures.report.bind(figures);
  try {
    await createTopicsRetrying(admin, [input, ...outputs].map((topic) => ({ topic, numPartitions: PARTITIONS })));
    log(`producing ${LINES} lines`);
    await produceLines({ brokers: broker.brokers, topic: input, seed: SEED, count: LINES, batchSize: 2000 });
    const counts = new Map<string, number>();
    let totalWords = 0;
    for (let i = 0; i < LINES; i += 1) {
      for (const word of wordsOf(makeLine(SEED, i))) {
        counts.set(word, (counts.get(word) ?? 0) + 1);
        totalWords += 1;
      }
    }
    const query = 'query($k: Key!, $rc: Boolean!) { get(store: "word-counts", key: $k, readCommitted: $rc) { value } }';
    const bodies = [...counts.keys()].flatMap((k) => [true, false].map((rc) => ({ body: JSON.stringify({ query, variables: { k, rc } }), variant: `readCommitted.${String(rc)}` })));

    for (const client of CLIENTS) {
      const run = await measureClient(admin, broker.brokers, input, client, LINES + totalWords, bodies, counts);
      const c = client === 'auto' ? '' : `.${client}`;
      console.error(`${client}: the runtime ran on ${run.selected}`);
      const rate = (w: Window): number => w.load.requests / w.load.seconds;
      report(`query.key.busy.ratio${c}`, 'busy q/s / idle q/s', rate(run.busy) / rate(run.idle));
      report(`query.key.busy.p99.ratio${c}`, 'busy p99 / idle p99', run.busy.load.p99 / run.idle.load.p99);
      // The same ratio per second of main-thread CPU: what is left when the OS gives the thread
      // less than a core (other processes on a shared machine), for comparing runs.
      report(`query.key.busy.ratio.per.cpu${c}`, 'ratio', (rate(run.busy) / run.busy.loop.cpuMain) / (rate(run.idle) / run.idle.loop.cpuMain));
      for (const [phase, w] of [['idle', run.idle], ['busy', run.busy]] as const) {
        report(`query.key.${phase}.rate${c}`, 'queries/s', rate(w));
        report(`query.key.${phase}.p50${c}`, 'ms', w.load.p50);
        report(`query.key.${phase}.p99${c}`, 'ms', w.load.p99);
        for (const [variant, v] of Object.entries(w.load.variants).sort()) report(`query.key.${phase}.p99.${variant}${c}`, 'ms', v.p99);
        report(`query.key.${phase}.eld.p99${c}`, 'ms', w.loop.eldP99);
        report(`query.key.${phase}.elu${c}`, 'ratio', w.loop.elu);
        report(`query.key.${phase}.cpu.main${c}`, 'cores', w.loop.cpuMain);
        report(`query.key.${phase}.cpu.machine${c}`, 'cores', w.loop.cpuMachine);
      }
      report(`query.key.busy.eld.max${c}`, 'ms', run.busy.loop.eldMax);
      report(`query.key.busy.gc${c}`, 'ms/s', run.busy.loop.gcMsPerSecond);
      report(`query.key.busy.gc.max${c}`, 'ms', run.busy.loop.gcMaxMs);
      report(`query.key.busy.slice.p99${c}`, 'ms', run.busy.sliceP99);
      report(`query.key.busy.slice.max${c}`, 'ms', run.busy.sliceMax);
      report(`query.key.busy.commit.p99${c}`, 'ms', run.busy.commitP99);
      report(`query.key.busy.lines.rate${c}`, 'lines/s', run.busy.linesRate);
      report(`query.key.busy.lines.solo.rate${c}`, 'lines/s', run.soloLinesRate);
      report(`query.key.busy.records.rate${c}`, 'records/s', run.busy.processingRate);
      report(`query.key.busy.records.solo.rate${c}`, 'records/s', run.soloRate);
      report(`query.key.busy.backlog.left${c}`, 'ratio', run.busy.backlogLeft);
      report(`query.key.busy.lines.left${c}`, 'ratio', run.busy.linesLeft);
    }
    await figures.write('query-busy');
  } finally {
    await admin.deleteTopics({ topics: [input, ...outputs] }).catch(() => undefined);
    await admin.disconnect();
    await broker.stop();
  }
}

await main();
