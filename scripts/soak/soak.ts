/**
 * The crash campaign (not in CI; issue 8): `npm run soak -- --kills 100` runs the wordcount, on
 * each Kafka client against a real broker, through `kills` events — SIGKILL at a random moment,
 * SIGKILL at each step of the commit protocol (IQGATE_CRASH_AT), and zombies (SIGSTOP past the
 * session timeout while a second instance takes over, then SIGCONT) — restarting on the same
 * state directory each time while input keeps flowing. Then it recounts the input and checks:
 * 0 duplicates and 0 losses in the read_committed output, the committed store (and a fresh
 * restore from the changelog) equal to the model, and no restart replaying more than its
 * changelog tail (no wipe). The checks are the crash tests' (test/integration/processing/
 * wordcount-crash.test.ts, wordcount-zombie.test.ts), at a scale CI has no time for.
 *
 * Options: --kills n (100) --clients librdkafka,kafkajs --seed n (random, printed)
 *   --rate lines/s (60) --partitions n (3) --session-timeout ms (6000) --zombie-every n (8)
 *   --random-max-ms ms (6000) --out file (bench/results/soak.json)
 * Brokers: KAFKA_BROKERS if set, else a local broker from scripts/kafka/broker.ts.
 * Prints one line per event and one summary line per client; each child's logs are kept under
 * .tmp/soak/<start time>/<client>/; exits 1 on any violation.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { killAllChildren } from '../../test/integration/processing/wordcount-child.js';
import { planEvents, seededRandom } from './event-schedule.js';
import { runCampaign, type CampaignResult } from './run-campaign.js';
import type { KafkaClientName } from './soak-child.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CLIENTS: readonly KafkaClientName[] = ['librdkafka', 'kafkajs'];

const { values: args } = parseArgs({
  options: {
    kills: { type: 'string', default: '100' },
    clients: { type: 'string', default: CLIENTS.join(',') },
    seed: { type: 'string' },
    rate: { type: 'string', default: '60' },
    partitions: { type: 'string', default: '3' },
    'session-timeout': { type: 'string', default: '6000' },
    'zombie-every': { type: 'string', default: '8' },
    'random-max-ms': { type: 'string', default: '6000' },
    out: { type: 'string', default: join(root, 'bench/results/soak.json') },
  },
});

function positiveInt(name: string, value: string | undefined, min = 1): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new TypeError(`--${name} must be an integer ≥ ${min}, not ${JSON.stringify(value)}`);
  return n;
}

const kills = positiveInt('kills', args.kills);
const seed = args.seed === undefined ? Math.floor(Math.random() * 1_000_000) : positiveInt('seed', args.seed, 0);
const clients = (args.clients ?? '').split(',').map((c) => c.trim()).filter((c) => c.length > 0);
for (const c of clients) if (!(CLIENTS as readonly string[]).includes(c)) throw new TypeError(`--clients: unknown client ${c} (one of ${CLIENTS.join(', ')})`);
const schedule = {
  kills,
  zombieEvery: positiveInt('zombie-every', args['zombie-every'], 0),
  randomMaxMs: positiveInt('random-max-ms', args['random-max-ms']),
  // At most two rounds of commits of the counting tasks (one cut per task and commit).
  maxOccurrence: 2 * positiveInt('partitions', args.partitions),
};
const sessionTimeoutMs = positiveInt('session-timeout', args['session-timeout']);

async function broker(): Promise<{ brokers: string[]; stop: () => Promise<void> }> {
  if (process.env.KAFKA_BROKERS) return { brokers: process.env.KAFKA_BROKERS.split(','), stop: async () => {} };
  const { startBroker } = await import('../kafka/broker.js');
  const b = await startBroker({ log: (line) => console.log(line) });
  console.log(`broker ${b.brokers} started in ${b.startupMs} ms`);
  return { brokers: [b.brokers], stop: b.stop };
}

function summaryLine(r: CampaignResult): string {
  const steps = Object.entries(r.kills.step).map(([s, n]) => `${s} ${n}`).join(', ');
  const o = r.output;
  return `soak ${r.client}: ${r.kills.total} kills (random ${r.kills.random}; step ${Object.values(r.kills.step).reduce((a, n) => a + n, 0)} [${steps}], crash point fired ${r.kills.stepFired}; `
    + `zombie ${r.kills.zombie}, fenced seen ${r.kills.zombieFenced}), input ${r.input.lines} lines, output ${o.updates} updates: `
    + `duplicates ${o.duplicates}, losses ${o.losses}, out of order ${o.outOfOrder}, out of range ${o.outOfRange}, wrong final ${o.wrongFinal}; `
    + `store = model ${r.store.equalsModel ? 'yes' : `NO (${r.store.differences} words)`}, fresh restore = model ${r.freshRestore.equalsModel ? 'yes' : `NO (${r.freshRestore.differences} words)`}; `
    + `no wipe: ${r.replay.restores} task restores, ${r.replay.overTail} over their tail; max replay on restart ${r.replay.restartMax} ≤ tail ${r.replay.restartMaxTail}, `
    + `takeover catch-up ${r.replay.takeoverMax} ≤ ${r.replay.takeoverMaxTail}, changelog ${r.replay.changelogTotal}; after-kafka-commit kills repaired by the next restore ${r.replay.afterKafkaCommitRepairs}; `
    + `${r.violations.length} violations; ${(r.durationMs / 60_000).toFixed(1)} min`;
}

const startedAt = new Date();
const logRoot = join(root, '.tmp/soak', startedAt.toISOString().replace(/[:.]/g, '-'));
let stopBroker: () => Promise<void> = async () => {};
const onSignal = (signal: NodeJS.Signals): void => {
  console.error(`${signal}: killing the children and stopping`);
  void killAllChildren().then(() => stopBroker()).finally(() => process.exit(130));
};
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);

const results: CampaignResult[] = [];
let exitCode = 0;
try {
  const b = await broker();
  stopBroker = b.stop;
  // spawnWordcount (the crash tests' child) takes the broker from KAFKA_BROKERS outside vitest.
  process.env.KAFKA_BROKERS = b.brokers.join(',');
  console.log(`crash campaign: ${kills} kills per client on ${clients.join(', ')}, seed ${seed}, logs in ${logRoot}`);
  for (const [i, client] of clients.entries()) {
    // Each client gets its own plan from the seed (the same for a given seed and client position).
    const events = planEvents(schedule, seededRandom(seed + i * 7919));
    const result = await runCampaign({
      client: client as KafkaClientName,
      brokers: b.brokers,
      events,
      seed: seed + i,
      partitions: positiveInt('partitions', args.partitions),
      linesPerSecond: positiveInt('rate', args.rate),
      sessionTimeoutMs,
      logDir: join(logRoot, client),
      stepTimeoutMs: 20_000,
      runningTimeoutMs: 60_000,
      fenceWaitMs: 30_000,
      drainTimeoutMs: 300_000,
      progress: (line) => console.log(line),
    });
    results.push(result);
    console.log(summaryLine(result));
    for (const v of result.violations) console.log(`  VIOLATION ${client}: ${v}`);
  }
} catch (error) {
  console.error('crash campaign failed to run:', error);
  exitCode = 2;
} finally {
  await killAllChildren();
  await stopBroker();
}

const out = resolve(args.out ?? join(root, 'bench/results/soak.json'));
await mkdir(dirname(out), { recursive: true });
await writeFile(out, `${JSON.stringify({ startedAt: startedAt.toISOString(), kills, seed, clients, schedule, sessionTimeoutMs, logs: logRoot, results }, null, 2)}\n`);
console.log(`wrote ${out}`);
for (const r of results) console.log(summaryLine(r));
if (exitCode === 0 && results.some((r) => r.violations.length > 0)) exitCode = 1;
process.exit(exitCode);
