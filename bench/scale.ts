/**
 * bench:scale — 1000 tasks in one process, for real (DESIGN.md §1 and §7 "scale"; KAFKAJS-NOTES §5).
 *
 * One run against a real broker: a topic of N partitions (SCALE_PARTITIONS, default 1000) with a
 * few records in each (SCALE_RECORDS per partition, default 5), materialized as a table through
 * the public API — one task, one transactional kafkajs producer and one store partition per
 * input partition. Measured:
 *  - start() → every task RUNNING (assignment: InitProducerId, store open, restore, offsets);
 *  - start() → every record committed (counted in the readCommitted views of the local stores);
 *  - RSS / heap, open sockets and timers after start; idle CPU with N tasks open;
 *  - commit latency p50/p99 and control-queue depth (runtime.metricsSnapshot());
 *  - event-loop delay p99/max while the tasks are assigned and opened;
 *  - stop(): last commits, leaving the group, closing N producers and stores.
 * Baseline, same run and topic: a plain kafkajs consumer in its own group (no state, no
 * transactions) — time to its first full read.
 *
 * Every phase has a deadline (SCALE_TIMEOUT_S, default 270 s, for the whole run); when N cannot
 * finish, the bench prints how far it got (task states, control queue) and still cleans up.
 * Prints one line per figure and writes bench/results/scale.json ([{ name, unit, value }]).
 * Brokers: KAFKA_BROKERS if set, else a local broker from scripts/kafka/broker.ts.
 */
import { Figures } from './figures.js';
import '../src/kafka/kafkajs-patches.js';
import { readdirSync, readlinkSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { createRuntime, serdes, StreamsBuilder, type Runtime } from '../src/index.js';

const N = Number(process.env.SCALE_PARTITIONS ?? 1000);
const RECORDS = Number(process.env.SCALE_RECORDS ?? 5);
const TOTAL = N * RECORDS;
const BUDGET_MS = Number(process.env.SCALE_TIMEOUT_S ?? 270) * 1000;
const STORE = 'scale-table';
const suffix = `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
const began = Date.now();
const deadline = began + BUDGET_MS;

const figures = new Figures();
const report = figures.report.bind(figures);
const note = (line: string): void => console.log(`# ${line}`);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `promise`'s value, or `fallback` after `ms` (the timer is cleared either way: nothing keeps the process alive). */
async function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<T>((resolve) => { timer = setTimeout(() => resolve(fallback), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}
const mb = (bytes: number): number => bytes / 1048576;

/** Remaining time for a phase: its own cap, never past the run's deadline minus a reserve for cleanup. */
function phaseBudget(capMs: number, reserveMs = 60_000): number {
  return Math.max(1_000, Math.min(capMs, deadline - reserveMs - Date.now()));
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

async function brokers(): Promise<{ brokers: string[]; local: boolean; stop: () => Promise<void> }> {
  if (process.env.KAFKA_BROKERS) return { brokers: process.env.KAFKA_BROKERS.split(','), local: false, stop: async () => {} };
  const { startBroker } = await import('../scripts/kafka/broker.js');
  const broker = await startBroker();
  note(`local broker ${broker.brokers} up in ${broker.startupMs} ms`);
  return { brokers: broker.brokers.split(','), local: true, stop: () => broker.stop() };
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
async function baselineRead(kafka: Kafka, topic: string): Promise<{ ms: number; read: number }> {
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
    const limit = phaseBudget(90_000);
    const finished = await within(all.then(() => true), limit, false);
    const ms = performance.now() - started;
    if (!finished) note(`baseline consumer read only ${read}/${TOTAL} records within ${limit} ms`);
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
    + `commits ${m.commits}; records committed ${m.recordsCommitted}/${TOTAL}`;
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

async function measureRuntime(brokerList: string[], topic: string, dir: string): Promise<{ runtime: Runtime; completed: boolean }> {
  const builder = new StreamsBuilder();
  builder.table(topic, { store: STORE, key: serdes.string, value: serdes.json });
  const runtime = createRuntime({ applicationId: `bench-scale-${suffix}`, brokers: brokerList, stateDir: dir, topology: builder.build(), logLevel: 'warn' });

  // Samplers: RSS peak, and the event-loop delay of the assignment (start → all RUNNING) and of the commits.
  let peakRss = 0;
  const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage.rss()); }, 250);
  const assignDelay = monitorEventLoopDelay({ resolution: 10 });
  const commitDelay = monitorEventLoopDelay({ resolution: 10 });
  const delayFigures = (label: string, h: IntervalHistogram): void => {
    if (h.count === 0) return;
    report(`event-loop delay p99 ${label}`, 'ms', h.percentile(99) / 1e6);
    report(`event-loop delay max ${label}`, 'ms', h.max / 1e6);
  };

  const t0 = performance.now();
  assignDelay.enable();
  let startError: unknown = null;
  const starting = runtime.start().then(() => performance.now() - t0, (error: unknown) => { startError = error; return Number.NaN; });

  // 1. every task RUNNING
  let maxRunning = 0;
  let maxSuspended = 0; // tasks whose open failed and waits for its retry (recover())
  let allRunningMs = Number.NaN;
  let lastLog = Date.now();
  const runLimit = phaseBudget(180_000, 90_000);
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
      note(`+${Math.round(performance.now() - t0)} ms: ${describeProgress(runtime)}`);
    }
    await sleep(50);
  }
  assignDelay.disable();
  const startMs = await within(starting, 0, Number.NaN);
  if (Number.isFinite(startMs)) report('start() resolved (topics prepared, group joined)', 'ms', startMs);
  if (startError !== null) note(`start() failed: ${String(startError)}`);
  report('tasks RUNNING (reached)', 'tasks', maxRunning);
  report('tasks SUSPENDED at once during assignment (open failed, retried)', 'tasks', maxSuspended);
  delayFigures('during assignment', assignDelay);
  if (!Number.isFinite(allRunningMs)) {
    note(`NOT all ${N} tasks RUNNING within ${runLimit} ms: ${describeProgress(runtime)}`);
    clearInterval(sampler);
    return { runtime, completed: false };
  }
  report(`start() → all ${N} tasks RUNNING`, 'ms', allRunningMs);
  const afterStart = process.memoryUsage();
  const fdsAfterStart = openFds();
  const resAfterStart = resources();
  report('RSS after start', 'MB', mb(afterStart.rss));
  report('heap used after start', 'MB', mb(afterStart.heapUsed));
  report('open sockets after start (/proc/self/fd)', 'sockets', fdsAfterStart.sockets);
  report('open file descriptors after start', 'fds', fdsAfterStart.fds);
  report('active timers after start', 'timers', resAfterStart.get('Timeout') ?? 0);

  // 2. every record committed (readCommitted views)
  commitDelay.enable();
  const missing = new Set(Array.from({ length: N }, (_, p) => p));
  let committedMs = Number.NaN;
  let lastSweep = 0;
  const commitLimit = phaseBudget(120_000, 60_000);
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
      note(`+${Math.round(performance.now() - t0)} ms: ${describeProgress(runtime)}; partitions not yet committed: ${missing.size}`);
    }
    await sleep(50);
  }
  commitDelay.disable();
  if (!Number.isFinite(committedMs)) {
    note(`NOT every record committed within ${commitLimit} ms: ${describeProgress(runtime)}; partitions missing: ${missing.size}`);
    report('partitions fully committed (reached)', 'partitions', N - missing.size);
    clearInterval(sampler);
    return { runtime, completed: false };
  }
  report(`start() → all ${TOTAL} records committed (readCommitted views)`, 'ms', committedMs);
  report('all RUNNING → all committed', 'ms', committedMs - allRunningMs);
  delayFigures('during commits', commitDelay);
  const m = runtime.metricsSnapshot();
  report('commits', 'count', m.commits);
  report('commit latency p50', 'ms', m.commitLatencyP50Ms);
  report('commit latency p99', 'ms', m.commitLatencyP99Ms);
  report('commit phase p50: Kafka commit', 'ms', m.commitPhasesP50Ms.kafkaCommit);
  report('control queue max depth', 'ops', m.controlQueueMaxDepth);
  report('control-queue wait p99', 'ms', m.controlWaitP99Ms);

  // 3. idle cost of N open tasks: CPU over 3 s with nothing to do
  await sleep(500);
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  await sleep(3_000);
  const cpu = process.cpuUsage(cpu0);
  report(`idle CPU with ${N} tasks open`, '% of one core', ((cpu.user + cpu.system) / 1000 / (performance.now() - wall0)) * 100);
  const idle = process.memoryUsage();
  report('RSS with all committed', 'MB', mb(idle.rss));
  report('heap used with all committed', 'MB', mb(idle.heapUsed));
  report('RSS peak (sampled every 250 ms)', 'MB', mb(peakRss));
  clearInterval(sampler);
  return { runtime, completed: true };
}

async function main(): Promise<void> {
  // Whatever happens, the process ends: the broker's watchdog stops the JVM when we exit.
  const hard = setTimeout(() => {
    console.error(`bench:scale: hard timeout after ${Math.round((Date.now() - began) / 1000)} s; exiting`);
    process.exit(2);
  }, BUDGET_MS + 30_000);
  hard.unref();
  note(`${N} partitions × ${RECORDS} records; budget ${BUDGET_MS / 1000} s`);
  const broker = await brokers();
  // Quiet: right after topic creation kafkajs logs (and retries) NOT_LEADER and coordinator-not-available errors.
  const kafka = new Kafka({ clientId: 'bench-scale', brokers: broker.brokers, logLevel: logLevel.NOTHING });
  const admin: Admin = kafka.admin();
  const topic = `bench-scale-${suffix}`;
  const dir = await mkdtemp(join(tmpdir(), 'iqgate-bench-scale-'));
  const removeDir = (): void => rmSync(dir, { recursive: true, force: true });
  process.on('exit', removeDir);
  let runtime: Runtime | null = null;
  let completed = false;
  try {
    await admin.connect();
    let t = performance.now();
    await admin.createTopics({ waitForLeaders: true, timeout: 120_000, topics: [{ topic, numPartitions: N }] });
    await waitServable(admin, topic);
    report(`create topic of ${N} partitions (until servable)`, 'ms', performance.now() - t);
    t = performance.now();
    await produceRecords(kafka, topic);
    report(`produce ${TOTAL} records`, 'ms', performance.now() - t);
    const inTopic = (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
    if (inTopic !== TOTAL) throw new Error(`the topic holds ${inTopic} records, expected ${TOTAL}`);
    const before = openFds();
    report('open sockets before the runtime', 'sockets', before.sockets);

    await warmCoordinators(kafka, admin);
    const baseline = await baselineRead(kafka, topic);
    report(`baseline: plain kafkajs consumer, first full read of ${TOTAL} records`, 'ms', baseline.ms);

    const measured = await measureRuntime(broker.brokers, topic, dir);
    runtime = measured.runtime;
    completed = measured.completed;

    // 4. stop(): last commits, leave the group, close N producers and stores
    const stopping = performance.now();
    const stopped = await within(runtime.stop().then(() => true, () => true), phaseBudget(60_000, 15_000), false);
    const stopMs = performance.now() - stopping;
    if (stopped) report(`stop() with ${N} tasks (last commits, leave group, close)`, 'ms', stopMs);
    else note(`stop() did not return within ${Math.round(stopMs)} ms`);
    runtime = stopped ? null : runtime;
    await sleep(200);
    const after = openFds();
    report('open sockets after stop', 'sockets', after.sockets);
    report('active timers after stop', 'timers', resources().get('Timeout') ?? 0);
  } finally {
    if (runtime !== null) await within(runtime.stop().catch(() => undefined), 25_000, undefined);
    report('completed', 'bool', completed ? 1 : 0);
    report('bench wall time', 's', (Date.now() - began) / 1000);
    await figures.write('scale');
    if (!broker.local) {
      await admin.deleteTopics({ topics: [topic, `bench-scale-${suffix}-${STORE}-changelog`] }).catch(() => undefined);
      await admin.deleteGroups([`bench-scale-plain-${suffix}`, `bench-scale-${suffix}`]).catch(() => undefined);
    }
    await admin.disconnect().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    const stoppingBroker = Date.now();
    await broker.stop();
    if (broker.local) note(`broker stopped in ${Date.now() - stoppingBroker} ms`);
    clearTimeout(hard);
    note(`still active at exit: ${JSON.stringify(Object.fromEntries(resources()))}`);
  }
}

await main();
