/**
 * Instance B of bench:scale's join/leave phase: a second iqgate instance in a process of its own
 * (same applicationId as instance A, its own state directory), started and stopped by
 * bench/scale.ts over IPC (it boots, says so, and starts when told). Reports every 100 ms the positions its tasks processed (only those
 * that moved) and its task states; on `stop` it stops gracefully and says how long it took.
 *
 *   node --import tsx bench/scale-instance.ts '<InstanceConfig JSON>'
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { destination, pino } from 'pino';
import { createRuntime } from '../src/index.js';
import { applyExperiments, ProgressTracker, scaleTopology, standbyOptions, type FromInstance, type InstanceConfig, type ToInstance } from './scale-shared.js';

const config = JSON.parse(process.argv[2] ?? '{}') as InstanceConfig;
applyExperiments();
const send = (message: FromInstance): void => {
  if (process.connected) process.send?.(message);
};

const dir = mkdtempSync(join(tmpdir(), 'iqgate-bench-scale-b-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const tracker = new ProgressTracker(config.partitions);
const logger = pino({ level: config.logLevel, base: { instance: 'B' } }, destination({ dest: config.logFile, sync: true }));
const runtime = createRuntime({
  applicationId: config.applicationId,
  brokers: config.brokers,
  stateDir: dir,
  topology: scaleTopology(config.topic, tracker),
  kafkaClient: config.client,
  logger,
  kafkaLogLevel: config.kafkaLogLevel as 'error',
  ...(config.sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs: config.sessionTimeoutMs }),
  ...(config.heartbeatIntervalMs === undefined ? {} : { heartbeatIntervalMs: config.heartbeatIntervalMs }),
  ...standbyOptions(config.standbys, 'B'),
});

const reported = new Float64Array(config.partitions);
function reportProgress(): void {
  const moved: Array<[number, number]> = [];
  for (let p = 0; p < config.partitions; p += 1) {
    const position = tracker.position[p]!;
    if (position !== reported[p]) {
      moved.push([p, position]);
      reported[p] = position;
    }
  }
  const states: Record<string, number> = {};
  const owned: number[] = [];
  let running = 0;
  for (const t of runtime.localTasks()) {
    states[t.state] = (states[t.state] ?? 0) + 1;
    owned.push(t.partition);
    if (t.state === 'RUNNING') running += 1;
  }
  send({ t: 'progress', moved, owned, running, states, reprocessed: tracker.reprocessed });
}
const progress = setInterval(reportProgress, 100);

let stopping: Promise<void> | null = null;
async function stop(): Promise<void> {
  const started = performance.now();
  const ok = await runtime.stop({ leaveGroup: config.leaveGroup }).then(() => true, (error: unknown) => {
    logger.error({ err: error }, 'bench instance B: stop failed');
    return false;
  });
  clearInterval(progress);
  reportProgress();
  send({ t: 'stopped', ms: performance.now() - started, ok });
  // Leave the IPC channel open until the parent has the message; it disconnects or kills us.
  setTimeout(() => process.exit(0), 1_000).unref();
  process.disconnect?.();
}

let started = false;
process.on('message', (message: ToInstance) => {
  if (message.t === 'start' && !started) {
    started = true;
    start();
  }
  if (message.t === 'stop' && stopping === null) stopping = stop();
});
// The orchestrator went away: leave as gracefully as we can.
process.on('disconnect', () => {
  if (stopping === null) stopping = stop();
});

function start(): void {
  send({ t: 'starting' });
  const t0 = performance.now();
  runtime.start().then(
    () => send({ t: 'started', ms: performance.now() - t0 }),
    (error: unknown) => {
      send({ t: 'failed', error: String(error) });
      clearInterval(progress);
      setTimeout(() => process.exit(1), 200);
    },
  );
}

// Booted (modules loaded, the runtime built): the orchestrator says when to start, so that this
// process's boot, on the same cores as instance A and the broker, stays out of the join window.
send({ t: 'booted' });
