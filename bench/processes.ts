/**
 * bench:processes — does the exactly-once wordcount scale across processes on this machine?
 * (docs/engine.md "What was tried next".) One process per instance, one consumer group: the
 * scale-out a machine with spare cores would use, since one instance's processing runs on one
 * JavaScript thread.
 *
 * For each count N of BENCH_PROCESSES (default `1,2`), on a fresh input topic of BENCH_LINES
 * (default 100000) lines in 4 partitions: N child processes each start runWordcount (same
 * applicationId, its own state directory, librdkafka unless BENCH_CLIENT says otherwise) and
 * the parent waits until the group's committed offsets cover every line and every
 * repartition record. Figures, per N:
 *   processes.<N>.rate         input lines/s from the children's spawn to the last commit;
 *   processes.<N>.steady.rate  the same from the first committed line;
 *   processes.<N>.cpu          µs of CPU per line, all children together (every thread);
 *   processes.<N>.machine      cores busy on the whole machine during the run (broker included).
 * Prints one line per figure and writes bench/results/processes.json. BENCH_TRACE=1 also prints,
 * every ~0.3 s, the lines committed, the repartition records produced and committed, and the
 * output records (docs/engine.md, "Packed repartition topics": the phases of a backlog).
 * BENCH_PROFILE=<dir> writes a CPU profile of each child there and summarises it on stderr. Brokers: KAFKA_BROKERS if
 * set, else a local broker from scripts/kafka/broker.ts.
 */
import { benchBroker } from './bench-broker.js';
import { summariseCpuProfile, type CpuProfile } from './cpu-profile-summary.js';
import { Figures } from './figures.js';
import '../src/kafka/kafkajs-patches.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { produceLines, runWordcount } from '../examples/wordcount/index.js';
import { createTopicsRetrying } from '../scripts/kafka/create-topics.js';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';

const LINES = Number(process.env.BENCH_LINES ?? 100_000);
const COUNTS = (process.env.BENCH_PROCESSES ?? '1,2').split(',').map(Number);
const CLIENT = (process.env.BENCH_CLIENT ?? 'librdkafka') as 'librdkafka' | 'kafkajs';
const PARTITIONS = 4;
const PROFILE_DIR = process.env.BENCH_PROFILE;

/** The child: one wordcount instance until SIGTERM, then its CPU time as a JSON line. */
async function child(brokers: string[], input: string, output: string, applicationId: string): Promise<void> {
  const stateDir = await mkdtemp(join(tmpdir(), 'iqgate-bench-processes-'));
  // BENCH_PROFILE=<dir>: a CPU profile of the child's whole run, summarised on stderr.
  const profiler = PROFILE_DIR === undefined ? null : new Session();
  if (profiler !== null) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  const runtime = await runWordcount({ brokers, inputTopic: input, outputTopic: output, applicationId, kafkaClient: CLIENT, stateDir, logLevel: 'warn' });
  process.once('SIGTERM', () => {
    const cpu = process.cpuUsage();
    process.stdout.write(`${JSON.stringify({ cpuSeconds: (cpu.user + cpu.system) / 1e6 })}\n`);
    const profiled = profiler === null || PROFILE_DIR === undefined ? Promise.resolve() : profiler.post('Profiler.stop').then(async ({ profile }) => {
      const file = join(PROFILE_DIR, `processes-${process.pid}.cpuprofile`);
      await writeFile(file, JSON.stringify(profile));
      process.stderr.write(`${summariseCpuProfile(profile as CpuProfile, file)}\n`);
    });
    void profiled.then(() => runtime.stop()).finally(() => rm(stateDir, { recursive: true, force: true })).finally(() => process.exit(0));
  });
}

/** Busy and total CPU seconds of the whole machine so far (/proc/stat). */
function machineCpu(): { busy: number; all: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = fields;
  return { busy: (user + nice + system + irq + softirq) / 100, all: fields.reduce((a, b) => a + b, 0) / 100 };
}

async function committed(admin: Admin, groupId: string, topic: string): Promise<number> {
  const offsets = await admin.fetchOffsets({ groupId, topics: [topic] }).catch(() => []);
  return offsets.flatMap((t) => t.partitions).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
}

/**
 * Every word counted: once every line is committed no word is written any more, and a counting
 * task that has committed its partition's last record stands one short of the end (the commit
 * marker after it). Words are packed (record-pack.ts), so their number says nothing here.
 */
async function wordsDone(admin: Admin, applicationId: string): Promise<boolean> {
  const topic = `${applicationId}-words-repartition`;
  const ends = await admin.fetchTopicOffsets(topic).catch(() => []);
  const offsets = await admin.fetchOffsets({ groupId: applicationId, topics: [topic] }).catch(() => []);
  const committedOf = new Map(offsets.flatMap((t) => t.partitions).map((p) => [p.partition, Number(p.offset)]));
  return ends.length > 0 && ends.every((e) => Number(e.high) === 0 || (committedOf.get(e.partition) ?? -1) >= Number(e.high) - 1);
}

async function run(brokers: string[], admin: Admin, n: number, report: Figures['report']): Promise<void> {
  const suffix = `${n}-${Date.now().toString(36)}`;
  const input = `bench-processes-lines-${suffix}`;
  const output = `bench-processes-out-${suffix}`;
  const applicationId = `bench-processes-${suffix}`;
  await createTopicsRetrying(admin, [input, output].map((topic) => ({ topic, numPartitions: PARTITIONS })));
  await produceLines({ brokers, topic: input, seed: 42, count: LINES, batchSize: 2000 });
  const children: ChildProcess[] = [];
  const cpuSeconds: Promise<number>[] = [];
  const machine0 = machineCpu();
  const started = performance.now();
  let firstAt = 0;
  try {
    for (let i = 0; i < n; i += 1) {
      const c = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), 'child', brokers.join(','), input, output, applicationId], { stdio: ['ignore', 'pipe', 'inherit'] });
      children.push(c);
      cpuSeconds.push(new Promise((resolve) => {
        let out = '';
        c.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
        c.once('exit', () => resolve((JSON.parse(out.trim().split('\n').pop() ?? '{}') as { cpuSeconds?: number }).cpuSeconds ?? Number.NaN));
      }));
    }
    for (const deadline = Date.now() + 300_000; ;) {
      if (Date.now() > deadline) throw new Error(`${n} process(es) did not finish within 300 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const lines = await committed(admin, applicationId, input);
      if (lines > 0 && firstAt === 0) firstAt = performance.now();
      if (process.env.BENCH_TRACE === '1') {
        const repartition = `${applicationId}-words-repartition`;
        const end = async (topic: string): Promise<number> => (await admin.fetchTopicOffsets(topic).catch(() => [])).reduce((sum, o) => sum + Number(o.high), 0);
        process.stderr.write(`trace ${((performance.now() - started) / 1000).toFixed(1)} s: lines committed ${lines}, repartition end ${await end(repartition)}, repartition committed ${await committed(admin, applicationId, repartition)}, output end ${await end(output)}\n`);
      }
      if (lines >= LINES && (await wordsDone(admin, applicationId))) break;
    }
  } finally {
    for (const c of children) c.kill('SIGTERM');
  }
  const ended = performance.now();
  const machine1 = machineCpu();
  const cpu = (await Promise.all(cpuSeconds)).reduce((a, b) => a + b, 0);
  report(`processes.${n}.rate`, 'lines/s', LINES / ((ended - started) / 1000));
  report(`processes.${n}.steady.rate`, 'lines/s', LINES / ((ended - firstAt) / 1000));
  report(`processes.${n}.cpu`, 'µs/line', (cpu * 1e6) / LINES);
  report(`processes.${n}.machine`, 'cores', (machine1.busy - machine0.busy) / ((ended - started) / 1000));
  await admin.deleteTopics({ topics: [input, output] }).catch(() => undefined);
}

async function main(): Promise<void> {
  const { brokers, stop } = await benchBroker();
  const admin = new Kafka({ clientId: 'bench-processes', brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  const figures = new Figures();
  try {
    for (const n of COUNTS) await run(brokers, admin, n, figures.report.bind(figures));
    await figures.write('processes');
  } finally {
    await admin.disconnect();
    await stop();
  }
}

if (process.argv[2] === 'child') {
  const [, , , brokers = '', input = '', output = '', applicationId = ''] = process.argv;
  await child(brokers.split(','), input, output, applicationId);
} else {
  await main();
}
