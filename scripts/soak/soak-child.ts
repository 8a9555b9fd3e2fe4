/**
 * One wordcount instance of the campaign: the crash tests' child process (spawnWordcount, which
 * runs examples/wordcount/main.ts) on the chosen Kafka client, with helpers to wait on its logs
 * without throwing, and to keep its logs as evidence (JSON lines, then its stderr).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { spawnWordcount, type ChildLog, type WordcountChild } from '../../test/integration/processing/wordcount-child.js';

export type KafkaClientName = 'librdkafka' | 'kafkajs';

export interface SoakChildOptions {
  readonly client: KafkaClientName;
  readonly appId: string;
  readonly input: string;
  readonly output: string;
  readonly stateDir: string;
  readonly sessionTimeoutMs: number;
  readonly crashAt?: string;
  /** Where its logs go when it has exited. */
  readonly logFile: string;
}

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface SoakChild {
  readonly child: WordcountChild;
  readonly logFile: string;
  readonly spawnedAt: number;
  /** Resolves once the process has exited and its logs are written. */
  readonly exited: Promise<Exit>;
  isAlive(): boolean;
  /** Distinct task ids that logged `task running` (since log index `from`). */
  runningTasks(from?: number): Set<string>;
  /** The Kafka client the instance said it runs on (`Kafka client: …`), if it got that far. */
  clientUsed(): string | undefined;
}

export function spawnSoakChild(options: SoakChildOptions): SoakChild {
  const child = spawnWordcount({
    appId: options.appId,
    input: options.input,
    output: options.output,
    stateDir: options.stateDir,
    sessionTimeoutMs: options.sessionTimeoutMs,
    ...(options.crashAt === undefined ? {} : { crashAt: options.crashAt }),
    extraEnv: { IQGATE_KAFKA_CLIENT: options.client },
  });
  let alive = true;
  const exited = child.exited.then(async (exit) => {
    alive = false;
    const lines = child.logs.map((l) => JSON.stringify(l)).join('\n');
    await writeFile(options.logFile, `${lines}\n--- exit ${JSON.stringify(exit)}; stderr (last 20 kB) ---\n${child.stderr()}`).catch(() => undefined);
    return exit;
  });
  return {
    child,
    logFile: options.logFile,
    spawnedAt: Date.now(),
    exited,
    isAlive: () => alive,
    runningTasks: (from = 0) => new Set(child.logs.slice(from).filter((l) => l.msg === 'task running').map((l) => String(l.taskId))),
    clientUsed: () => {
      const log = child.logs.find((l) => typeof l.msg === 'string' && l.msg.startsWith('Kafka client:'));
      return typeof log?.kafkaClient === 'string' ? log.kafkaClient : undefined;
    },
  };
}

export function logPath(dir: string, index: number, role: string): string {
  return join(dir, `${String(index).padStart(3, '0')}-${role}.jsonl`);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `predicate` until it holds (true) or `timeoutMs` passes (false); never throws. */
export async function until(predicate: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return true;
    if (Date.now() > deadline) return false;
    await sleep(intervalMs);
  }
}

/**
 * The zombie test's sign that a thawed instance learned it was fenced: kafkajs (a producer per
 * task) sees PRODUCER_FENCED; librdkafka (KIP-447) sees a stale generation (also reported as
 * PRODUCER_FENCED) or gets its partitions back as lost.
 */
export function mentionsFencing(log: ChildLog): boolean {
  return JSON.stringify(log).includes('PRODUCER_FENCED') || (log.msg?.startsWith('partitions lost') === true && log.fenced === true);
}

/** SIGKILL (a stopped process is continued first, so the kill is not queued behind SIGSTOP) and wait. */
export async function killNow(soak: SoakChild): Promise<Exit> {
  soak.child.kill('SIGCONT');
  soak.child.kill('SIGKILL');
  return soak.exited;
}

/** SIGTERM and wait up to `timeoutMs`; then SIGKILL. `graceful` says whether it exited by itself. */
export async function stopGracefully(soak: SoakChild, timeoutMs: number): Promise<{ exit: Exit; graceful: boolean }> {
  soak.child.kill('SIGTERM');
  const done = await Promise.race([soak.exited.then((exit) => ({ exit })), sleep(timeoutMs).then(() => undefined)]);
  if (done !== undefined) return { exit: done.exit, graceful: true };
  return { exit: await killNow(soak), graceful: false };
}
