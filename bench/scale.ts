/**
 * bench:scale — 1000 tasks in one process, for real, on each Kafka adapter (docs/architecture.md §1 and §7
 * "scale"; docs/kafka-clients.md), then a second instance that joins and leaves under load.
 *
 * One run against a real broker; for each client of SCALE_CLIENTS (default `librdkafka,kafkajs`,
 * in that order), a fresh topic of N partitions (SCALE_PARTITIONS, default 1000) with a few
 * records in each (SCALE_RECORDS per partition, default 5), materialized as a table (one task and
 * one store partition per input partition; librdkafka: one transactional producer for the
 * instance, kafkajs: one per task). Figures are named `scale.<client>.…`:
 *
 * Phase 1, one instance (A):
 *  - start() → every task RUNNING (assignment: producers, store open, restore, offsets);
 *  - start() → every record committed (counted in the readCommitted views of the local stores);
 *  - RSS / heap, open sockets (/proc/self/fd entries that are sockets) and timers after start;
 *    idle CPU with N tasks open; commit latency and control queue (runtime.metricsSnapshot());
 *  - event-loop delay p99/max while the tasks are assigned and opened, and while they commit.
 *
 * Phase 2, join and leave under load: a producer in a process of its own (bench/scale-load.ts) writes SCALE_LOAD_RATE records/s
 * (default 2000) round-robin over the partitions; after a warm-up, a steady window (SCALE_STEADY_S,
 * default 10 s) gives the steady lag and the steady pauses. Then instance B (same applicationId,
 * its own state directory, a process of its own: bench/scale-instance.ts) boots — loading its
 * modules, outside the windows, since on this machine it takes the cores A and the broker use —
 * and 2 s later starts; the group rebalances, B stops gracefully (SCALE_HOLD_S after the lag
 * settled) and its tasks go back to A.
 *  - pauses: every task's processed position is observed exactly (the topology stamps each
 *    record it processes: bench/scale-shared.ts) and sampled every 50 ms against the partition's
 *    end offset (known from the producer's acknowledgements). A task's pause is an interval during
 *    which it had input (end > position) and its position did not move, from the later of its last
 *    progress and the acknowledgement of the first record it had not processed, to its next
 *    progress. `rebalance.pause.max.ms` / `.p99.ms`: the longest pause per task, max and p99 over
 *    the tasks that stay on A from B's join until the lag settled after B's leave (target ≤ 1 s);
 *    `steady.pause.*` is the same over the steady window, for comparison.
 *  - lag: Σ over partitions of end − the furthest position processed by A or B. `steady.lag.p99`
 *    sets the threshold (1.5 × p99 + 5 % of a second's load); `join.recover.ms` / `leave.recover.ms`:
 *    from B's start() call / from B's stop() call to the first sample after which the lag stays
 *    at or below the threshold (0 when it never went above). `join.assigned.ms`: until the
 *    partitions are split between A and B with every task RUNNING; `leave.assigned.ms`: until A
 *    runs all N again.
 *  - moved partitions (those not staying: to B at the join, back at the leave): a second pause
 *    series over the furthest position of A or B (B's reported every 100 ms, timed at arrival), so
 *    a moved partition's pause is the time it had input and neither instance processed it.
 *    `rebalance.moved.pause.{join,leave}.max.ms`, `.p99.ms`, and issue 25's
 *    `roll.moved.stall.max.ms` / `roll.staying.stall.max.ms` (targets 1,000 and 500 ms).
 *  - baseline: the raw client of the run (librdkafka or kafkajs, bench/scale-baseline.ts) consumes
 *    the same topic in a group and a process of its own, with no processing, state or
 *    transactions, from before the steady window to the end; its pauses are measured exactly as
 *    A's are. `baseline.steady.pause.max.ms`, `rebalance.baseline.pause.{max,p99,join.max,
 *    leave.max}.ms` (over A's staying partitions, in the same windows) and
 *    `rebalance.pause.max.ratio` (A's longest pause ÷ the baseline's) tell a pause of iqgate's
 *    from one the broker and this machine impose on any consumer.
 *  - the bare client's roll (SCALE_BASELINE_ROLL=0 skips it): once iqgate's leave has settled, a
 *    second member joins the baseline consumer's group, holds, and leaves, under the same load
 *    (both members commit automatically every 100 ms, at iqgate's heartbeat interval; librdkafka
 *    cooperative-sticky). `roll.baseline.{moved,staying}.stall.max.ms` are its partitions'
 *    longest stops, measured as iqgate's, and `roll.{moved,staying}.stall.ratio` iqgate's ÷ those:
 *    what the client's group protocol alone costs a consumer that does no work.
 *  - librdkafka uses static membership: a plainly stopped member keeps its place until its
 *    session times out, and only then do its partitions come back. B goes for good, so it stops
 *    with stop({ leaveGroup: true }), which takes it out of the group at once (a scale-down);
 *    SCALE_B_LEAVE_GROUP=0 stops it plainly. The bench runs librdkafka with sessionTimeoutMs
 *    SCALE_SESSION_TIMEOUT_MS (default 6000) and both clients with SCALE_HEARTBEAT_MS when set; kafkajs (which always leaves the group) with the
 *    runtime's default unless SCALE_KAFKAJS_SESSION_TIMEOUT_MS is set.
 *  - SCALE_STANDBYS=1 gives both instances a standby replica of each task (numStandbyReplicas):
 *    then the instance that stays holds a standby of every partition the other runs, and the
 *    partitions coming back at the leave restore only the tail their standby had not applied.
 * Then stop() of A with its N tasks (last commits, leaving the group, closing producers and stores).
 *
 * Baseline, once per run on the first client's topic: a plain kafkajs consumer in its own group
 * (no state, no transactions) — time to its first full read.
 *
 * Every phase has a deadline within the whole run's budget (SCALE_TIMEOUT_S, default 450 s; each
 * client gets an equal share of what is left); when N cannot finish a phase, the bench prints how
 * far it got (task states, control queue, lag) and still cleans up. SCALE_REBALANCE=0 skips phase 2.
 * Instance logs (pino, SCALE_LOG level, default info) go to files whose warnings and errors are
 * summarized at the end, and counted per window (`rebalance.<a|b>.warnings.<steady|join|leave>`):
 * a failed commit cycle rolls tasks back and explains most long pauses. Failures handled at info
 * (a failed cycle whose tasks rewound in memory) are listed per window too, not counted. SCALE_EXPERIMENT_* knobs
 * (bench/scale-shared.ts, off by default) patch the librdkafka adapter to show what a change in
 * src/ would give; a run with any of them on says so on its first line. Prints one line per figure and writes bench/results/scale.json
 * ([{ name, unit, value }]). Brokers: KAFKA_BROKERS if set, else a local broker from scripts/kafka/broker.ts.
 */
import { benchBroker, type BenchBroker } from './bench-broker.js';
import { Figures } from './figures.js';
import '../src/kafka/kafkajs-patches.js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { destination, pino, type Logger } from 'pino';
import { createRuntime, type Runtime } from '../src/index.js';
import { DEFAULT_HEARTBEAT_INTERVAL_MS } from '../src/kafka/group-settings.js';
import { changelogTopic } from '../src/processing/topic-names.js';
import { applyExperiments, experimentRetries, ProgressTracker, scaleTopology, standbyOptions, STORE, type BaselineConfig, type FromBaseline, type FromLoad, type LoadConfig, type ToLoad, type FromInstance, type InstanceConfig, type ScaleClient, type ToBaseline, type ToInstance } from './scale-shared.js';

/** The histogram monitorEventLoopDelay() returns (@types/node 24 names it ELDHistogram, 20 IntervalHistogram). */
type IntervalHistogram = ReturnType<typeof monitorEventLoopDelay>;

const N = Number(process.env.SCALE_PARTITIONS ?? 1000);
const RECORDS = Number(process.env.SCALE_RECORDS ?? 5);
const TOTAL = N * RECORDS;
const BUDGET_MS = Number(process.env.SCALE_TIMEOUT_S ?? 450) * 1000;
const CLIENTS = (process.env.SCALE_CLIENTS ?? 'librdkafka,kafkajs').split(',').map((c) => c.trim()).filter((c) => c.length > 0) as ScaleClient[];
const REBALANCE = process.env.SCALE_REBALANCE !== '0';
const LOAD_RATE = Number(process.env.SCALE_LOAD_RATE ?? 2000);
const STEADY_MS = Number(process.env.SCALE_STEADY_S ?? 10) * 1000;
const WARMUP_MS = 5_000;
/** The lag must stay at or below its threshold this long before a phase counts as settled. */
const SETTLE_MS = 5_000;
/** After B has booted, before the join window opens: the pauses its boot caused end first. */
const BOOT_SETTLE_MS = 2_000;
/** Between the settled join and B's stop. */
const HOLD_MS = Number(process.env.SCALE_HOLD_S ?? 3) * 1000;
/** SCALE_BASELINE_ROLL=0 skips the bare client's roll after iqgate's (measureBaselineRoll). */
const BASELINE_ROLL = process.env.SCALE_BASELINE_ROLL !== '0';
/** B goes for good, so it stops with leaveGroup (a scale-down); SCALE_B_LEAVE_GROUP=0: a plain stop. */
const B_LEAVES_GROUP = process.env.SCALE_B_LEAVE_GROUP !== '0';
/** heartbeatIntervalMs of A and B (SCALE_HEARTBEAT_MS); unset: the runtime's default. */
/** numStandbyReplicas of A and B (SCALE_STANDBYS, default 0): with 1, the instance that stays keeps a standby of every partition the other runs. */
const STANDBYS = Number(process.env.SCALE_STANDBYS ?? 0);
const HEARTBEAT_MS = process.env.SCALE_HEARTBEAT_MS === undefined || process.env.SCALE_HEARTBEAT_MS === '' ? undefined : Number(process.env.SCALE_HEARTBEAT_MS);
const SAMPLE_MS = 50;
const SESSION_TIMEOUT_MS: Record<ScaleClient, number | undefined> = {
  librdkafka: Number(process.env.SCALE_SESSION_TIMEOUT_MS ?? 6000),
  kafkajs: process.env.SCALE_KAFKAJS_SESSION_TIMEOUT_MS === undefined ? undefined : Number(process.env.SCALE_KAFKAJS_SESSION_TIMEOUT_MS),
};
const RUNTIME_DEFAULT_SESSION_TIMEOUT_MS = 30_000;
const LOG_LEVEL = process.env.SCALE_LOG ?? 'info';
const KAFKA_LOG_LEVEL = process.env.SCALE_KAFKA_LOG ?? 'error';
const suffix = `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
const began = Date.now();
const deadline = began + BUDGET_MS;

/** Instance B processes still running: killed (by their pid) if this process exits with them still there. */
const liveChildren = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL');
});

const figures = new Figures();
const report = figures.report.bind(figures);
const note = (line: string): void => console.log(`# ${line}`);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits until `done()` or `ms` have passed, looking every `everyMs`. */
async function until(done: () => boolean, ms: number, everyMs = 50): Promise<void> {
  for (const limitAt = Date.now() + ms; !done() && Date.now() < limitAt;) await sleep(everyMs);
}
const mb = (bytes: number): number => bytes / 1048576;
const load1 = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');

/** `promise`'s value, or `fallback` after `ms` (the timer is cleared either way: nothing keeps the process alive). */
async function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<T>((resolve) => { timer = setTimeout(() => resolve(fallback), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Sockets and file descriptors of this process (/proc/self/fd; -1 where unavailable). */
function openFds(): { fds: number; sockets: number } {
  try {
    const entries = readdirSync('/proc/self/fd');
    let sockets = 0;
    for (const fd of entries) {
      try {
        if (readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:')) sockets += 1;
      } catch {
        // closed meanwhile
      }
    }
    return { fds: entries.length, sockets };
  } catch {
    return { fds: -1, sockets: -1 };
  }
}

/** Active libuv resources by type (TCPSocketWrap, Timeout, …). */
function resources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of process.getActiveResourcesInfo()) counts.set(r, (counts.get(r) ?? 0) + 1);
  return counts;
}

async function brokers(): Promise<BenchBroker> {
  const broker = await benchBroker();
  if (broker.local) note(`local broker ${broker.brokers.join(',')} up in ${String(broker.startupMs)} ms`);
  return broker;
}

/**
 * createTopics(waitForLeaders) returns before every partition of a large new topic is servable:
 * for a few seconds requests get NOT_LEADER_FOR_PARTITION. Waits until ListOffsets succeeds.
 */
async function waitServable(admin: Admin, topic: string): Promise<void> {
  for (const limitAt = Date.now() + 60_000; ;) {
    try {
      await admin.fetchTopicOffsets(topic);
      return;
    } catch (error) {
      if (Date.now() > limitAt) throw error;
      await sleep(200);
    }
  }
}

/**
 * Creates the topic. Right after the previous client's topics were deleted the broker may answer
 * createTopics' metadata polling with UNKNOWN_TOPIC_OR_PARTITION: retried until the topic is servable.
 */
async function createTopic(admin: Admin, topic: string): Promise<void> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      await admin.createTopics({ waitForLeaders: true, timeout: 120_000, topics: [{ topic, numPartitions: N }] });
      break;
    } catch (error) {
      if ((await admin.listTopics().catch(() => [] as string[])).includes(topic)) break;
      if (attempt >= 5) throw error;
      note(`createTopics(${topic}) failed (${String(error)}); retrying`);
      await sleep(2_000);
    }
  }
  await waitServable(admin, topic);
}

/** Deletes the topics and waits (up to 60 s) until the broker no longer lists them, so the next client starts on a quiet broker. */
async function deleteTopics(admin: Admin, topics: string[]): Promise<void> {
  await admin.deleteTopics({ topics, timeout: 60_000 }).catch(() => undefined);
  for (const limitAt = Date.now() + 60_000; Date.now() < limitAt;) {
    const listed = await admin.listTopics().catch(() => topics);
    if (!topics.some((t) => listed.includes(t))) return;
    await sleep(500);
  }
  note(`topics ${topics.join(', ')} still listed 60 s after deleteTopics`);
}

async function produceRecords(kafka: Kafka, topic: string): Promise<void> {
  // Idempotent: a retried request must not duplicate the partitions that had succeeded.
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    const messages: Array<{ partition: number; key: string; value: string }> = [];
    for (let p = 0; p < N; p += 1) {
      for (let i = 0; i < RECORDS; i += 1) messages.push({ partition: p, key: `p${p}-k${i}`, value: JSON.stringify({ p, i }) });
    }
    for (let i = 0; i < messages.length; i += 2000) await producer.send({ topic, messages: messages.slice(i, i + 2000), acks: -1 });
  } finally {
    await producer.disconnect();
  }
}

/**
 * A fresh broker creates __consumer_offsets and __transaction_state on first use (seconds of
 * COORDINATOR_NOT_AVAILABLE retries): done here, so that neither side pays for it.
 */
async function warmCoordinators(kafka: Kafka, admin: Admin): Promise<void> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      await admin.describeGroups([`bench-scale-warmup-${suffix}`]);
      break;
    } catch (error) {
      if (attempt >= 20) throw error;
      await sleep(250);
    }
  }
  const producer = kafka.producer({ transactionalId: `bench-scale-warmup-${suffix}`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    await (await producer.transaction()).abort();
  } finally {
    await producer.disconnect();
  }
}

/** A plain kafkajs consumer in its own group: time until it has read every record once. */
async function baselineRead(kafka: Kafka, topic: string, budgetMs: number): Promise<{ ms: number; read: number }> {
  const consumer = kafka.consumer({ groupId: `bench-scale-plain-${suffix}`, maxWaitTimeInMs: 100 });
  let read = 0;
  const started = performance.now();
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let done: () => void = () => undefined;
    const all = new Promise<void>((resolve) => { done = resolve; });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        read += batch.messages.length;
        if (read >= TOTAL) done();
      },
    });
    const finished = await within(all.then(() => true), budgetMs, false);
    const ms = performance.now() - started;
    if (!finished) note(`baseline consumer read only ${read}/${TOTAL} records within ${budgetMs} ms`);
    return { ms: finished ? ms : Number.NaN, read };
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
}

function taskStates(runtime: Runtime): Map<string, number> {
  const states = new Map<string, number>();
  for (const t of runtime.localTasks()) states.set(t.state, (states.get(t.state) ?? 0) + 1);
  return states;
}

function describeProgress(runtime: Runtime): string {
  const states = [...taskStates(runtime)].map(([s, n]) => `${s}=${n}`).join(' ') || 'no tasks';
  const m = runtime.metricsSnapshot();
  return `runtime ${runtime.state}; tasks: ${states}; control queue depth ${m.controlQueueDepth} (max ${m.controlQueueMaxDepth}); `
    + `commits ${m.commits}; records committed ${m.recordsCommitted}`;
}

/** Partitions whose committed view holds all their records (re-checks only the missing ones). */
async function sweepCommitted(runtime: Runtime, missing: Set<number>): Promise<void> {
  const stores = runtime.localStores().filter((s) => s.storeName === STORE && missing.has(s.partition));
  for (let i = 0; i < stores.length; i += 50) {
    await Promise.all(stores.slice(i, i + 50).map(async (s) => {
      const view = s.store.view({ readCommitted: true });
      try {
        let n = 0;
        for await (const _entry of view.range()) n += 1;
        if (n >= RECORDS) missing.delete(s.partition);
      } finally {
        await view.close();
      }
    }));
  }
}

/** Warnings and errors of a pino log file: count by level and the most frequent messages. */
function summarizeLog(label: string, file: string): void {
  if (!existsSync(file)) {
    note(`${label} log ${file}: none`);
    return;
  }
  const counts = new Map<string, number>();
  let warn = 0;
  let error = 0;
  let lines = 0;
  const firstAt = new Map<string, string>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.length === 0) continue;
    lines += 1;
    try {
      const entry = JSON.parse(line) as { level: number; msg?: string; err?: { message?: string }; time?: number };
      if (entry.level < 40) continue;
      if (entry.level >= 50) error += 1;
      else warn += 1;
      const key = `${entry.level >= 50 ? 'ERROR' : 'WARN'} ${entry.msg ?? ''}${entry.err?.message ? `: ${entry.err.message.slice(0, 160)}` : ''}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      if (!firstAt.has(key) && entry.time !== undefined) firstAt.set(key, new Date(entry.time).toISOString().slice(11, 23));
    } catch {
      // not JSON
    }
  }
  note(`${label} log ${file}: ${lines} lines, ${warn} warnings, ${error} errors`);
  for (const [key, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 8)) note(`  ${n}× ${key} (first at ${firstAt.get(key) ?? '?'})`);
}

/**
 * Warnings and errors of a pino log file logged between two performance.now() instants, by
 * message; and, apart, the failures the runtime handled at info (lines with an `err`: a failed
 * commit cycle whose tasks rewound in memory) — they explain pauses as well, and a warnings-only
 * count left them out.
 */
function warningsBetween(file: string, from: number, to: number): { warnings: Map<string, number>; handled: Map<string, number> } {
  const warnings = new Map<string, number>();
  const handled = new Map<string, number>();
  if (!existsSync(file)) return { warnings, handled };
  const fromWall = performance.timeOrigin + from;
  const toWall = performance.timeOrigin + to;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const info = line.includes('"level":30') && line.includes('"err":');
    if (!info && !line.includes('"level":4') && !line.includes('"level":5') && !line.includes('"level":6')) continue;
    try {
      const entry = JSON.parse(line) as { level: number; msg?: string; time: number; err?: { details?: { librdkafkaCode?: number }; code?: string } };
      if ((entry.level < 40 && !info) || entry.time < fromWall || entry.time > toWall) continue;
      const code = entry.err?.details?.librdkafkaCode ?? entry.err?.code;
      const key = `${entry.msg ?? ''}${code === undefined ? '' : ` [${String(code)}]`}`;
      const counts = entry.level < 40 ? handled : warnings;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    } catch {
      // not JSON
    }
  }
  return { warnings, handled };
}

const wallClock = (t: number): string => new Date(performance.timeOrigin + t).toISOString().slice(11, 23);

interface ClientRun {
  readonly client: ScaleClient;
  readonly prefix: string;
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly brokers: string[];
  readonly topic: string;
  readonly applicationId: string;
  readonly deadline: number;
  readonly logDir: string;
  readonly sessionTimeoutMs: number | undefined;
}

/** Remaining time for a phase of `run`: its own cap, never past the client's deadline minus a reserve. */
function phaseBudget(run: ClientRun, capMs: number, reserveMs: number): number {
  return Math.max(1_000, Math.min(capMs, run.deadline - reserveMs - Date.now()));
}

interface Instance {
  readonly runtime: Runtime;
  readonly tracker: ProgressTracker;
  readonly logFile: string;
  readonly logger: Logger;
}

function createInstanceA(run: ClientRun, dir: string): Instance {
  const tracker = new ProgressTracker(N);
  const logFile = join(run.logDir, `${run.client}-A.log`);
  const logger = pino({ level: LOG_LEVEL, base: { instance: 'A' } }, destination({ dest: logFile, sync: true }));
  const runtime = createRuntime({
    applicationId: run.applicationId,
    brokers: run.brokers,
    stateDir: dir,
    topology: scaleTopology(run.topic, tracker),
    kafkaClient: run.client,
    logger,
    kafkaLogLevel: KAFKA_LOG_LEVEL as 'error',
    ...(run.sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs: run.sessionTimeoutMs }),
    ...(HEARTBEAT_MS === undefined ? {} : { heartbeatIntervalMs: HEARTBEAT_MS }),
    ...standbyOptions(STANDBYS, 'A'),
  });
  return { runtime, tracker, logFile, logger };
}

/** Phase 1: start → all RUNNING → all committed, memory, sockets, idle CPU. True when it got through. */
async function measureSingle(run: ClientRun, a: Instance): Promise<boolean> {
  const { runtime } = a;
  const f = (name: string, unit: string, value: number): void => report(`${run.prefix}.${name}`, unit, value);
  note(`${run.client}: load average at start ${load1()}`);
  f('loadavg.1m.start', 'load', loadavg()[0]!);

  // Samplers: RSS peak, and the event-loop delay of the assignment (start → all RUNNING) and of the commits.
  let peakRss = 0;
  const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage.rss()); }, 250);
  const assignDelay = monitorEventLoopDelay({ resolution: 10 });
  const commitDelay = monitorEventLoopDelay({ resolution: 10 });
  const delayFigures = (label: string, h: IntervalHistogram): void => {
    if (h.count === 0) return;
    f(`${label}.loop.delay.p99.ms`, 'ms', h.percentile(99) / 1e6);
    f(`${label}.loop.delay.max.ms`, 'ms', h.max / 1e6);
  };
  try {
    const t0 = performance.now();
    assignDelay.enable();
    let startError: unknown = null;
    const starting = runtime.start().then(() => performance.now() - t0, (error: unknown) => { startError = error; return Number.NaN; });

    // 1. every task RUNNING
    let maxRunning = 0;
    let maxSuspended = 0; // tasks whose open failed and waits for its retry (recover())
    let allRunningMs = Number.NaN;
    let lastLog = Date.now();
    const runLimit = phaseBudget(run, 180_000, 90_000);
    for (const limitAt = Date.now() + runLimit; Date.now() < limitAt && startError === null && runtime.state !== 'FAILED';) {
      const tasks = runtime.localTasks();
      const running = tasks.filter((t) => t.state === 'RUNNING').length;
      maxRunning = Math.max(maxRunning, running);
      maxSuspended = Math.max(maxSuspended, tasks.filter((t) => t.state === 'SUSPENDED').length);
      if (running >= N) {
        allRunningMs = performance.now() - t0;
        break;
      }
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        note(`${run.client} +${Math.round(performance.now() - t0)} ms: ${describeProgress(runtime)}`);
      }
      await sleep(50);
    }
    assignDelay.disable();
    const startMs = await within(starting, 0, Number.NaN);
    if (Number.isFinite(startMs)) f('start.resolved.ms', 'ms', startMs);
    if (startError !== null) note(`${run.client}: start() failed: ${String(startError)}`);
    f('start.running.tasks', 'tasks', maxRunning);
    f('start.suspended.max', 'tasks', maxSuspended);
    delayFigures('start', assignDelay);
    if (!Number.isFinite(allRunningMs)) {
      note(`${run.client}: NOT all ${N} tasks RUNNING within ${runLimit} ms: ${describeProgress(runtime)}`);
      return false;
    }
    f('start.running.ms', 'ms', allRunningMs);
    const afterStart = process.memoryUsage();
    const fdsAfterStart = openFds();
    f('rss.start.mb', 'MB', mb(afterStart.rss));
    f('heap.start.mb', 'MB', mb(afterStart.heapUsed));
    f('sockets.start', 'sockets', fdsAfterStart.sockets);
    f('fds.start', 'fds', fdsAfterStart.fds);
    f('timers.start', 'timers', resources().get('Timeout') ?? 0);

    // 2. every record committed (readCommitted views)
    commitDelay.enable();
    const missing = new Set(Array.from({ length: N }, (_, p) => p));
    let committedMs = Number.NaN;
    let lastSweep = 0;
    const commitLimit = phaseBudget(run, 120_000, 60_000);
    for (const limitAt = Date.now() + commitLimit; Date.now() < limitAt && runtime.state === 'RUNNING';) {
      // Sweeping N views costs event-loop time itself: only when the counter says so, or every 2 s.
      if (runtime.metricsSnapshot().recordsCommitted >= TOTAL || Date.now() - lastSweep > 2_000) {
        lastSweep = Date.now();
        await sweepCommitted(runtime, missing);
        if (missing.size === 0) {
          committedMs = performance.now() - t0;
          break;
        }
      }
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        note(`${run.client} +${Math.round(performance.now() - t0)} ms: ${describeProgress(runtime)}; partitions not yet committed: ${missing.size}`);
      }
      await sleep(50);
    }
    commitDelay.disable();
    if (!Number.isFinite(committedMs)) {
      note(`${run.client}: NOT every record committed within ${commitLimit} ms: ${describeProgress(runtime)}; partitions missing: ${missing.size}`);
      f('start.committed.partitions', 'partitions', N - missing.size);
      return false;
    }
    f('start.committed.ms', 'ms', committedMs);
    f('running.to.committed.ms', 'ms', committedMs - allRunningMs);
    delayFigures('commit', commitDelay);
    const m = runtime.metricsSnapshot();
    f('commits', 'count', m.commits);
    f('commit.p50.ms', 'ms', m.commitLatencyP50Ms);
    f('commit.p99.ms', 'ms', m.commitLatencyP99Ms);
    f('commit.kafka.p50.ms', 'ms', m.commitPhasesP50Ms.kafkaCommit);
    f('control.queue.max', 'ops', m.controlQueueMaxDepth);
    f('control.wait.p99.ms', 'ms', m.controlWaitP99Ms);

    // 3. idle cost of N open tasks: CPU over 3 s with nothing to do
    await sleep(500);
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    await sleep(3_000);
    const cpu = process.cpuUsage(cpu0);
    f('idle.cpu.pct', '% of one core', ((cpu.user + cpu.system) / 1000 / (performance.now() - wall0)) * 100);
    const idle = process.memoryUsage();
    f('rss.idle.mb', 'MB', mb(idle.rss));
    f('heap.idle.mb', 'MB', mb(idle.heapUsed));
    f('rss.peak.mb', 'MB', mb(peakRss));
    f('sockets.idle', 'sockets', openFds().sockets);
    return true;
  } finally {
    clearInterval(sampler);
    assignDelay.disable();
    commitDelay.disable();
  }
}

interface Window {
  readonly name: string;
  readonly from: number;
  /** Per partition: the longest pause ended (or still open) in this window, and when it began. */
  readonly max: Float64Array;
  readonly maxFrom: Float64Array;
}

interface LagSample {
  readonly t: number;
  readonly total: number;
  /** Mean of `total` over the trailing second: librdkafka delivers in batches, so the raw lag is a saw-tooth. */
  readonly smooth: number;
  readonly a: number;
  readonly b: number;
}

/**
 * The pauses of one consumer of the input (A's tasks, or the baseline's bare consumer), from its
 * ProgressTracker and the load producer's acknowledgements: per window, each partition's longest
 * pause — an interval during which the partition had input and its position did not move, from
 * the later of its last progress and the acknowledgement of the first record it had not
 * processed, to its next progress.
 */
class PauseSeries {
  private readonly ackEnds: number[][] = Array.from({ length: N }, () => []);
  private readonly ackTimes: number[][] = Array.from({ length: N }, () => []);
  private readonly ackHead = new Int32Array(N);
  private readonly stallSince = new Float64Array(N).fill(Number.NaN);
  private window: Window | null = null;
  private readonly closed = new Map<string, Window>();

  constructor(readonly tracker: ProgressTracker) {}

  acked(partition: number, end: number, at: number): void {
    this.ackEnds[partition]!.push(end);
    this.ackTimes[partition]!.push(at);
  }

  beginWindow(name: string): void {
    this.window = { name, from: performance.now(), max: new Float64Array(N), maxFrom: new Float64Array(N).fill(Number.NaN) };
  }

  /** Closes the window: pauses still open count up to now. */
  endWindow(): Window {
    const w = this.window!;
    const now = performance.now();
    for (let p = 0; p < N; p += 1) {
      const since = this.stallSince[p]!;
      if (!Number.isNaN(since)) this.pauseEnded(w, p, now - since, since);
    }
    this.window = null;
    this.closed.set(w.name, w);
    return w;
  }

  /** A window closed earlier, by name. */
  windowNamed(name: string): Window | undefined {
    return this.closed.get(name);
  }

  private pauseEnded(w: Window, p: number, gap: number, since: number): void {
    if (gap > w.max[p]!) {
      w.max[p] = gap;
      w.maxFrom[p] = since;
    }
  }

  /** Partition `p` at `now`, its acknowledged end `end`. */
  sample(p: number, end: number, now: number): void {
    const tracker = this.tracker;
    const position = tracker.position[p]!;
    const first = tracker.firstSinceMark[p]!;
    if (!Number.isNaN(first)) {
      tracker.firstSinceMark[p] = Number.NaN;
      const since = this.stallSince[p]!;
      if (!Number.isNaN(since) && this.window !== null) this.pauseEnded(this.window, p, first - since, since);
      this.stallSince[p] = Number.NaN;
    }
    // Acknowledgements the consumer has processed past.
    const ends = this.ackEnds[p]!;
    let head = this.ackHead[p]!;
    while (head < ends.length && ends[head]! <= position) head += 1;
    if (head > 256) {
      ends.splice(0, head);
      this.ackTimes[p]!.splice(0, head);
      head = 0;
    }
    this.ackHead[p] = head;
    if (end > position) {
      if (Number.isNaN(this.stallSince[p]!)) {
        const available = head < ends.length ? this.ackTimes[p]![head]! : now;
        const last = tracker.lastProgressAt[p]!;
        this.stallSince[p] = Number.isNaN(last) ? available : Math.max(last, available);
      }
    } else {
      this.stallSince[p] = Number.NaN;
    }
  }

  /** The longest pause still open among `mask`'s partitions (for the progress lines). */
  openPauseMax(mask: Uint8Array | null): number {
    const now = performance.now();
    let max = 0;
    for (let p = 0; p < N; p += 1) {
      if (mask !== null && mask[p] === 0) continue;
      const since = this.stallSince[p]!;
      if (!Number.isNaN(since)) max = Math.max(max, now - since);
    }
    return max;
  }
}

/**
 * Samples every SAMPLE_MS: each partition's end offset (acknowledged to the load producer), A's
 * processed position (its ProgressTracker) and B's (reported over IPC), A's tasks (every other
 * sample); keeps the lag series and, per window, the longest pause of each of A's partitions
 * (PauseSeries), and of the baseline consumer's when one is attached.
 */
class Monitor {
  readonly ends = new Float64Array(N);
  readonly pausesA: PauseSeries;
  /** The baseline consumer's pauses (bench/scale-baseline.ts), once attached. */
  baseline: PauseSeries | null = null;
  readonly ownedA = new Uint8Array(N);
  readonly runningA = new Uint8Array(N);
  ownedACount = 0;
  runningACount = 0;
  readonly posB = new Float64Array(N);
  readonly ownedB = new Uint8Array(N);
  ownedBCount = 0;
  runningBCount = 0;
  bStates: Record<string, number> = {};
  bReprocessed = 0;
  readonly lag: LagSample[] = [];
  /** Partitions A held at every task sample since trackStaying(); and those seen in a state other than RUNNING. */
  staying: Uint8Array | null = null;
  stayingNotRunning: Uint8Array | null = null;
  private timer: NodeJS.Timeout | null = null;
  private ticks = 0;
  private readonly recent: number[] = [];
  private recentSum = 0;

  /**
   * Progress by either instance (the furthest position of A or B), for the partitions that move:
   * a moved partition's stall is the time it had input and neither instance processed it. B's
   * positions arrive every 100 ms, so its progress is timed at its report's arrival (≤ 100 ms late).
   */
  private readonly either = new ProgressTracker(N);
  readonly pausesEither = new PauseSeries(this.either);

  constructor(private readonly a: Instance) {
    this.pausesA = new PauseSeries(a.tracker);
  }

  start(): void {
    this.sampleTasks();
    this.timer = setInterval(() => this.sample(), SAMPLE_MS);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  acked(partition: number, end: number, at: number): void {
    if (end <= this.ends[partition]!) return; // an earlier send acknowledged later
    this.ends[partition] = end;
    this.pausesA.acked(partition, end, at);
    this.pausesEither.acked(partition, end, at);
    this.baseline?.acked(partition, end, at);
  }

  /** `position` reached at `at` by some instance: the combined series moves if it is further. */
  private advanceEither(p: number, position: number, at: number, firstAt: number): void {
    const either = this.either;
    if (position <= either.position[p]!) return;
    either.position[p] = position;
    either.lastProgressAt[p] = at;
    if (Number.isNaN(either.firstSinceMark[p]!)) either.firstSinceMark[p] = firstAt;
  }

  fromB(message: Extract<FromInstance, { t: 'progress' }>): void {
    const now = performance.now();
    for (const [p, position] of message.moved) {
      this.posB[p] = position;
      this.advanceEither(p, position, now, now);
    }
    this.ownedB.fill(0);
    for (const p of message.owned) this.ownedB[p] = 1;
    this.ownedBCount = message.owned.length;
    this.runningBCount = message.running;
    this.bStates = message.states;
    this.bReprocessed = message.reprocessed;
  }

  /** B is gone: it owns nothing any more (its last positions stay: they are where A resumes). */
  bGone(): void {
    this.ownedB.fill(0);
    this.ownedBCount = 0;
    this.runningBCount = 0;
    this.bStates = {};
  }

  /** Opens a window of pauses for A (and the baseline). */
  beginWindow(name: string): void {
    this.pausesA.beginWindow(name);
    this.pausesEither.beginWindow(name);
    this.baseline?.beginWindow(name);
  }

  /** Closes the window: pauses still open count up to now. A's window; the baseline's is kept by name. */
  endWindow(): Window {
    this.baseline?.endWindow();
    this.pausesEither.endWindow();
    return this.pausesA.endWindow();
  }

  trackStaying(): void {
    this.staying = Uint8Array.from(this.ownedA);
    this.stayingNotRunning = new Uint8Array(N);
  }

  private sampleTasks(): void {
    this.ownedA.fill(0);
    this.runningA.fill(0);
    let owned = 0;
    let running = 0;
    for (const t of this.a.runtime.localTasks()) {
      if (t.partition < 0 || t.partition >= N) continue;
      this.ownedA[t.partition] = 1;
      owned += 1;
      if (t.state === 'RUNNING') {
        this.runningA[t.partition] = 1;
        running += 1;
      }
    }
    this.ownedACount = owned;
    this.runningACount = running;
    if (this.staying !== null && this.stayingNotRunning !== null) {
      for (let p = 0; p < N; p += 1) {
        if (this.ownedA[p] === 0) this.staying[p] = 0;
        else if (this.runningA[p] === 0) this.stayingNotRunning[p] = 1;
      }
    }
  }

  private sample(): void {
    const now = performance.now();
    this.ticks += 1;
    if (this.ticks % 2 === 0) this.sampleTasks();
    const tracker = this.a.tracker;
    let total = 0;
    let lagA = 0;
    let lagB = 0;
    for (let p = 0; p < N; p += 1) {
      const end = this.ends[p]!;
      // A's progress into the combined series first: pausesA.sample clears A's firstSinceMark.
      const firstA = tracker.firstSinceMark[p]!;
      if (!Number.isNaN(firstA)) this.advanceEither(p, tracker.position[p]!, tracker.lastProgressAt[p]!, firstA);
      this.pausesEither.sample(p, end, now);
      this.pausesA.sample(p, end, now);
      this.baseline?.sample(p, end, now);
      const position = tracker.position[p]!;
      const furthest = Math.max(position, this.posB[p]!);
      const behind = end > furthest ? end - furthest : 0;
      total += behind;
      if (this.ownedB[p] === 1) lagB += behind;
      else if (this.ownedA[p] === 1) lagA += behind;
    }
    this.recent.push(total);
    this.recentSum += total;
    if (this.recent.length > 1_000 / SAMPLE_MS) this.recentSum -= this.recent.shift()!;
    this.lag.push({ t: now, total, smooth: this.recentSum / this.recent.length, a: lagA, b: lagB });
  }

  /** The longest pause still open among `mask`'s partitions of A (for the progress lines). */
  openPauseMax(mask: Uint8Array | null): number {
    return this.pausesA.openPauseMax(mask);
  }

  lastLag(): LagSample {
    return this.lag[this.lag.length - 1] ?? { t: performance.now(), total: 0, smooth: 0, a: 0, b: 0 };
  }

  lagBetween(from: number, to: number): LagSample[] {
    return this.lag.filter((s) => s.t >= from && s.t <= to);
  }
}

/**
 * From `event`: the first sample after which the (smoothed) lag stays at or below `threshold`,
 * as ms after the event; 0 when it never went above; NaN when it was still above at the end.
 */
function recoveredAfter(samples: readonly LagSample[], event: number, threshold: number): number {
  let lastAbove = -1;
  for (let i = 0; i < samples.length; i += 1) if (samples[i]!.smooth > threshold) lastAbove = i;
  if (lastAbove < 0) return 0;
  if (lastAbove === samples.length - 1) return Number.NaN;
  return samples[lastAbove + 1]!.t - event;
}

/** When the longest pauses (≥ 500 ms) of `partitions` in window `w` began, in 500 ms buckets after `event`. */
function pauseHistogram(w: Window, event: number, partitions: readonly number[]): string {
  const buckets = new Map<number, { n: number; max: number }>();
  for (const p of partitions) {
    if (w.max[p]! < 500) continue;
    const bucket = Math.floor((w.maxFrom[p]! - event) / 500) * 500;
    const entry = buckets.get(bucket) ?? { n: 0, max: 0 };
    entry.n += 1;
    entry.max = Math.max(entry.max, w.max[p]!);
    buckets.set(bucket, entry);
  }
  const line = [...buckets].sort((x, y) => x[0] - y[0]).map(([t, e]) => `+${t}ms: ${e.n} (≤${Math.round(e.max)})`).join(', ');
  return `tasks with a pause ≥ 500 ms, by when it began: ${line || 'none'}`;
}

/**
 * A bench process of its own (a tsx script given its JSON config, with IPC): registered for the
 * clean-up on a crash of this process, its exit tracked, ended by kill().
 */
class BenchChild<FromChild> {
  readonly child: ChildProcess;
  exited = false;
  exitCode: number | null = null;

  constructor(script: string, config: unknown, onMessage: (message: FromChild) => void, onExit: () => void = () => {}) {
    this.child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(script, import.meta.url)), JSON.stringify(config)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', onMessage);
    liveChildren.add(this.child);
    this.child.on('exit', (code) => {
      liveChildren.delete(this.child);
      this.exited = true;
      this.exitCode = code;
      onExit();
    });
  }

  /** Ends the child (by its own pid) if it is still there. */
  async kill(): Promise<void> {
    if (this.exited) return;
    this.child.kill('SIGTERM');
    await until(() => this.exited, 3_000);
    if (!this.exited) this.child.kill('SIGKILL');
  }
}

/** Instance B in a process of its own. */
class InstanceB extends BenchChild<FromInstance> {
  bootedAt = Number.NaN;
  startingAt = Number.NaN;
  startedMs = Number.NaN;
  stoppedMs = Number.NaN;
  stopOk = false;
  failed: string | null = null;

  constructor(run: ClientRun, readonly logFile: string, monitor: Monitor) {
    const config: InstanceConfig = {
      brokers: run.brokers,
      topic: run.topic,
      applicationId: run.applicationId,
      client: run.client,
      partitions: N,
      sessionTimeoutMs: run.sessionTimeoutMs,
      heartbeatIntervalMs: HEARTBEAT_MS,
      standbys: STANDBYS,
      leaveGroup: B_LEAVES_GROUP,
      logFile,
      logLevel: LOG_LEVEL,
      kafkaLogLevel: KAFKA_LOG_LEVEL,
    };
    super('./scale-instance.ts', config, (message) => {
      switch (message.t) {
        case 'booted': this.bootedAt = performance.now(); break;
        case 'starting': this.startingAt = performance.now(); break;
        case 'started': this.startedMs = message.ms; break;
        case 'failed': this.failed = message.error; break;
        case 'progress': monitor.fromB(message); break;
        case 'stopped':
          this.stoppedMs = message.ms;
          this.stopOk = message.ok;
          monitor.bGone();
          break;
        default: break;
      }
    }, () => monitor.bGone());
  }

  requestStart(): void {
    if (this.child.connected) this.child.send({ t: 'start' } satisfies ToInstance);
  }

  requestStop(): void {
    if (this.child.connected) this.child.send({ t: 'stop' } satisfies ToInstance);
  }
}

/**
 * The raw client consuming the input in a group and a process of its own (bench/scale-baseline.ts),
 * its positions reported like B's: its pauses, measured as A's are, say what the broker and this
 * machine allow a bare consumer in the same windows.
 */
class Baseline extends BenchChild<FromBaseline> {
  readonly tracker = new ProgressTracker(N);
  ready = false;
  failed: string | null = null;
  /** The roll's second member: its assignment as last reported, and whether it has left. */
  secondOwned: number[] = [];
  secondLeft = false;

  constructor(run: ClientRun) {
    const config: BaselineConfig = {
      brokers: run.brokers, topic: run.topic, client: run.client, partitions: N, heartbeatIntervalMs: HEARTBEAT_MS ?? DEFAULT_HEARTBEAT_INTERVAL_MS,
    };
    super('./scale-baseline.ts', config, (message) => {
      switch (message.t) {
        case 'ready': this.ready = true; break;
        case 'failed': this.failed = message.error; break;
        case 'owned': this.secondOwned = message.owned; break;
        case 'left': this.secondLeft = true; break;
        default: this.progress(message.moved);
      }
    });
  }

  request(message: ToBaseline): void {
    if (this.child.connected) this.child.send(message);
  }

  /** Positions from the child; its epoch-millisecond times onto this process's performance clock. */
  private progress(moved: ReadonlyArray<readonly [number, number, number, number]>): void {
    const origin = performance.timeOrigin;
    for (const [p, position, firstAt, lastAt] of moved) {
      if (position <= this.tracker.position[p]!) continue;
      this.tracker.position[p] = position;
      this.tracker.lastProgressAt[p] = lastAt - origin;
      if (Number.isNaN(this.tracker.firstSinceMark[p]!)) this.tracker.firstSinceMark[p] = firstAt - origin;
    }
  }
}

/**
 * The roll again, on the bare client (bench/scale-baseline.ts), after iqgate's and with the same
 * load: a second member joins the baseline consumer's group, holds, and leaves. Its partitions
 * (moved) and the others (staying) are watched as iqgate's are, so `roll.*.stall` can be read
 * against what the client's own group protocol costs a consumer that does no work:
 * `roll.baseline.{moved,staying}.stall.max.ms` and the ratios `roll.{moved,staying}.stall.ratio`.
 */
async function measureBaselineRoll(run: ClientRun, monitor: Monitor, baseline: Baseline, iqgate: { moved: number; staying: number }): Promise<void> {
  const f = (name: string, unit: string, value: number): void => report(`${run.prefix}.${name}`, unit, value);
  const series = monitor.baseline;
  if (series === null) return;
  series.beginWindow('roll-join');
  const joinAt = performance.now();
  baseline.request({ t: 'join' });
  await until(() => baseline.secondOwned.length > 0 || baseline.failed !== null || baseline.exited, 60_000);
  if (baseline.secondOwned.length === 0) {
    series.endWindow();
    note(`${run.client}: the baseline's second member got no partitions: ${baseline.failed ?? 'none within 60 s'}`);
    return;
  }
  f('roll.baseline.join.assigned.ms', 'ms', performance.now() - joinAt);
  await sleep(SETTLE_MS + HOLD_MS);
  const moved = new Uint8Array(N);
  const movedCount = baseline.secondOwned.length;
  for (const p of baseline.secondOwned) moved[p] = 1;
  const joinWindow = series.endWindow();
  series.beginWindow('roll-leave');
  const leaveAt = performance.now();
  baseline.request({ t: 'leave' });
  await until(() => baseline.secondLeft || baseline.failed !== null || baseline.exited, 30_000);
  f('roll.baseline.leave.left.ms', 'ms', performance.now() - leaveAt);
  await sleep(SETTLE_MS);
  const leaveWindow = series.endWindow();
  const of = (want: number, w: Window): number => {
    let max = 0;
    for (let p = 0; p < N; p += 1) if (moved[p] === want) max = Math.max(max, w.max[p]!);
    return max;
  };
  const movedMax = Math.max(of(1, joinWindow), of(1, leaveWindow));
  const stayingMax = Math.max(of(0, joinWindow), of(0, leaveWindow));
  f('roll.baseline.moved.partitions', 'partitions', movedCount);
  f('roll.baseline.moved.stall.join.max.ms', 'ms', of(1, joinWindow));
  f('roll.baseline.moved.stall.leave.max.ms', 'ms', of(1, leaveWindow));
  f('roll.baseline.staying.stall.join.max.ms', 'ms', of(0, joinWindow));
  f('roll.baseline.staying.stall.leave.max.ms', 'ms', of(0, leaveWindow));
  f('roll.baseline.moved.stall.max.ms', 'ms', movedMax);
  f('roll.baseline.staying.stall.max.ms', 'ms', stayingMax);
  f('roll.moved.stall.ratio', 'ratio', iqgate.moved / movedMax);
  f('roll.staying.stall.ratio', 'ratio', iqgate.staying / stayingMax);
  note(`${run.client}: bare client roll, join: ${pauseHistogram(joinWindow, joinAt, Array.from({ length: N }, (_, p) => p))}`);
  note(`${run.client}: bare client roll, leave: ${pauseHistogram(leaveWindow, leaveAt, Array.from({ length: N }, (_, p) => p))}`);
}

/**
 * The load producer in a process of its own (bench/scale-load.ts): LOAD_RATE records/s round-robin
 * over the partitions, each acknowledged end offset reported, its time mapped onto this clock.
 */
class LoadProducer extends BenchChild<FromLoad> {
  acked = 0;
  failed = 0;
  /** Ticks that found 4 sends in flight (the rate catches up on the next tick). */
  busyTicks = 0;
  firstError: string | null = null;
  private startedAt = Number.NaN;
  private stoppedAt = Number.NaN;
  private stats = false;

  constructor(run: ClientRun, onAck: (partition: number, end: number, at: number) => void) {
    const config: LoadConfig = { brokers: run.brokers, topic: run.topic, partitions: N, rate: LOAD_RATE, tickMs: SAMPLE_MS };
    const origin = performance.timeOrigin;
    super('./scale-load.ts', config, (message) => {
      switch (message.t) {
        case 'started': this.startedAt = message.at - origin; break;
        case 'failed': this.firstError ??= message.error; break;
        case 'acked':
          this.acked += message.records;
          for (const [p, end] of message.ends) onAck(p, end, message.at - origin);
          break;
        case 'stopped':
          ({ failed: this.failed, busyTicks: this.busyTicks } = message);
          this.firstError ??= message.firstError;
          this.stats = true;
          break;
        default: break;
      }
    });
  }

  async start(): Promise<void> {
    await until(() => !Number.isNaN(this.startedAt) || this.firstError !== null || this.exited, 30_000, 20);
    if (Number.isNaN(this.startedAt)) throw new Error(`the load producer did not start: ${this.firstError ?? 'no answer within 30 s'}`);
  }

  /** Records/s acknowledged since start. */
  rate(): number {
    return this.acked / (((Number.isNaN(this.stoppedAt) ? performance.now() : this.stoppedAt) - this.startedAt) / 1000);
  }

  async stop(): Promise<void> {
    this.stoppedAt = performance.now();
    if (this.child.connected) this.child.send({ t: 'stop' } satisfies ToLoad);
    await until(() => this.stats || this.exited, 8_000, 20);
    await this.kill();
  }
}

/** Phase 2: join and leave of instance B under load. True when both rebalances settled. */
async function measureRebalance(run: ClientRun, a: Instance): Promise<boolean> {
  const f = (name: string, unit: string, value: number): void => report(`${run.prefix}.${name}`, unit, value);
  const monitor = new Monitor(a);
  const load = new LoadProducer(run, (p, end, at) => monitor.acked(p, end, at));
  const delay = monitorEventLoopDelay({ resolution: 10 });
  let b: InstanceB | null = null;
  const baseline = new Baseline(run);
  let completed = false;
  const progress = (label: string, t0: number): string => {
    const l = monitor.lastLag();
    const bStates = Object.entries(monitor.bStates).map(([s, n]) => `${s}=${n}`).join(' ') || '-';
    return `${run.client} ${label} +${((performance.now() - t0) / 1000).toFixed(1)} s: lag ${l.total} (A ${l.a}, B ${l.b}); `
      + `A tasks ${monitor.ownedACount} (RUNNING ${monitor.runningACount}); B tasks ${monitor.ownedBCount} (${bStates}); `
      + `longest open pause on A's staying tasks ${Math.round(monitor.openPauseMax(monitor.staying))} ms; load avg ${load1()}`;
  };
  try {
    f('session.timeout.ms', 'ms', run.sessionTimeoutMs ?? RUNTIME_DEFAULT_SESSION_TIMEOUT_MS);
    f('standby.replicas', 'count', STANDBYS);
    await until(() => baseline.ready || baseline.failed !== null || baseline.exited, 30_000);
    if (baseline.ready) monitor.baseline = new PauseSeries(baseline.tracker);
    else note(`${run.client}: the baseline consumer did not start: ${baseline.failed ?? 'no answer within 30 s'}`);
    await load.start();
    monitor.start();
    await sleep(WARMUP_MS);

    // Steady: the lag and the pauses with one instance and the load flowing.
    monitor.beginWindow('steady');
    const steadyFrom = performance.now();
    await sleep(STEADY_MS);
    const steadyWindow = monitor.endWindow();
    const steadySamples = monitor.lagBetween(steadyFrom, performance.now());
    const steadyLag = steadySamples.map((s) => s.total);
    const steadySmoothP99 = percentile(steadySamples.map((s) => s.smooth), 99);
    const threshold = Math.ceil(1.5 * steadySmoothP99 + 0.05 * LOAD_RATE);
    const steadyPauses = Array.from(steadyWindow.max);
    f('load.rate', 'records/s', load.rate());
    f('steady.lag.p50', 'records', percentile(steadyLag, 50));
    f('steady.lag.p99', 'records', percentile(steadyLag, 99));
    f('steady.lag.smooth.p99', 'records', steadySmoothP99);
    f('steady.pause.max.ms', 'ms', Math.max(...steadyPauses));
    f('steady.pause.p99.ms', 'ms', percentile(steadyPauses, 99));
    const steadyBaseline = monitor.baseline?.windowNamed('steady');
    if (steadyBaseline !== undefined) f('baseline.steady.pause.max.ms', 'ms', Math.max(...steadyBaseline.max));
    note(`${run.client}: steady: ${pauseHistogram(steadyWindow, steadyFrom, Array.from({ length: N }, (_, p) => p))}`);
    f('rebalance.lag.threshold', 'records', threshold);
    note(`${run.client}: steady with ${LOAD_RATE} records/s offered (${Math.round(load.rate())} acknowledged/s); load average ${load1()}`);
    f('loadavg.1m.rebalance', 'load', loadavg()[0]!);

    // B boots first, between the windows: loading its modules takes these two cores from A and
    // the broker for seconds, a pause this machine imposes (B would boot on a machine of its own),
    // not one of the rebalance's. The join window opens once that has settled.
    const spawnedAt = performance.now();
    const instanceB = new InstanceB(run, join(run.logDir, `${run.client}-B.log`), monitor);
    b = instanceB;
    await until(() => !Number.isNaN(instanceB.bootedAt) || instanceB.failed !== null || instanceB.exited, 60_000);
    f('rebalance.b.boot.ms', 'ms', b.bootedAt - spawnedAt);
    await sleep(BOOT_SETTLE_MS);

    // Join: B starts; the group rebalances until A and B split the partitions, all RUNNING.
    monitor.beginWindow('join');
    monitor.trackStaying();
    delay.enable();
    const joinFrom = performance.now();
    b.requestStart();
    let assignedAt = Number.NaN;
    let lastLine = Date.now();
    const joinLimitAt = Date.now() + phaseBudget(run, 120_000, 75_000);
    let aboveAt = performance.now();
    while (Date.now() < joinLimitAt && b.failed === null && !b.exited) {
      await sleep(100);
      const now = performance.now();
      if (monitor.lastLag().smooth > threshold) aboveAt = now;
      if (Number.isNaN(assignedAt) && monitor.ownedBCount > 0 && monitor.runningBCount === monitor.ownedBCount
        && monitor.ownedACount + monitor.ownedBCount === N && monitor.runningACount === monitor.ownedACount && monitor.ownedACount < N) {
        assignedAt = now;
      }
      if (Date.now() - lastLine > 2_000) {
        lastLine = Date.now();
        note(progress('join', Number.isNaN(b.startingAt) ? joinFrom : b.startingAt));
      }
      if (!Number.isNaN(assignedAt) && now - Math.max(aboveAt, assignedAt) >= SETTLE_MS) break;
    }
    const joinEvent = Number.isNaN(b.startingAt) ? joinFrom : b.startingAt;
    const joinEnd = performance.now();
    const joinLag = monitor.lagBetween(joinEvent, joinEnd);
    f('rebalance.b.spawn.to.start.ms', 'ms', joinEvent - spawnedAt);
    if (Number.isFinite(b.startedMs)) f('rebalance.b.start.resolved.ms', 'ms', b.startedMs);
    f('rebalance.join.assigned.ms', 'ms', assignedAt - joinEvent);
    f('rebalance.join.a.tasks', 'tasks', monitor.ownedACount);
    f('rebalance.join.b.tasks', 'tasks', monitor.ownedBCount);
    f('rebalance.join.lag.max', 'records', Math.max(0, ...joinLag.map((s) => s.total)));
    const joinRecover = Number.isNaN(assignedAt) ? Number.NaN : recoveredAfter(joinLag, joinEvent, threshold);
    f('rebalance.join.recover.ms', 'ms', joinRecover);
    if (b.failed !== null) note(`${run.client}: instance B failed: ${b.failed}`);
    if (Number.isNaN(assignedAt)) {
      note(`${run.client}: the join did NOT settle within its budget: ${progress('join', joinEvent)}`);
      monitor.endWindow();
      return false;
    }

    // Leave: B stops gracefully; its partitions go back to A. The join window runs on through
    // the hold, up to B's stop: a pause that began and ended between the settled join and the
    // stop (a failed commit, a late rebalance) used to fall between the windows, uncounted.
    await sleep(HOLD_MS);
    const joinWindow = monitor.endWindow();
    monitor.beginWindow('leave');
    const leaveEvent = performance.now();
    b.requestStop();
    let backAt = Number.NaN;
    aboveAt = performance.now();
    const leaveLimitAt = Date.now() + phaseBudget(run, (run.sessionTimeoutMs ?? RUNTIME_DEFAULT_SESSION_TIMEOUT_MS) + 90_000, 45_000);
    while (Date.now() < leaveLimitAt) {
      await sleep(100);
      const now = performance.now();
      if (monitor.lastLag().smooth > threshold) aboveAt = now;
      if (Number.isNaN(backAt) && monitor.ownedACount === N && monitor.runningACount === N) backAt = now;
      if (Date.now() - lastLine > 2_000) {
        lastLine = Date.now();
        note(progress('leave', leaveEvent));
      }
      if (!Number.isNaN(backAt) && now - Math.max(aboveAt, backAt) >= SETTLE_MS) break;
    }
    const leaveEnd = performance.now();
    const leaveWindow = monitor.endWindow();
    delay.disable();
    const leaveLag = monitor.lagBetween(leaveEvent, leaveEnd);
    if (Number.isFinite(b.stoppedMs)) f('rebalance.b.stop.ms', 'ms', b.stoppedMs);
    else note(`${run.client}: instance B did not report its stop`);
    f('rebalance.leave.assigned.ms', 'ms', backAt - leaveEvent);
    f('rebalance.leave.lag.max', 'records', Math.max(0, ...leaveLag.map((s) => s.total)));
    f('rebalance.leave.recover.ms', 'ms', Number.isNaN(backAt) ? Number.NaN : recoveredAfter(leaveLag, leaveEvent, threshold));
    if (Number.isNaN(backAt)) note(`${run.client}: A did NOT get all ${N} tasks back within its budget: ${progress('leave', leaveEvent)}`);

    // What the instances logged (warnings, errors) in each window: failed commits explain long pauses.
    note(`${run.client}: steady ${wallClock(steadyFrom)}–${wallClock(spawnedAt)} (B spawned ${wallClock(spawnedAt)}, booted ${wallClock(b.bootedAt)}), join ${wallClock(joinEvent)}, B stop ${wallClock(leaveEvent)}, settled ${wallClock(leaveEnd)} (UTC)`);
    for (const [label, from, to] of [['steady', steadyFrom, spawnedAt], ['join', joinFrom, leaveEvent], ['leave', leaveEvent, leaveEnd]] as const) {
      for (const [who, file] of [['a', a.logFile], ['b', b.logFile]] as const) {
        const { warnings, handled } = warningsBetween(file, from, to);
        const total = [...warnings.values()].reduce((x, y) => x + y, 0);
        f(`rebalance.${who}.warnings.${label}`, 'lines', total);
        for (const [message, n] of warnings) note(`${run.client}: ${label}: instance ${who.toUpperCase()} logged ${n}× "${message}"`);
        for (const [message, n] of handled) note(`${run.client}: ${label}: instance ${who.toUpperCase()} logged ${n}× (info, handled) "${message}"`);
      }
    }

    // Pauses of the tasks that stayed on A throughout (join and leave).
    const staying: number[] = [];
    for (let p = 0; p < N; p += 1) if (monitor.staying![p] === 1) staying.push(p);
    const pauseOf = (p: number): number => Math.max(joinWindow.max[p]!, leaveWindow.max[p]!);
    const pauses = staying.map(pauseOf);
    f('rebalance.staying.tasks', 'tasks', staying.length);
    f('rebalance.staying.not.running', 'tasks', staying.filter((p) => monitor.stayingNotRunning![p] === 1).length);
    f('rebalance.pause.max.ms', 'ms', pauses.length > 0 ? Math.max(...pauses) : Number.NaN);
    f('rebalance.pause.p99.ms', 'ms', percentile(pauses, 99));
    f('rebalance.pause.join.max.ms', 'ms', staying.length > 0 ? Math.max(...staying.map((p) => joinWindow.max[p]!)) : Number.NaN);
    f('rebalance.pause.leave.max.ms', 'ms', staying.length > 0 ? Math.max(...staying.map((p) => leaveWindow.max[p]!)) : Number.NaN);
    f('rebalance.pause.over.1s', 'tasks', pauses.filter((x) => x > 1_000).length);
    // The partitions that moved (to B at the join, back to A at the leave): how long each had
    // input that neither instance processed. Issue 25's targets: moved ≤ 1 s, staying ≤ 0.5 s.
    const eitherJoin = monitor.pausesEither.windowNamed('join');
    const eitherLeave = monitor.pausesEither.windowNamed('leave');
    const moved: number[] = [];
    for (let p = 0; p < N; p += 1) if (monitor.staying![p] === 0) moved.push(p);
    let roll: { moved: number; staying: number } | null = null;
    if (eitherJoin !== undefined && eitherLeave !== undefined) {
      const movedPauses = moved.map((p) => Math.max(eitherJoin.max[p]!, eitherLeave.max[p]!));
      f('rebalance.moved.tasks', 'tasks', moved.length);
      f('rebalance.moved.pause.join.max.ms', 'ms', moved.length > 0 ? Math.max(...moved.map((p) => eitherJoin.max[p]!)) : Number.NaN);
      f('rebalance.moved.pause.leave.max.ms', 'ms', moved.length > 0 ? Math.max(...moved.map((p) => eitherLeave.max[p]!)) : Number.NaN);
      f('rebalance.moved.pause.p99.ms', 'ms', percentile(movedPauses, 99));
      roll = { moved: movedPauses.length > 0 ? Math.max(...movedPauses) : Number.NaN, staying: pauses.length > 0 ? Math.max(...pauses) : Number.NaN };
      f('roll.moved.stall.max.ms', 'ms', roll.moved);
      f('roll.staying.stall.max.ms', 'ms', roll.staying);
    }
    // The bare consumer's pauses on the same partitions in the same windows.
    const baseJoin = monitor.baseline?.windowNamed('join');
    const baseLeave = monitor.baseline?.windowNamed('leave');
    if (baseJoin !== undefined && baseLeave !== undefined && staying.length > 0) {
      const basePauses = staying.map((p) => Math.max(baseJoin.max[p]!, baseLeave.max[p]!));
      const baseMax = Math.max(...basePauses);
      f('rebalance.baseline.pause.max.ms', 'ms', baseMax);
      f('rebalance.baseline.pause.p99.ms', 'ms', percentile(basePauses, 99));
      f('rebalance.baseline.pause.join.max.ms', 'ms', Math.max(...staying.map((p) => baseJoin.max[p]!)));
      f('rebalance.baseline.pause.leave.max.ms', 'ms', Math.max(...staying.map((p) => baseLeave.max[p]!)));
      f('rebalance.pause.max.ratio', 'ratio', Math.max(...pauses) / baseMax);
      note(`${run.client}: baseline consumer, join: ${pauseHistogram(baseJoin, joinEvent, staying)}`);
      note(`${run.client}: baseline consumer, leave: ${pauseHistogram(baseLeave, leaveEvent, staying)}`);
    }
    f('rebalance.loop.delay.p99.ms', 'ms', delay.percentile(99) / 1e6);
    f('rebalance.loop.delay.max.ms', 'ms', delay.max / 1e6);
    f('rebalance.a.reprocessed', 'records', a.tracker.reprocessed);
    f('rebalance.b.reprocessed', 'records', monitor.bReprocessed);
    // Which staying tasks paused longest, and when (relative to B's start() and stop()).
    const worst = [...staying].sort((x, y) => pauseOf(y) - pauseOf(x)).slice(0, 5);
    for (const p of worst) {
      const inJoin = joinWindow.max[p]! >= leaveWindow.max[p]!;
      const w = inJoin ? joinWindow : leaveWindow;
      const event = inJoin ? joinEvent : leaveEvent;
      note(`${run.client}: staying task of partition ${p} paused ${Math.round(w.max[p]!)} ms from ${inJoin ? 'join' : 'leave'} +${Math.round(w.maxFrom[p]! - event)} ms`);
    }
    note(`${run.client}: join: ${pauseHistogram(joinWindow, joinEvent, staying)}`);
    note(`${run.client}: leave: ${pauseHistogram(leaveWindow, leaveEvent, staying)}`);
    // Lag over time (1 s steps) from B's start to the end, for the record.
    const series = (from: number, to: number): string => {
      const out: string[] = [];
      for (let t = from; t <= to; t += 1_000) {
        const s = monitor.lag.find((x) => x.t >= t);
        if (s !== undefined) out.push(`${s.total}`);
      }
      return out.join(' ');
    };
    note(`${run.client}: lag each second from B's start: ${series(joinEvent, leaveEvent)}`);
    note(`${run.client}: lag each second from B's stop: ${series(leaveEvent, leaveEnd)}`);
    completed = !Number.isNaN(backAt);
    if (completed && roll !== null && BASELINE_ROLL) await measureBaselineRoll(run, monitor, baseline, roll);
    return completed;
  } finally {
    delay.disable();
    monitor.stop();
    await baseline.kill();
    await load.stop();
    f('load.records', 'records', load.acked);
    if (load.failed > 0) note(`${run.client}: ${load.failed} load records failed: ${load.firstError}`);
    if (load.busyTicks > 0) note(`${run.client}: the load producer had 4 sends in flight on ${load.busyTicks} ticks`);
    const stillB = b;
    if (stillB !== null) {
      if (!stillB.exited) {
        stillB.requestStop();
        await until(() => stillB.exited, 25_000, 100);
      }
      await stillB.kill();
      if (stillB.exitCode !== 0 && stillB.exitCode !== null) note(`${run.client}: instance B exited with code ${stillB.exitCode}`);
    }
    f('rebalance.completed', 'bool', completed ? 1 : 0);
  }
}

async function runClient(run: ClientRun, baseline: boolean): Promise<void> {
  const f = (name: string, unit: string, value: number): void => report(`${run.prefix}.${name}`, unit, value);
  const dir = await mkdtemp(join(tmpdir(), 'iqgate-bench-scale-a-'));
  let a: Instance | null = null;
  let completed = false;
  try {
    let t = performance.now();
    await createTopic(run.admin, run.topic);
    f('topic.create.ms', 'ms', performance.now() - t);
    t = performance.now();
    await produceRecords(run.kafka, run.topic);
    f('produce.ms', 'ms', performance.now() - t);
    const inTopic = (await run.admin.fetchTopicOffsets(run.topic)).reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
    if (inTopic !== TOTAL) throw new Error(`the topic holds ${inTopic} records, expected ${TOTAL}`);
    f('sockets.before', 'sockets', openFds().sockets);
    if (baseline) {
      const read = await baselineRead(run.kafka, run.topic, phaseBudget(run, 90_000, 120_000));
      report(`scale.baseline.kafkajs.read.ms`, 'ms', read.ms);
    }

    a = createInstanceA(run, dir);
    completed = await measureSingle(run, a);
    if (completed && REBALANCE) {
      if (run.deadline - Date.now() < 90_000) note(`${run.client}: ${Math.round((run.deadline - Date.now()) / 1000)} s left: join/leave phase skipped`);
      else completed = await measureRebalance(run, a);
    }

    // stop(): last commits, leave the group, close the producers and stores
    await sleep(1_000);
    f('stop.tasks', 'tasks', a.runtime.localTasks().length);
    const stopping = performance.now();
    const stopped = await within(a.runtime.stop().then(() => true, () => true), Math.max(5_000, Math.min(40_000, run.deadline - Date.now() + 20_000)), false);
    const stopMs = performance.now() - stopping;
    if (stopped) f('stop.ms', 'ms', stopMs);
    else note(`${run.client}: stop() did not return within ${Math.round(stopMs)} ms`);
    if (stopped) a = null;
    await sleep(200);
    f('sockets.stopped', 'sockets', openFds().sockets);
    f('timers.stopped', 'timers', resources().get('Timeout') ?? 0);
  } catch (error) {
    note(`${run.client}: failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
  } finally {
    if (a !== null) await within(a.runtime.stop().catch(() => undefined), 25_000, undefined);
    f('completed', 'bool', completed ? 1 : 0);
    if (process.env.SCALE_EXPERIMENT_RD_RETRY_CONCURRENT === '1') note(`${run.client}: EXPERIMENT: instance A called sendOffsets()/init() again ${experimentRetries} times so far`);
    await deleteTopics(run.admin, [run.topic, changelogTopic(run.applicationId, STORE)]);
    await run.admin.deleteGroups([run.applicationId]).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    summarizeLog(`${run.client} A`, join(run.logDir, `${run.client}-A.log`));
    summarizeLog(`${run.client} B`, join(run.logDir, `${run.client}-B.log`));
  }
}

/** The commit measured, and the files of src/ changed in the working tree (other work in progress is measured too). */
function sourceState(): string {
  const git = (...args: string[]): string => spawnSync('git', args, { encoding: 'utf8', cwd: fileURLToPath(new URL('..', import.meta.url)) }).stdout ?? '';
  const changed = git('status', '--porcelain', '--', 'src').split('\n').filter((l) => l.length > 3).map((l) => l.slice(3));
  return `git ${git('rev-parse', '--short', 'HEAD').trim() || '?'}${changed.length > 0 ? ` + uncommitted changes in ${changed.join(', ')}` : ', src/ clean'}`;
}

async function main(): Promise<void> {
  // Whatever happens, the process ends: the broker's watchdog stops the JVM when we exit.
  const hard = setTimeout(() => {
    console.error(`bench:scale: hard timeout after ${Math.round((Date.now() - began) / 1000)} s; exiting`);
    process.exit(2);
  }, BUDGET_MS + 30_000);
  hard.unref();
  const experiments = applyExperiments();
  if (experiments.length > 0) note(`EXPERIMENT (not the runtime as shipped): ${experiments.join('; ')}`);
  note(`source: ${sourceState()}`);
  note(`${N} partitions × ${RECORDS} records; clients ${CLIENTS.join(', ')}; join/leave ${REBALANCE ? `at ${LOAD_RATE} records/s` : 'skipped'}; budget ${BUDGET_MS / 1000} s; B stops ${B_LEAVES_GROUP ? 'with' : 'without'} leaveGroup; load average ${load1()}; UV_THREADPOOL_SIZE ${process.env.UV_THREADPOOL_SIZE ?? 'unset (4)'} (npm run bench:scale sets 16, as the iqgate command does)`);
  const broker = await brokers();
  // Quiet: right after topic creation kafkajs logs (and retries) NOT_LEADER and coordinator-not-available errors.
  const kafka = new Kafka({ clientId: 'bench-scale', brokers: broker.brokers, logLevel: logLevel.NOTHING });
  const admin: Admin = kafka.admin();
  const logDir = mkdtempSync(join(tmpdir(), 'iqgate-bench-scale-logs-'));
  note(`instance logs in ${logDir}`);
  try {
    await admin.connect();
    await warmCoordinators(kafka, admin);
    for (const [i, client] of CLIENTS.entries()) {
      // An equal share of what is left, keeping 20 s for the end.
      const share = (deadline - 20_000 - Date.now()) / (CLIENTS.length - i);
      const run: ClientRun = {
        client,
        prefix: `scale.${client}`,
        kafka,
        admin,
        brokers: broker.brokers,
        topic: `bench-scale-${client}-${suffix}`,
        applicationId: `bench-scale-${client}-${suffix}`,
        deadline: Date.now() + share,
        logDir,
        sessionTimeoutMs: SESSION_TIMEOUT_MS[client],
      };
      note(`${client}: ${Math.round(share / 1000)} s for this client`);
      await runClient(run, i === 0);
    }
  } finally {
    report('scale.wall.s', 's', (Date.now() - began) / 1000);
    await figures.write('scale');
    await admin.deleteGroups([`bench-scale-plain-${suffix}`]).catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    const stoppingBroker = Date.now();
    await broker.stop();
    if (broker.local) note(`broker stopped in ${Date.now() - stoppingBroker} ms`);
    clearTimeout(hard);
    note(`load average at the end ${load1()}; still active at exit: ${JSON.stringify(Object.fromEntries(resources()))}`);
  }
}

await main();
// Handles a stopped runtime left open (reported above as sockets.stopped and "still active at
// exit") must not keep the bench running.
setTimeout(() => {
  console.error(`bench:scale: exiting with handles still open: ${JSON.stringify(Object.fromEntries(resources()))}`);
  process.exit(0);
}, 2_000).unref();
