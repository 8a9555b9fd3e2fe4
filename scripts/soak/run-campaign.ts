/**
 * One crash campaign on one Kafka client: fresh topics and application id, input flowing the
 * whole time, the planned kill events one after another on the same state directory, then a
 * clean run that drains, and the recount:
 *  - the committed store on disk equals the model of all the input (recounted from the topic);
 *  - a fresh instance restoring from the changelog alone gets the model too;
 *  - the read_committed output holds every count update exactly once (duplicates, losses, …);
 *  - no restart replayed more than its changelog tail (replay-ledger.ts: no wipe).
 * Each child's logs are kept under `logDir` as evidence; the report names the file of every
 * event and every violation.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildWordcountTopology, wordsOf } from '../../examples/wordcount/index.js';
import { changelogTopic } from '../../src/processing/topic-names.js';
import { countsOnDisk } from '../../test/integration/processing/committed-store-on-disk.js';
import { createTopics, expectedCounts, mapsEqual, readOutput } from '../../test/integration/processing/wordcount-harness.js';
import { describeEvent, type SoakEvent } from './event-schedule.js';
import { startInputFeeder } from './input-feeder.js';
import { auditOutput, storeDifferences, type OutputAudit } from './output-audit.js';
import { ReplayLedger, type ReplayCheck } from './replay-ledger.js';
import { killNow, logPath, mentionsFencing, sleep, spawnSoakChild, stopGracefully, until, type Exit, type KafkaClientName, type SoakChild } from './soak-child.js';
import { readTopic, soakKafka, soakName, topicEnds } from './soak-kafka.js';

export interface CampaignOptions {
  readonly client: KafkaClientName;
  readonly brokers: readonly string[];
  readonly events: readonly SoakEvent[];
  readonly seed: number;
  readonly partitions: number;
  readonly linesPerSecond: number;
  readonly sessionTimeoutMs: number;
  readonly logDir: string;
  /** A step kill that has not fired by then is done from outside (and reported). */
  readonly stepTimeoutMs: number;
  /** How long an instance may take to run all its tasks (start, zombie takeover). */
  readonly runningTimeoutMs: number;
  /** How long a thawed zombie gets to notice it was fenced. */
  readonly fenceWaitMs: number;
  readonly drainTimeoutMs: number;
  readonly progress: (line: string) => void;
}

export interface EventReport {
  readonly index: number;
  readonly event: SoakEvent;
  readonly durationMs: number;
  /** How the primary (or the zombie) died. */
  readonly exit: Exit;
  /** step: the crash point fired (false: killed from outside after stepTimeoutMs). */
  readonly stepFired?: boolean;
  readonly zombie?: {
    readonly takeoverMs: number | null;
    readonly fencedSeen: boolean;
    readonly fenceMs: number | null;
    readonly secondExit: Exit;
    readonly secondGraceful: boolean;
  };
  readonly replays: readonly ReplayCheck[];
  readonly anomalies: readonly string[];
  readonly logFiles: readonly string[];
}

export interface CampaignResult {
  readonly client: KafkaClientName;
  readonly appId: string;
  readonly durationMs: number;
  readonly kills: { readonly total: number; readonly random: number; readonly step: Record<string, number>; readonly stepFired: number; readonly zombie: number; readonly zombieFenced: number };
  readonly input: { readonly lines: number; readonly feederAcknowledged: number; readonly feederErrors: number; readonly matchesGenerator: boolean };
  readonly output: OutputAudit;
  readonly store: { readonly equalsModel: boolean; readonly differences: number; readonly samples: readonly string[] };
  readonly freshRestore: { readonly equalsModel: boolean; readonly differences: number; readonly replayed: number; readonly samples: readonly string[] };
  readonly replay: {
    /** Task restores checked on a directory that had run the task before. */
    readonly restores: number;
    readonly max: number;
    readonly maxTail: number;
    readonly maxAt: string;
    /** The same, for restarts on the campaign's own state directory only (after a kill or a zombie). */
    readonly restartMax: number;
    readonly restartMaxTail: number;
    readonly restartMaxAt: string;
    /** The second instance of the zombie events, catching its directory up on everything since its last takeover. */
    readonly takeoverMax: number;
    readonly takeoverMaxTail: number;
    readonly overTail: number;
    readonly changelogTotal: number;
    /** After a kill between the Kafka commit and the store commit, the next start replayed something (restores that repaired a store). */
    readonly afterKafkaCommitRepairs: string;
  };
  readonly finalExit: Exit;
  readonly events: readonly EventReport[];
  readonly violations: readonly string[];
}

function statefulPrefix(input: string, output: string): string {
  const sub = buildWordcountTopology({ inputTopic: input, outputTopic: output }).subTopologies.find((s) => s.stores.includes('word-counts'));
  if (sub === undefined) throw new Error('wordcount has no word-counts sub-topology');
  return `${sub.id}_`;
}

export async function runCampaign(o: CampaignOptions): Promise<CampaignResult> {
  const started = Date.now();
  const kafka = soakKafka(o.brokers);
  const appId = soakName(`soak-${o.client}`);
  const input = soakName(`soak-in-${o.client}`);
  const output = soakName(`soak-out-${o.client}`);
  const changelog = changelogTopic(appId, 'word-counts');
  const admin = kafka.admin();
  await admin.connect();
  await createTopics(admin, [input, output], o.partitions);
  await admin.disconnect();
  await mkdir(o.logDir, { recursive: true });
  const primaryDir = await mkdtemp(join(tmpdir(), `iqgate-soak-${o.client}-a-`));
  const secondDir = await mkdtemp(join(tmpdir(), `iqgate-soak-${o.client}-b-`));
  const freshDir = await mkdtemp(join(tmpdir(), `iqgate-soak-${o.client}-fresh-`));
  const prefix = statefulPrefix(input, output);
  const allTasks = 2 * o.partitions;
  const ledger = new ReplayLedger(prefix);
  const ends = (): Promise<Map<number, number>> => topicEnds(kafka, changelog);
  const spawn = (dir: string, role: string, index: number, crashAt?: string): SoakChild =>
    spawnSoakChild({ client: o.client, appId, input, output, stateDir: dir, sessionTimeoutMs: o.sessionTimeoutMs, logFile: logPath(o.logDir, index, role), ...(crashAt === undefined ? {} : { crashAt }) });
  const clientAnomaly = (c: SoakChild, anomalies: string[]): void => {
    const used = c.clientUsed();
    if (used !== undefined && used !== o.client) anomalies.push(`ran on ${used}, not ${o.client} (${c.logFile})`);
  };

  const feeder = await startInputFeeder(kafka, input, o.seed, o.linesPerSecond);
  const reports: EventReport[] = [];
  try {
    for (const [index, event] of o.events.entries()) {
      const t0 = Date.now();
      const anomalies: string[] = [];
      const endBefore = await ends();
      let report: EventReport;
      if (event.kind === 'zombie') {
        report = await zombieEvent(index, event, t0, endBefore, anomalies);
      } else {
        const crashAt = event.kind === 'step' ? `${event.step}:${event.occurrence}:${prefix}` : undefined;
        const c = spawn(primaryDir, 'primary', index, crashAt);
        let stepFired: boolean | undefined;
        const waitMs = event.kind === 'step' ? o.stepTimeoutMs : event.delayMs;
        const early = await Promise.race([c.exited.then(() => true), sleep(waitMs).then(() => false)]);
        if (event.kind === 'step') stepFired = early;
        else if (early) anomalies.push(`exited on its own before the kill at +${event.delayMs} ms`);
        const exit = early ? await c.exited : await killNow(c);
        if (exit.signal !== 'SIGKILL') anomalies.push(`exit ${JSON.stringify(exit)}, not SIGKILL (${c.logFile})`);
        clientAnomaly(c, anomalies);
        const replays = ledger.record(`#${index} ${describeEvent(event)}`, primaryDir, c.child.logs, endBefore, await ends());
        report = { index, event, durationMs: Date.now() - t0, exit, ...(stepFired === undefined ? {} : { stepFired }), replays, anomalies, logFiles: [c.logFile] };
      }
      reports.push(report);
      o.progress(progressLine(o.client, index, o.events.length, report));
    }

    // The recount: stop the input, read it back, and build the model from what is really there.
    await feeder.stop();
    const model = new Map<string, number>();
    const seenLines = new Set<string>();
    let inputLines = 0;
    await readTopic(kafka, input, (key, value) => {
      inputLines += 1;
      seenLines.add(key?.toString() ?? '');
      for (const w of wordsOf(value?.toString() ?? '')) model.set(w, (model.get(w) ?? 0) + 1);
    });
    const matchesGenerator = inputLines === feeder.produced() && seenLines.size === inputLines && mapsEqual(model, expectedCounts(o.seed, feeder.produced()));
    o.progress(`[${o.client}] input recounted: ${inputLines} lines (feeder acknowledged ${feeder.produced()}, ${feeder.errors()} send errors); draining with a clean instance`);

    // Clean run on the same state directory: drain, then stop gracefully.
    const finalIndex = o.events.length;
    const endBeforeFinal = await ends();
    const final = spawn(primaryDir, 'final', finalIndex);
    const finalAnomalies: string[] = [];
    let updates = new Map<string, number[]>();
    const converged = await until(async () => {
      if (!final.isAlive()) return true;
      updates = await readOutput(kafka, output);
      return [...model].every(([w, n]) => updates.get(w)?.at(-1) === n);
    }, o.drainTimeoutMs, 2000);
    if (!converged) finalAnomalies.push(`output did not reach the model within ${o.drainTimeoutMs} ms (${final.logFile})`);
    const { exit: finalExit, graceful } = await stopGracefully(final, 30_000);
    if (!graceful || finalExit.code !== 0) finalAnomalies.push(`clean instance exit ${JSON.stringify(finalExit)}${graceful ? '' : ' after SIGKILL (stop hung)'} (${final.logFile})`);
    clientAnomaly(final, finalAnomalies);
    const finalReplays = ledger.record('final', primaryDir, final.child.logs, endBeforeFinal, await ends());
    updates = await readOutput(kafka, output);
    const audit = auditOutput(updates, model);
    const onDisk = storeDifferences(await countsOnDisk(primaryDir, input, output, o.partitions), model);

    // A fresh instance rebuilds the store from the changelog alone: the changelog itself must be exact.
    const fresh = spawn(freshDir, 'fresh-restore', finalIndex + 1);
    const restored = await until(() => !fresh.isAlive() || [...fresh.runningTasks()].filter((t) => t.startsWith(prefix)).length === o.partitions, o.drainTimeoutMs, 200);
    if (!restored) finalAnomalies.push(`fresh instance did not restore within ${o.drainTimeoutMs} ms (${fresh.logFile})`);
    const freshStop = await stopGracefully(fresh, 30_000);
    if (!freshStop.graceful || freshStop.exit.code !== 0) finalAnomalies.push(`fresh instance exit ${JSON.stringify(freshStop.exit)} (${fresh.logFile})`);
    const freshReplayed = fresh.child.logs.filter((l) => l.msg === 'task running' && String(l.taskId).startsWith(prefix))
      .reduce((sum, l) => sum + Object.values(l.replayed ?? {}).reduce((a, n) => a + n, 0), 0);
    const freshDiff = storeDifferences(await countsOnDisk(freshDir, input, output, o.partitions), model);
    const changelogTotal = [...(await ends()).values()].reduce((a, n) => a + n, 0);

    return summarize({
      o, appId, started, reports, finalReplays, finalAnomalies, finalExit, audit, onDisk, freshDiff, freshReplayed, changelogTotal,
      input: { lines: inputLines, feederAcknowledged: feeder.produced(), feederErrors: feeder.errors(), matchesGenerator },
      finalLog: final.logFile,
    });
  } finally {
    await feeder.stop().catch(() => undefined);
    for (const d of [primaryDir, secondDir, freshDir]) await rm(d, { recursive: true, force: true });
  }

  /**
   * Instance A runs every task, is frozen (SIGSTOP) past its session timeout while instance B, on
   * its own state directory, takes every task over; then A is thawed (SIGCONT), must notice it
   * was fenced, and is SIGKILLed a moment later; B stops gracefully.
   */
  async function zombieEvent(index: number, event: Extract<SoakEvent, { kind: 'zombie' }>, t0: number, endBefore: Map<number, number>, anomalies: string[]): Promise<EventReport> {
    const a = spawn(primaryDir, 'zombie', index);
    if (!(await until(() => !a.isAlive() || a.runningTasks().size === allTasks, o.runningTimeoutMs))) anomalies.push(`zombie-to-be did not run all tasks within ${o.runningTimeoutMs} ms (${a.logFile})`);
    await sleep(event.freezeAfterMs);
    a.child.kill('SIGSTOP');
    const frozenAt = Date.now();
    const endBeforeB = await ends();
    const b = spawn(secondDir, 'takeover', index);
    const tookOver = await until(() => !b.isAlive() || b.runningTasks().size === allTasks, o.runningTimeoutMs);
    const takeoverMs = tookOver && b.isAlive() ? Date.now() - frozenAt : null;
    if (takeoverMs === null) anomalies.push(`second instance did not take every task over within ${o.runningTimeoutMs} ms (${b.logFile})`);
    const logsBeforeThaw = a.child.logs.length;
    a.child.kill('SIGCONT');
    const thawedAt = Date.now();
    const fencedSeen = await until(() => !a.isAlive() || a.child.logs.slice(logsBeforeThaw).some(mentionsFencing), o.fenceWaitMs);
    const fenceMs = fencedSeen && a.child.logs.slice(logsBeforeThaw).some(mentionsFencing) ? Date.now() - thawedAt : null;
    if (!a.isAlive()) anomalies.push(`zombie exited on its own after SIGCONT (${a.logFile})`);
    await sleep(event.killAfterFenceMs);
    const exit = await killNow(a);
    if (exit.signal !== 'SIGKILL') anomalies.push(`zombie exit ${JSON.stringify(exit)}, not SIGKILL (${a.logFile})`);
    const second = await stopGracefully(b, 30_000);
    if (!second.graceful || second.exit.code !== 0) anomalies.push(`second instance exit ${JSON.stringify(second.exit)}${second.graceful ? '' : ' after SIGKILL (stop hung)'} (${b.logFile})`);
    clientAnomaly(a, anomalies);
    clientAnomaly(b, anomalies);
    const endAfter = await ends();
    const replays = [
      ...ledger.record(`#${index} zombie`, primaryDir, a.child.logs, endBefore, endAfter),
      ...ledger.record(`#${index} takeover`, secondDir, b.child.logs, endBeforeB, endAfter),
    ];
    return {
      index, event, durationMs: Date.now() - t0, exit,
      zombie: { takeoverMs, fencedSeen: fenceMs !== null, fenceMs, secondExit: second.exit, secondGraceful: second.graceful },
      replays, anomalies, logFiles: [a.logFile, b.logFile],
    };
  }
}

function progressLine(client: string, index: number, total: number, r: EventReport): string {
  const worst = r.replays.filter((c) => !c.fresh).reduce<ReplayCheck | undefined>((m, c) => (m === undefined || c.replayed > m.replayed ? c : m), undefined);
  const replay = worst === undefined ? '' : `, replay max ${worst.replayed}/${worst.tail}`;
  const what = r.event.kind === 'step' ? (r.stepFired === true ? 'crash point fired' : 'crash point NOT reached, killed from outside')
    : r.event.kind === 'zombie' ? `takeover ${String(r.zombie?.takeoverMs)} ms, fenced ${r.zombie?.fencedSeen === true ? `after ${String(r.zombie.fenceMs)} ms` : 'not seen'}`
      : 'killed';
  const bad = r.replays.filter((c) => !c.ok).length + r.anomalies.length;
  return `[${client} ${index + 1}/${total}] ${describeEvent(r.event)}: ${what}${replay} (${(r.durationMs / 1000).toFixed(1)} s)${bad > 0 ? ` !! ${[...r.anomalies, ...r.replays.filter((c) => !c.ok).map((c) => `replay ${c.replayed} > tail ${c.tail} (${c.taskId})`)].join('; ')}` : ''}`;
}

interface SummaryInput {
  readonly o: CampaignOptions;
  readonly appId: string;
  readonly started: number;
  readonly reports: readonly EventReport[];
  readonly finalReplays: readonly ReplayCheck[];
  readonly finalAnomalies: readonly string[];
  readonly finalExit: Exit;
  readonly audit: OutputAudit;
  readonly onDisk: { readonly count: number; readonly samples: readonly string[] };
  readonly freshDiff: { readonly count: number; readonly samples: readonly string[] };
  readonly freshReplayed: number;
  readonly changelogTotal: number;
  readonly input: CampaignResult['input'];
  readonly finalLog: string;
}

function summarize(s: SummaryInput): CampaignResult {
  const { o, reports, audit } = s;
  const step: Record<string, number> = {};
  for (const r of reports) if (r.event.kind === 'step') step[r.event.step] = (step[r.event.step] ?? 0) + 1;
  const restarts = [...reports.flatMap((r) => r.replays), ...s.finalReplays].filter((c) => !c.fresh);
  const worst = restarts.reduce<ReplayCheck | undefined>((m, c) => (m === undefined || c.replayed > m.replayed ? c : m), undefined);
  const overTail = restarts.filter((c) => !c.ok);
  // After a kill between the Kafka commit and the store commit, the next start on that directory
  // that gets as far as restoring replays something (a start killed before it restores is skipped).
  let repairs = 0;
  let repairCandidates = 0;
  const primaryRestores = (replays: readonly ReplayCheck[]): ReplayCheck[] => replays.filter((c) => !c.label.endsWith('takeover'));
  for (const [i, r] of reports.entries()) {
    if (r.event.kind !== 'step' || r.event.step !== 'after-kafka-commit' || r.stepFired !== true) continue;
    repairCandidates += 1;
    const next = [...reports.slice(i + 1).map((n) => primaryRestores(n.replays)), s.finalReplays].find((checks) => checks.length > 0) ?? [];
    if (next.some((c) => c.replayed > 0)) repairs += 1;
  }
  const takeovers = restarts.filter((c) => c.label.endsWith('takeover'));
  const worstOf = (checks: readonly ReplayCheck[]): ReplayCheck | undefined => checks.reduce<ReplayCheck | undefined>((m, c) => (m === undefined || c.replayed > m.replayed ? c : m), undefined);
  const worstRestart = worstOf(primaryRestores(restarts));
  const worstTakeover = worstOf(takeovers);

  const violations: string[] = [];
  if (audit.duplicates > 0) violations.push(`${audit.duplicates} duplicate output updates: ${audit.samples.join('; ')}`);
  if (audit.losses > 0) violations.push(`${audit.losses} lost output updates: ${audit.samples.join('; ')}`);
  if (audit.outOfOrder + audit.outOfRange + audit.wrongFinal + audit.unexpectedWords > 0 && audit.duplicates + audit.losses === 0) violations.push(`output problems: ${audit.samples.join('; ')}`);
  if (s.onDisk.count > 0) violations.push(`committed store on disk differs from the model in ${s.onDisk.count} words: ${s.onDisk.samples.join('; ')} (${s.finalLog})`);
  if (s.freshDiff.count > 0) violations.push(`a fresh restore from the changelog differs from the model in ${s.freshDiff.count} words: ${s.freshDiff.samples.join('; ')}`);
  for (const c of overTail) violations.push(`wipe? ${c.label} ${c.taskId} replayed ${c.replayed} > tail ${c.tail} (changelog end ${c.changelogEnd}) on ${c.dir}`);
  for (const r of reports) for (const a of r.anomalies) violations.push(`#${r.index} ${describeEvent(r.event)}: ${a}`);
  for (const a of s.finalAnomalies) violations.push(`final: ${a}`);
  if (!s.input.matchesGenerator) violations.push(`input topic is not lines [0, ${s.input.feederAcknowledged}) once each (${s.input.lines} records): the model is the recount; the feeder, not iqgate, is suspect`);

  const zombies = reports.filter((r) => r.event.kind === 'zombie');
  return {
    client: o.client,
    appId: s.appId,
    durationMs: Date.now() - s.started,
    kills: {
      total: reports.length,
      random: reports.filter((r) => r.event.kind === 'random').length,
      step,
      stepFired: reports.filter((r) => r.stepFired === true).length,
      zombie: zombies.length,
      zombieFenced: zombies.filter((r) => r.zombie?.fencedSeen === true).length,
    },
    input: s.input,
    output: audit,
    store: { equalsModel: s.onDisk.count === 0, differences: s.onDisk.count, samples: s.onDisk.samples },
    freshRestore: { equalsModel: s.freshDiff.count === 0, differences: s.freshDiff.count, replayed: s.freshReplayed, samples: s.freshDiff.samples },
    replay: {
      restores: restarts.length,
      max: worst?.replayed ?? 0,
      maxTail: worst?.tail ?? 0,
      maxAt: worst === undefined ? '' : `${worst.label} ${worst.taskId}`,
      restartMax: worstRestart?.replayed ?? 0,
      restartMaxTail: worstRestart?.tail ?? 0,
      restartMaxAt: worstRestart === undefined ? '' : `${worstRestart.label} ${worstRestart.taskId}`,
      takeoverMax: worstTakeover?.replayed ?? 0,
      takeoverMaxTail: worstTakeover?.tail ?? 0,
      overTail: overTail.length,
      changelogTotal: s.changelogTotal,
      afterKafkaCommitRepairs: `${repairs}/${repairCandidates}`,
    },
    finalExit: s.finalExit,
    events: reports,
    violations,
  };
}
