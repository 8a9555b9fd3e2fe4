/**
 * Kafka Streams' own wordcount (bench/kstreams/WordCount.java) on the bench's broker and input:
 * the reference bench:processing measures iqgate against, in the same run. Its jars come from
 * Maven Central once (bench/kstreams/pom.xml, at the broker's Kafka version, cached beside the
 * broker's), and Java's source launcher runs the one file.
 *
 * Measured from outside, by what a user sees: a CountWatcher on the output topic (in this
 * process, joined before Kafka Streams starts); a count above the expected one fails the run.
 * Times run from the start of WordCount's main() (rate: building the topology and the clients
 * included, as iqgate's runs time runtime creation and start), or from its first commit (steady
 * rate: its stream thread's commit-total metric, as iqgate's first committed transaction), to the
 * moment the output holds every final count — iqgate's runs end the same way. CPU is the JVM's
 * own over that span.
 */
import { commandExists, fetchMavenJars, KAFKA_VERSION } from '../scripts/kafka/broker.js';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CountWatcher } from './count-watcher.js';

export interface KStreamsRun {
  /** Input lines/s from KafkaStreams#start() to the last count. */
  readonly rate: number;
  /** Input lines/s from the first commit to the last count. */
  readonly steadyRate: number;
  /** ms from KafkaStreams#start() to its first commit. */
  readonly firstCommitMs: number;
  /** µs of the JVM's CPU per input line, over the rate's span (JIT and GC included). */
  readonly cpuPerLine: number;
}

export interface KStreamsOptions {
  readonly brokers: readonly string[];
  readonly input: string;
  readonly output: string;
  readonly applicationId: string;
  readonly lines: number;
  /** Every word's final count. */
  readonly expected: ReadonlyMap<string, number>;
  /** Kafka Streams' jars (kstreamsJars()). */
  readonly libs: string;
  readonly timeoutMs?: number;
}

interface JvmEvent {
  readonly event: string;
  readonly cpuNanos: number;
}

const here = fileURLToPath(new URL('./kstreams/', import.meta.url));

/**
 * Kafka Streams' jars (once; the cache directory is named after the pom's content, so a changed
 * pom fetches again) and a java that runs: checked before any run, so that a machine without
 * them fails at once rather than after the runs it could do.
 */
export function kstreamsJars(): string {
  const pom = join(here, 'pom.xml');
  const digest = createHash('sha256').update(readFileSync(pom)).digest('hex').slice(0, 12);
  if (!commandExists('java', ['-version'])) throw new Error('java is not on PATH: the Kafka Streams run needs a Java 17+ runtime (BENCH_KSTREAMS=0 leaves it out)');
  return fetchMavenJars(pom, `kafka-streams-${KAFKA_VERSION}-${digest}`, `Kafka Streams ${KAFKA_VERSION} and its dependencies`, { log: (line) => console.error(line) });
}

export async function kstreamsWordcount(options: KStreamsOptions): Promise<KStreamsRun> {
  const watcher = await CountWatcher.start(options.brokers, options.output, `${options.applicationId}-check`, options.expected);
  const stateDir = await mkdtemp(join(tmpdir(), 'iqgate-bench-kstreams-'));
  // VM warnings to stderr: stdout carries the events.
  const java = spawn('java', ['-XX:+DisplayVMOutputToStderr', '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn', '-cp', `${options.libs}/*`, join(here, 'WordCount.java'), options.brokers.join(','), options.input, options.output, options.applicationId, stateDir], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  java.stdin.on('error', () => undefined); // a JVM that died: the exit below says so
  let exitedAt: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const exit = once(java, 'exit').then(([code, signal]) => {
    exitedAt = { code: code as number | null, signal: signal as NodeJS.Signals | null };
  });
  const waiting = new Map<string, (event: JvmEvent & { at: number }) => void>();
  createInterface({ input: java.stdout }).on('line', (line) => {
    let parsed: JvmEvent;
    try {
      parsed = JSON.parse(line) as JvmEvent;
    } catch {
      console.error(`[kstreams] ${line}`);
      return;
    }
    waiting.get(parsed.event)?.({ ...parsed, at: performance.now() });
    waiting.delete(parsed.event);
  });
  const next = (event: string): Promise<JvmEvent & { at: number }> => new Promise((resolve) => waiting.set(event, resolve));
  const starting = next('starting');
  const firstCommit = next('first-commit');
  const exited = exit.then(() => {
    throw new Error(`Kafka Streams exited (${JSON.stringify(exitedAt)}) before every word was counted`);
  });
  exited.catch(() => undefined);
  const timeoutMs = options.timeoutMs ?? 240_000;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Kafka Streams did not count every word within ${String(timeoutMs)} ms (${watcher.progress()})`)), timeoutMs);
  });
  try {
    const started = await Promise.race([starting, exited, timedOut]);
    const committed = await Promise.race([firstCommit, exited, timedOut]);
    await Promise.race([watcher.done, exited, timedOut]).catch((error: unknown) => {
      throw new Error(`Kafka Streams' wordcount: ${(error as Error).message}`);
    });
    java.stdin.write('cpu\n');
    const cpu = await Promise.race([next('cpu'), exited, timedOut]);
    return {
      rate: options.lines / ((watcher.doneAt - started.at) / 1000),
      steadyRate: options.lines / ((watcher.doneAt - committed.at) / 1000),
      firstCommitMs: committed.at - started.at,
      cpuPerLine: (cpu.cpuNanos - started.cpuNanos) / 1000 / options.lines,
    };
  } finally {
    clearTimeout(timer);
    if (exitedAt === null) {
      java.stdin.end(); // WordCount closes its streams and exits when stdin ends
      const killer = setTimeout(() => java.kill('SIGKILL'), 30_000);
      await exit;
      clearTimeout(killer);
    }
    await watcher.stop();
    await rm(stateDir, { recursive: true, force: true });
  }
}
