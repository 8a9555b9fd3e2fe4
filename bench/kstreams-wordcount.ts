/**
 * Kafka Streams' own wordcount (bench/kstreams/WordCount.java) on the bench's broker and input:
 * the reference bench:processing measures iqgate against, in the same run. Its jars come from
 * Maven Central once (bench/kstreams/pom.xml, at the broker's Kafka version, cached beside the
 * broker's), and Java's source launcher runs the one file.
 *
 * Measured from outside, by what a user sees: a CountWatcher on the output topic (in this
 * process, joined before Kafka Streams starts); a count above the expected one fails the run.
 * Times run from just before KafkaStreams#start() (rate), or from its first commit (steady rate:
 * its stream thread's commit-total metric, as iqgate's first committed transaction), to the last
 * expected count in the output. CPU is the JVM's own, from start() to the end.
 */
import { fetchMavenJars, KAFKA_VERSION } from '../scripts/kafka/broker.js';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
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
  readonly timeoutMs?: number;
}

interface JvmEvent {
  readonly event: string;
  readonly cpuNanos: number;
}

const here = fileURLToPath(new URL('./kstreams/', import.meta.url));

export async function kstreamsWordcount(options: KStreamsOptions): Promise<KStreamsRun> {
  const libs = fetchMavenJars(join(here, 'pom.xml'), `kafka-streams-${KAFKA_VERSION}`, `Kafka Streams ${KAFKA_VERSION} and its dependencies`, { log: (line) => console.error(line) });
  const stateDir = await mkdtemp(join(tmpdir(), 'iqgate-bench-kstreams-'));
  const watcher = await CountWatcher.start(options.brokers, options.output, `${options.applicationId}-check`, options.expected);
  const java = spawn('java', ['-Dorg.slf4j.simpleLogger.defaultLogLevel=warn', '-cp', `${libs}/*`, join(here, 'WordCount.java'), options.brokers.join(','), options.input, options.output, options.applicationId, stateDir], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting = new Map<string, (event: JvmEvent & { at: number }) => void>();
  createInterface({ input: java.stdout }).on('line', (line) => {
    const parsed = JSON.parse(line) as JvmEvent;
    waiting.get(parsed.event)?.({ ...parsed, at: performance.now() });
    waiting.delete(parsed.event);
  });
  const next = (event: string): Promise<JvmEvent & { at: number }> => new Promise((resolve) => waiting.set(event, resolve));
  const starting = next('starting');
  const firstCommit = next('first-commit');
  const exited = once(java, 'exit').then(([code]) => {
    throw new Error(`Kafka Streams exited with ${String(code)} before every word was counted`);
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
    if (java.exitCode === null) {
      java.stdin.end();
      const killer = setTimeout(() => java.kill('SIGKILL'), 30_000);
      await once(java, 'exit');
      clearTimeout(killer);
    }
    await watcher.stop();
    await rm(stateDir, { recursive: true, force: true });
  }
}
