/**
 * A broker that goes away and comes back (CONVENTIONS: "a typed error with a stable code, and
 * the running state is intact"). The wordcount runs exactly-once in this process against a
 * single-node broker of its own (not the shared one), which is SIGKILLed while lines are being
 * processed, kept away, and restarted on the same ports and log directory.
 *
 * While it is away: the runtime stays RUNNING, `runtime.kafkaError` says BROKER_UNAVAILABLE
 * (set when kafkajs gives up a fetch/join and reconnects, within a few seconds), the committed
 * stores stay open and readable and do not move, and nothing rejects unhandled. After it is
 * back: the consumer rejoins, failed tasks are re-initialised (InitProducerId settles what the
 * kill left open, restore replays any committed tail), and the store and the read_committed
 * output are exactly-once against the model — no duplicate, no gap.
 *
 * Limits found (README, "When the broker goes away"):
 * - The outage ridden through has no upper bound: the consumer reconnects for as long as it
 *   takes, and a task whose commit or re-initialisation fails retries with exponential back-off
 *   capped at `startupRetryMaxMs` (default 30 s) — so after a long outage a task resumes up to
 *   that long after the broker is back. Here the broker is away ~20 s (8 s down, then ~12 s for
 *   its restart), and processing resumes within ~1 s of its return; the test takes ~30 s.
 * - A SIGKILLed single-node KRaft broker takes ~12 s to come back, against ~2 s for a fresh one
 *   (probably its controller waiting out the dead incarnation's broker.session.timeout.ms, 9 s).
 * - During the outage, tasks whose commit failed are SUSPENDED; the query engine answers their
 *   partitions with NOT_ACTIVE, or with their committed data to queries with allowStale (checked
 *   here through GraphQL), as `runtime.localStore()` reads it.
 */
// Before scripts/kafka/broker.ts, which imports kafkajs: the runtime refuses an unpatched kafkajs.
import '../../../src/kafka/kafkajs-patches.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { startBroker, stopBrokerByPid, type RunningBroker } from '../../../scripts/kafka/broker.js';
import { buildWordcountTopology, produceLines } from '../../../examples/wordcount/index.js';
import type { StreamTask } from '../../../src/processing/stream-task.js';
import { createGateway } from '../../../src/graphql/create-gateway.js';
import { createRuntime, type Runtime } from '../../../src/runtime/runtime.js';
import { RuntimeStateProvider } from '../../../src/runtime/runtime-state-provider.js';
import { kafkajs } from '../../support/kafka.js';
import { committedCounts, createTopics, expectedCounts, mapsEqual, outputProblems, readOutput, uniqueName, until } from './wordcount-harness.js';

const PARTITIONS = 3;

const gateway = (runtime: Runtime) => createGateway({ provider: new RuntimeStateProvider(runtime), logging: false });
const SEED = 41;
const LINES_PER_ROUND = 300;
/** How long the broker stays down before it is restarted (its restart adds ~10 s more). */
const DOWN_MS = 8_000;

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A free port below the kernel's ephemeral range: the broker must get the same ports back after
 * the outage, and an ephemeral port could meanwhile be taken by some client's outgoing socket.
 */
async function stablePort(taken: readonly number[]): Promise<number> {
  let low = 32768;
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch {
    // not Linux: keep the usual default
  }
  const from = Math.max(1024, low - 12_000);
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const port = from + Math.floor(Math.random() * (low - from));
    if (!taken.includes(port) && await canListen(port)) return port;
  }
  throw new Error(`no free port in [${from}, ${low})`);
}

interface LogLine { readonly level: number; readonly msg: string; readonly component?: string; readonly code?: string; readonly err?: { readonly code?: string } }

/** Word by word, `low[w] ≤ counts[w] ≤ high[w]`: a committed state between two points of the input. */
function between(counts: ReadonlyMap<string, number>, low: ReadonlyMap<string, number>, high: ReadonlyMap<string, number>): string[] {
  const problems: string[] = [];
  for (const [word, n] of high) {
    const c = counts.get(word) ?? 0;
    if (c < (low.get(word) ?? 0) || c > n) problems.push(`${word}: ${c} not in [${low.get(word) ?? 0}, ${n}]`);
  }
  for (const word of counts.keys()) if (!high.has(word)) problems.push(`unexpected word ${word}`);
  return problems;
}

describe('a broker that goes away and comes back', () => {
  it('rides through a broker restart: RUNNING with BROKER_UNAVAILABLE meanwhile, committed state readable, exactly-once after', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'iqgate-outage-kafka-'));
    const stateDir = await mkdtemp(join(tmpdir(), 'iqgate-outage-state-'));
    const brokerPort = await stablePort([]);
    const ports = { broker: brokerPort, controller: await stablePort([brokerPort]) };
    let broker: RunningBroker | undefined;
    let runtime: Runtime | undefined;
    const warnings: LogLine[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => { unhandled.push(reason); };
    process.on('unhandledRejection', onUnhandled);
    const started = Date.now();
    const timeline: string[] = [];
    const mark = (what: string): void => {
      timeline.push(`+${Date.now() - started} ms ${what}`);
      if (process.env.IQGATE_OUTAGE_DEBUG !== undefined) console.log(`[broker-outage] ${timeline.at(-1) ?? ''}`);
    };
    const context = (): string => `\ntimeline:\n  ${timeline.join('\n  ')}\niqgate warnings:\n  ${warnings.filter((w) => w.component !== 'kafkajs').slice(-12).map((w) => `${w.msg} ${w.code ?? w.err?.code ?? ''}`).join('\n  ')}`;
    try {
      broker = await startBroker({ dataDir, ports });
      const brokers = [broker.brokers];
      mark(`broker up at ${broker.brokers}`);
      const kafka = new kafkajs.Kafka({ clientId: uniqueName('outage'), brokers, logLevel: kafkajs.logLevel.NOTHING });
      const input = uniqueName('outage-in');
      const output = uniqueName('outage-out');
      const admin = kafka.admin();
      await admin.connect();
      try {
        await createTopics(admin, [input, output], PARTITIONS);
      } finally {
        await admin.disconnect();
      }
      let produced = 0;
      const produce = async (count: number): Promise<void> => {
        await produceLines({ brokers, topic: input, seed: SEED, from: produced, count });
        produced += count;
      };

      // 1. Running and committed.
      await produce(LINES_PER_ROUND);
      const logger = pino({ level: 'warn' }, { write: (line: string) => { warnings.push(JSON.parse(line) as LogLine); } });
      const rt = createRuntime({
        brokers, applicationId: uniqueName('outage'), stateDir, logger, topology: buildWordcountTopology({ inputTopic: input, outputTopic: output }),
        cacheMaxBytes: 0, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500,
      });
      runtime = rt;
      await rt.start();
      await until(`the first ${produced} lines committed`, async () => mapsEqual(await committedCounts([rt]), expectedCounts(SEED, produced)), 60_000, 100);
      const committedBeforeKill = expectedCounts(SEED, produced);
      mark('first lines committed');

      // 2. The broker dies while the next lines are being processed: a task that owns a store
      // partition holds writes of an open transaction, which must never reach its committed store
      // (should a round be processed and committed before the first look, produce another).
      const statefulTasks = new Set(rt.localStores().map((l) => l.taskId));
      const holdsUncommitted = (): boolean => rt.localTasks().some((t) => statefulTasks.has(t.id) && (t as StreamTask).hasUncommitted());
      for (let round = 1; ; round += 1) {
        await produce(LINES_PER_ROUND);
        if (await until('a store-owning task with uncommitted records', holdsUncommitted, 10_000, 1).then(() => true, () => false)) break;
        if (round === 3) throw new Error(`no store-owning task held uncommitted records after ${round} rounds${context()}`);
      }
      await stopBrokerByPid(broker.pid, 'SIGKILL');
      broker = undefined;
      const killedAt = Date.now();
      mark('broker SIGKILLed');

      // 3. While it is away: a coded error, still RUNNING, the committed state readable and still.
      await until('runtime.kafkaError is BROKER_UNAVAILABLE', () => rt.kafkaError !== null, 30_000, 50)
        .catch((error: unknown) => { throw new Error(`${String(error)}${context()}`); });
      mark(`kafkaError ${rt.kafkaError?.code ?? ''}: ${rt.kafkaError?.message ?? ''}`);
      expect(rt.kafkaError?.code).toBe('BROKER_UNAVAILABLE');
      expect(rt.kafkaError?.retriable).toBe(true);
      expect(warnings.some((w) => w.component === undefined && w.code === 'BROKER_UNAVAILABLE'), 'the runtime logs the coded error').toBe(true);
      expect(rt.state).toBe('RUNNING');
      expect(rt.localStores().map((l) => l.partition).sort()).toEqual([0, 1, 2]);
      const duringOutage = await committedCounts([rt]);
      expect(between(duringOutage, committedBeforeKill, expectedCounts(SEED, produced)), 'committed state while the broker is away').toEqual([]);
      await until('the open transaction failed (its task rolled back and re-initialising)', () => rt.localTasks().some((t) => t.state !== 'RUNNING'), 30_000, 50)
        .catch((error: unknown) => { throw new Error(`${String(error)}${context()}`); });
      mark(`tasks after the failed commit: ${rt.localTasks().map((t) => `${t.id}=${t.state}`).join(' ')}`);
      // kafkajs: the open transaction's commit fails (BROKER_UNAVAILABLE). librdkafka may see its
      // session expire first: the partitions come back "lost" and the tasks are suspended (the
      // transaction's commit then fails too, or is settled by the next InitProducerId).
      expect(warnings.some((w) => w.component === 'tasks' && (w.err?.code === 'BROKER_UNAVAILABLE' || w.msg.startsWith('partitions lost'))), 'the failed commit is logged with its code').toBe(true);
      expect(rt.localStores().map((l) => l.partition).sort(), 'stores stay open').toEqual([0, 1, 2]);
      // Through GraphQL: a partition whose task is not RUNNING fails NOT_ACTIVE, unless the client
      // accepts stale reads; then every partition answers with its committed state.
      await until('a store-owning task rolled back', () => rt.localStores().some((l) => l.taskState !== 'RUNNING'), 30_000, 50);
      // Partitions the session lost make the instance REBALANCING (as Kafka Streams' lost
      // partitions do) until the group gives them back; a failed commit alone leaves it RUNNING.
      const lostSeen = (): boolean => warnings.some((w) => w.msg.startsWith('partitions lost'));
      const lostBefore = lostSeen();
      const staleRead = await gateway(rt).fetch('http://iqgate.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ instance { state kafkaError { code } } strict: range(store: "word-counts", first: 1000) { partitions { failure { reason } } } stale: range(store: "word-counts", first: 1000, allowStale: true) { edges { node { key value } } partitions { failure { reason } } } }' }),
      });
      const stale = (await staleRead.json()) as { data: { instance: { state: string; kafkaError: { code: string } | null }; strict: { partitions: Array<{ failure: { reason: string } | null }> }; stale: { edges: Array<{ node: { key: string; value: string } }>; partitions: Array<{ failure: unknown }> } } };
      expect(stale.data.strict.partitions.some((p) => p.failure?.reason === 'NOT_ACTIVE'), 'a rolled-back task is not served by default').toBe(true);
      expect(stale.data.stale.partitions.map((p) => p.failure)).toEqual([null, null, null]);
      const lostAfter = lostSeen();
      const states = lostBefore === lostAfter ? [lostBefore ? 'REBALANCING' : 'RUNNING'] : ['RUNNING', 'REBALANCING'];
      expect(stale.data.instance.kafkaError, 'a dashboard sees why').toEqual({ code: 'BROKER_UNAVAILABLE' });
      expect(states, `instance state with partitions ${lostAfter ? '' : 'not '}lost`).toContain(stale.data.instance.state);
      expect(new Map(stale.data.stale.edges.map((e) => [e.node.key, Number(e.node.value)])), 'allowStale serves the committed state (int64 counts come as decimal strings)').toEqual(duringOutage);
      await until(`the broker down for ${DOWN_MS} ms`, () => Date.now() - killedAt >= DOWN_MS, DOWN_MS + 5_000, 100);
      mark(`tasks while down: ${rt.localTasks().map((t) => `${t.id}=${t.state}`).join(' ')}`);
      expect(rt.state).toBe('RUNNING');
      expect(rt.kafkaError?.code).toBe('BROKER_UNAVAILABLE');
      expect(await committedCounts([rt]), 'nothing commits while the broker is away').toEqual(duringOutage);

      // 4. Back on the same ports and log: the consumer rejoins and every line is processed once.
      broker = await startBroker({ dataDir, ports });
      const outageMs = Date.now() - killedAt;
      mark(`broker back after ${outageMs} ms away (restart took ${broker.startupMs} ms)`);
      await until('the consumer back in its group', () => rt.kafkaError === null, 60_000, 50)
        .catch((error: unknown) => { throw new Error(`${String(error)}${context()}`); });
      mark('rejoined');
      await produce(LINES_PER_ROUND);
      const expected = expectedCounts(SEED, produced);
      await until(`all ${produced} lines committed`, async () => mapsEqual(await committedCounts([rt]), expected), 60_000, 100)
        .catch((error: unknown) => { throw new Error(`${String(error)}${context()}`); });
      mark(`all committed; tasks ${rt.localTasks().map((t) => `${t.id}=${t.state}`).join(' ')}`);

      expect(outputProblems(await readOutput(kafka, output), expected, true), `read_committed output${context()}`).toEqual([]);
      expect(rt.state).toBe('RUNNING');
      expect(rt.fatalError).toBeNull();
      expect(rt.localTasks().every((t) => t.state === 'RUNNING'), context()).toBe(true);
      expect(unhandled, 'unhandled rejections').toEqual([]);
      // Not a timed assertion: the outage must really have outlasted kafkajs' retries.
      expect(outageMs).toBeGreaterThanOrEqual(DOWN_MS);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await runtime?.stop().catch(() => undefined);
      await broker?.stop().catch(() => undefined);
      await rm(dataDir, { recursive: true, force: true });
      await rm(stateDir, { recursive: true, force: true });
    }
  }, 150_000);
});
