/**
 * Standby replicas through a network partition on the real broker (issue 25, "Show"): three
 * wordcount instances, one standby of each task, lines flowing all along. Each instance runs in a
 * network namespace of its own on one lab network (network-lab.ts), reaching the others over it
 * and the broker through TCP relays across it; the test takes one instance's link down (one that
 * runs store tasks), keeps it down for a while, and brings it up again.
 *
 * - Key reads sent to a survivor keep answering every word in at least 99 % of reads, and no
 *   committed count read ever goes backwards (each read carries the positions it last saw as its
 *   bound). A silent owner (packets dropped, nothing refused) is not waited out: after the
 *   gateway's forwardHedgeMs (1 s) the reads ask the partition's standbys too, and the first
 *   answer stands (before the hedge, the first reads that asked it took its whole forward budget,
 *   forwardTimeoutMs 5 s + the read's boundTimeoutMs 3 s); the SIGKILL test's refused
 *   connections fall back at once.
 * - The cut instance, asked from inside its namespace, stops answering as an active owner once its
 *   group session is lost: soon after the session timeout, none of its store tasks is an active
 *   task RUNNING and none of its key reads is served by an active task, until the link is up.
 *   librdkafka checks the session on its own clock and reports the assignment lost (the tasks
 *   roll back and wait SUSPENDED). kafkajs has no such check of its own, so the adapter keeps
 *   one (src/kafka/session-watchdog.ts): its signal is kafkajs' HEARTBEAT event, emitted only
 *   for a heartbeat the coordinator answered (and GROUP_JOIN); with none for a session timeout
 *   while the group is stable, it reports the assignment lost the same way. Without it the
 *   member went on as if it were in the group until a request timed out (30 s) or the link came
 *   back, its idle tasks answering as active with counts the survivors had moved past; with it,
 *   the cut kafkajs instance logged 'partitions lost' 4.8–5.9 s after the cut and showed no
 *   active task RUNNING from the probes sent 4.6–6.1 s after it on (eight runs, 2026-12-04,
 *   docs/architecture.md §5). Once the link is up, the lost tasks the member gets back when it
 *   rejoins re-open from what is committed.
 *   The cut instance is chosen once the group has settled: neither client checks the session of
 *   a member cut off in the middle of a rebalance (see below).
 * - No value is written twice: once the link is up again (the load flowing a few seconds more,
 *   then stopped), the read_committed output holds every word's updates exactly as 1, 2, …, total
 *   (the record cache is off: every update is sent), and the counts read from active tasks
 *   through a survivor equal the input's.
 */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wordsOf } from '../../../examples/wordcount/index.js';
import { postGraphQL } from '../../support/graphql.js';
import { brokers } from './brokers.js';
import { createNetworkLab, networkNamespacesAvailable, type NetworkLab } from './network-lab.js';
import { startTcpRelay, type TcpRelay } from './tcp-relay.js';
import { MonotonicReads, type Position } from './monotonic-reads.js';
import { killAllChildren, spawnWordcount, type ChildLog, type WordcountChild } from './wordcount-child.js';
import { mapsEqual, outputProblems, readOutput, uniqueName, until, wordcountSuite, type WordcountSuite } from './wordcount-harness.js';

const PARTITIONS = 6;
const WORDS = Array.from({ length: 30 }, (_, i) => `w${String(i).padStart(2, '0')}`);
const STORE = 'word-counts';
const SESSION_TIMEOUT_MS = 6_000;
/** How long after the session timeout the cut instance may still answer as active. */
const FENCE_SLACK_MS = 4_000;
const RELAY = fileURLToPath(new URL('./tcp-relay.ts', import.meta.url));
type Client = 'librdkafka' | 'kafkajs';

/** Torn down after the file, in this order, whatever the tests did. */
const relays: TcpRelay[] = [];
const labs: NetworkLab[] = [];
afterAll(async () => {
  await killAllChildren();
  for (const relay of relays) await relay.close();
  for (const lab of labs) await lab.remove();
});

async function freePort(host: string): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface Task { id: string; state: string; active: boolean; lag: { offsets: number } | null }
interface PartitionAnswer { partition: number; position: Position | null; failure: { reason: string } | null; standby: boolean; servedBy?: string | null }
interface Read {
  getMany: {
    // int64 counts come as strings.
    entries: Array<{ key: string; value: string | number | null; found: boolean; partition: number; failure: { reason: string } | null }>;
    partitions: PartitionAnswer[];
  };
}

const READ = `query ($keys: [Key!]!, $bound: Position, $requireActive: Boolean) {
  getMany(store: "${STORE}", keys: $keys, positionBound: $bound, boundTimeoutMs: 3000, requireActive: $requireActive) {
    entries { key value found partition failure { reason } }
    partitions { partition position failure { reason } standby }
  }
}`;

/** What the cut instance says of itself and of its own words, asked from inside its namespace. */
const PROBE = `query ($keys: [Key!]!) {
  tasks { id state active lag { offsets } }
  getMany(store: "${STORE}", keys: $keys) { partitions { partition position failure { reason } standby servedBy } }
}`;
/** A GraphQL POST (argv: url, body) printing the response, for `node -e` inside the namespace. */
const POST = `const response = await fetch(process.argv[1], { method: 'POST', headers: { 'content-type': 'application/json' }, body: process.argv[2], signal: AbortSignal.timeout(20_000) });
process.stdout.write(await response.text());`;
interface ProbeAnswer { tasks: Task[]; getMany: { partitions: PartitionAnswer[] } }
interface Probe {
  /** When it was sent, ms after the cut. */
  readonly at: number;
  /** Its store tasks RUNNING as active. */
  readonly runningActive: readonly string[];
  /** Partitions of its words an active task answered. */
  readonly activeAnswers: readonly number[];
}

const tasksOf = async (url: string): Promise<Task[]> => (await postGraphQL<{ tasks: Task[] }>(url, '{ tasks { id state active lag { offsets } } }')).tasks;
const timeOf = (log: ChildLog): number => Number(log.time);
const isStoreTask = (t: Task): boolean => t.id.startsWith('1_');

interface Outcome {
  readonly reads: number;
  readonly answered: number;
  readonly fromStandby: number;
  readonly slowestReadMs: number;
  readonly backwards: readonly string[];
  /** Probes of the cut instance from the cut until the link was up again. */
  readonly probes: readonly Probe[];
  /** ms after the cut of the probe from which on, until the link was up, no store task was RUNNING as active; null if none. */
  readonly fencedAfterMs: number | null;
  /** The link came back, ms after the cut. */
  readonly restoredAfterMs: number;
  readonly counts: ReadonlyMap<string, number>;
  readonly expected: ReadonlyMap<string, number>;
  readonly outputProblems: readonly string[];
}

/**
 * The scenario, once per client: everything the tests check is measured here and printed, so a
 * failing test and the figures come from the same run.
 */
async function cutOneInstance(suite: WordcountSuite, client: Client): Promise<Outcome> {
  const appId = uniqueName(`netcut-${client}`);
  const input = uniqueName('netcut-in');
  const output = uniqueName('netcut-out');
  await suite.createTopics([input, output], PARTITIONS);

  // Each instance in a network namespace of its own, all on one lab network (network-lab.ts),
  // so that any of them can be cut off. The broker listens on the test's 127.0.0.1 and advertises
  // that address: inside each namespace a relay on 127.0.0.1:<broker port> passes connections over
  // the host's link to one on the test's end of the lab, and on to the broker.
  const lab = await createNetworkLab(3);
  labs.push(lab);
  const [brokerHost, brokerPortText] = brokers()[0]!.split(':') as [string, string];
  const brokerPort = Number(brokerPortText);
  relays.push(await startTcpRelay({ host: lab.address, port: brokerPort }, { host: brokerHost, port: brokerPort }));
  await Promise.all(lab.hosts.map((host) => new Promise<void>((resolve, reject) => {
    const relay = host.spawn(process.execPath, ['--import', 'tsx', RELAY, '127.0.0.1', String(brokerPort), lab.address, String(brokerPort)]);
    relay.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      if (chunk.includes('relaying')) resolve();
    });
    relay.once('exit', (code) => reject(new Error(`the relay in ${host.name} exited (${String(code)})`)));
  })));

  // Each listens on all of its namespace's addresses (the test asks the cut one on its loopback
  // while its link is down) and advertises its lab address.
  const ports = [await freePort('127.0.0.1'), await freePort('127.0.0.1'), await freePort('127.0.0.1')];
  const urls = lab.hosts.map((host, i) => `http://${host.address}:${ports[i]}/graphql`);
  const children: WordcountChild[] = [];
  for (const [i, port] of ports.entries()) {
    children.push(spawnWordcount({
      appId, input, output,
      stateDir: await suite.stateDir(`iqgate-netcut-${i}-`),
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      prefix: lab.hosts[i]!.prefix,
      extraEnv: {
        WORDCOUNT_PORT: String(port),
        WORDCOUNT_HOST: '0.0.0.0',
        IQGATE_ADVERTISED_URL: urls[i]!,
        IQGATE_ANONYMOUS: 'true',
        IQGATE_NUM_STANDBY_REPLICAS: '1',
        IQGATE_KAFKA_CLIENT: client,
        // Below the session timeout: the cut member's open transaction has timed out when its
        // partitions move (kafka-wiring.ts warns otherwise).
        IQGATE_TRANSACTION_TIMEOUT_MS: '4000',
      },
    }));
  }

  // Load all along: a line of four words every 10 ms, counted once acknowledged.
  const producer = suite.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  const expected = new Map<string, number>();
  let producing = true;
  let load: Promise<void> = Promise.resolve();
  let probing = false;
  let probeLoop: Promise<void> = Promise.resolve();
  try {
    for (const child of children) await child.waitForLog((log) => log.msg === 'serving', 90_000);
    await producer.connect();
    let sent = 0;
    load = (async () => {
      while (producing) {
        const line = Array.from({ length: 4 }, (_, j) => WORDS[(sent * 7 + j * 11) % WORDS.length]!).join(' ');
        await producer.send({ topic: input, messages: [{ key: String(sent), value: line }] });
        for (const word of wordsOf(line)) expected.set(word, (expected.get(word) ?? 0) + 1);
        sent += 1;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();

    // A settled group: a member cut off in the middle of a rebalance (librdkafka's cooperative
    // one comes in two rounds) is another story — librdkafka checks the session only in join-state
    // steady (rdkafka_cgrp.c, rd_kafka_cgrp_serve), and the kafkajs watchdog only between joins,
    // so a member left waiting for a join or sync answer goes on as the owner of its tasks until
    // that request gives up.
    const lastRebalance = (): number => Math.max(...children.map((c) => timeOf(c.logs.findLast((l) => l.msg === 'assignment applied') ?? { time: 0 })));
    await until('every store task active once and kept as a standby once, caught up, and no rebalance for 3 s', async () => {
      const all = (await Promise.all(urls.map(tasksOf))).flat().filter(isStoreTask);
      const active = all.filter((t) => t.active && t.state === 'RUNNING').map((t) => t.id);
      const standby = all.filter((t) => !t.active && t.lag !== null && t.lag.offsets < 200).map((t) => t.id);
      return new Set(active).size === PARTITIONS && active.length === PARTITIONS && new Set(standby).size === PARTITIONS && Date.now() - lastRebalance() > 3_000;
    }, 120_000, 250);
    // The instance to cut: the one running the most store tasks (librdkafka's sticky assignor
    // may give an instance none).
    const storeTasks = await Promise.all(urls.map(async (url) => (await tasksOf(url)).filter((t) => t.active && isStoreTask(t)).map((t) => t.id)));
    const victim = storeTasks.reduce((best, tasks, i) => (tasks.length > storeTasks[best]!.length ? i : best), 0);
    const victimTasks = storeTasks[victim]!;
    const victimHost = lab.hosts[victim]!;
    const victimChild = children[victim]!;
    const survivorChildren = children.filter((_, i) => i !== victim);

    // Reads against a survivor, before and after the cut.
    const survivor = urls.find((_, i) => i !== victim)!;
    const survivorReads = new MonotonicReads(survivor, READ, WORDS);
    const readFor = (ms: number): Promise<void> => survivorReads.readFor(ms);
    await readFor(2_000);

    // The cut instance's own words, asked of it from inside its namespace: they need no forward
    // while it believes it owns them.
    const victimPartitions = new Set(victimTasks.map((id) => Number(id.slice(2))));
    const victimWords = WORDS.filter((w) => victimPartitions.has(survivorReads.partitionOf.get(w) ?? -1));
    if (victimWords.length === 0) throw new Error(`no word of ${WORDS.length} falls in the cut instance's partitions`);
    const probeBody = JSON.stringify({ query: PROBE, variables: { keys: victimWords } });
    const probes: Probe[] = [];
    let probeErrors = 0;
    const cutAt = Date.now();
    probing = true;
    probeLoop = (async () => {
      while (probing) {
        const at = Date.now() - cutAt;
        try {
          const text = await victimHost.exec(process.execPath, ['--input-type=module', '-e', POST, `http://127.0.0.1:${ports[victim]}/graphql`, probeBody], 25_000);
          const { data } = JSON.parse(text) as { data: ProbeAnswer };
          probes.push({
            at,
            runningActive: data.tasks.filter((t) => t.active && t.state === 'RUNNING' && isStoreTask(t)).map((t) => t.id),
            // Answered by an active task of its own (not one it forwarded to once the link was up).
            activeAnswers: data.getMany.partitions.filter((q) => q.failure === null && !q.standby && (q.servedBy === null || q.servedBy === urls[victim])).map((q) => q.partition),
          });
        } catch {
          probeErrors += 1;
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();

    await victimHost.cut();
    // The cut member's session (6 s) expires, the group rebalances, the survivors open its tasks.
    const runningLog = (id: string) => (log: ChildLog) => log.msg === 'task running' && log.taskId === id && timeOf(log) > cutAt;
    const promoted = Promise.all(victimTasks.map((id) => Promise.race(survivorChildren.map((c) => c.waitForLog(runningLog(id), 60_000).then((log) => ({ child: c, log }))))));
    promoted.catch(() => undefined);
    await readFor(12_000);
    const moves = await promoted;
    // Until the cut instance shows no active store task running, or long enough after its
    // session that it should not: the link stays down for a few probes more either way.
    const fenced = (): Probe | undefined => probes.find((p) => p.runningActive.length === 0);
    while (fenced() === undefined && Date.now() - cutAt < SESSION_TIMEOUT_MS + FENCE_SLACK_MS + 8_000) await readFor(500);
    await readFor(2_000);

    const restoredAt = Date.now();
    await victimHost.restore();
    probing = false;
    await probeLoop;

    // The cut instance back in the group: whatever it still held (open transactions, commits
    // under way on the dead link, lost tasks) is settled, and every task runs again as active on
    // one instance. The load goes on a while after that.
    const rejoinedLog = await victimChild.waitForLog((l) => l.msg === 'assignment applied' && timeOf(l) > restoredAt, 60_000).catch(() => undefined);
    await until('every task RUNNING as active on one instance', async () => {
      const live = urls.filter((_, i) => children[i]!.process.exitCode === null && children[i]!.process.signalCode === null);
      const all = (await Promise.all(live.map(tasksOf))).flat().filter((t) => t.active);
      return all.length === 2 * PARTITIONS && new Set(all.map((t) => t.id)).size === 2 * PARTITIONS && all.every((t) => t.state === 'RUNNING');
    }, 60_000, 250).catch(() => undefined); // the counts below say whether it mattered
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    producing = false;
    await load;

    // Once the link is up and the load has stopped: every line counted once.
    const counts = new Map<string, number>();
    await until('the counts read through a survivor equal the input\'s', async () => {
      const result = await postGraphQL<Read>(survivor, READ, { keys: WORDS, requireActive: true });
      counts.clear();
      for (const e of result.getMany.entries) if (e.failure === null && e.found) counts.set(e.key, Number(e.value));
      return mapsEqual(counts, expected);
    }, 60_000, 250).catch(() => undefined); // the test says what differs
    const problems = outputProblems(await readOutput(suite.kafka, output), expected, true);

    // From this probe on, until the link was up, no store task RUNNING as active.
    const whileCut = probes.filter((p) => p.at < restoredAt - cutAt);
    const lastRunning = whileCut.findLastIndex((p) => p.runningActive.length > 0);
    const fencedAfterMs = whileCut[lastRunning + 1]?.at ?? null;
    const lost = victimChild.logs.find((l) => l.msg?.startsWith('partitions lost') === true && timeOf(l) > cutAt);
    const stale = probes.filter((p) => p.activeAnswers.length > 0);
    const tag = `[netcut ${client}]`;
    const { reads, answered, fromStandby, slowestReadMs, backwards, failures } = survivorReads;
    console.log(`${tag} survivor: ${reads} key reads, ${answered} answered (${(answered / reads * 100).toFixed(2)} %), ${fromStandby} partition answers from standbys, slowest read ${slowestReadMs} ms, failures ${JSON.stringify(Object.fromEntries(failures))}`);
    console.log(`${tag} cut instance: no active store task RUNNING ${fencedAfterMs === null ? 'never' : `${fencedAfterMs} ms`} after the cut (session ${SESSION_TIMEOUT_MS} ms); 'partitions lost' ${lost === undefined ? 'never logged' : `logged ${timeOf(lost) - cutAt} ms after the cut`}; answered as active in ${stale.length} of ${probes.length} probes (the last sent ${stale.at(-1)?.at ?? '-'} ms after the cut); link up ${restoredAt - cutAt} ms after the cut; ${probeErrors} probe errors`);
    for (const { child, log } of moves) {
      const assigned = child.logs.filter((l) => l.msg === 'assignment applied' && timeOf(l) > cutAt && timeOf(l) <= timeOf(log)).at(-1);
      const replayed = Object.values(log.replayed ?? {}).reduce((sum, n) => sum + n, 0);
      console.log(`${tag} ${String(log.taskId)} RUNNING on a survivor ${timeOf(log) - cutAt} ms after the cut (${assigned === undefined ? '?' : timeOf(log) - timeOf(assigned)} ms after its assignment), replayed ${replayed}`);
    }
    const back = victimChild.logs.filter((l) => timeOf(l) > restoredAt && (l.msg === 'assignment applied' || l.msg === 'task running' || Number(l.level) >= 40));
    console.log(`${tag} cut instance after the link came back: ${rejoinedLog === undefined ? 'no assignment within 60 s' : `assigned ${timeOf(rejoinedLog) - restoredAt} ms after`}, exit ${JSON.stringify(victimChild.process.exitCode)}; ${JSON.stringify(back.slice(0, 16).map((l) => `${timeOf(l) - restoredAt} ms: ${String(l.msg)}${l.taskId === undefined ? '' : ` ${String(l.taskId)}`}${typeof l.err === 'object' && l.err !== null ? ` (${String((l.err as { message?: unknown }).message).slice(0, 160)})` : ''}`))}`);

    return { reads, answered, fromStandby, slowestReadMs, backwards, probes, fencedAfterMs, restoredAfterMs: restoredAt - cutAt, counts, expected, outputProblems: problems };
  } finally {
    probing = false;
    producing = false;
    await probeLoop;
    await load.catch(() => undefined);
    await producer.disconnect();
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((child) => child.exited));
  }
}

describe.skipIf(!networkNamespacesAvailable()).each(['librdkafka', 'kafkajs'] as const)('a three-instance cluster with one instance cut off the network (%s)', (client) => {
  const suite = wordcountSuite();
  let outcome: Outcome;
  beforeAll(async () => {
    outcome = await cutOneInstance(suite, client);
  }, 240_000);

  it('answers ≥ 99 % of key reads through a survivor, never a count going backwards, none waiting longer than a forward budget', () => {
    expect(outcome.backwards).toEqual([]);
    expect(outcome.answered / outcome.reads).toBeGreaterThanOrEqual(0.99);
    // A silent owner is hedged after forwardHedgeMs (1 s): slowest reads 8.02–8.05 s before the
    // hedge, 1.01–1.06 s in most runs with it (2026-12-06). A read that the fallback sends to the
    // cut instance as a standby host is not hedged and still waits out its forward budget
    // (forwardTimeoutMs 5 s + boundTimeoutMs 3 s: 8.01 s once in CI); then a standby or the new
    // owner, which may wait up to boundTimeoutMs for the bound.
    expect(outcome.slowestReadMs).toBeLessThan(12_000);
  });

  it(`stops answering as active on the cut instance within ${FENCE_SLACK_MS} ms of its session timeout, until the link is up`, () => {
    expect(outcome.fencedAfterMs).not.toBeNull();
    expect(outcome.fencedAfterMs!).toBeLessThan(SESSION_TIMEOUT_MS + FENCE_SLACK_MS);
    const after = outcome.probes.filter((p) => p.at >= outcome.fencedAfterMs! && p.at < outcome.restoredAfterMs);
    expect(after.length).toBeGreaterThan(3);
    expect(after.filter((p) => p.activeAnswers.length > 0)).toEqual([]);
  });

  it('writes no count twice: the read_committed output holds each word\'s counts once, in order, up to its total', () => {
    expect(outcome.outputProblems).toEqual([]);
  });

  it('counts every line once in the stores: the counts read from active tasks equal the input\'s once the link is up again', () => {
    expect(outcome.counts).toEqual(outcome.expected);
  });
});
