/**
 * How steadily the counting (stateful) tasks commit, per Kafka client: a side measurement of the
 * crash campaign, which found that on librdkafka a step kill (IQGATE_CRASH_AT) of the counting
 * tasks often takes 7–20 s to fire where kafkajs takes 1–3 s.
 *
 * `npx tsx scripts/soak/commit-cadence.ts [librdkafka|kafkajs]`: a local broker, input at 60
 * lines/s, one wordcount instance restarted after a few kinds of kill; after each restart it
 * samples the group's committed offsets of the repartition topic (the counting tasks' input)
 * every 250 ms for 20 s and prints when they advanced and by how much. Steady processing
 * advances them every sample or two; long gaps with large jumps mean the counting tasks sat idle
 * while their input was there.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { soakKafka, soakName } from './soak-kafka.js';
import { startInputFeeder } from './input-feeder.js';
import { killNow, sleep, spawnSoakChild, stopGracefully, type KafkaClientName, type SoakChild } from './soak-child.js';
import { killAllChildren } from '../../test/integration/processing/wordcount-child.js';
import { createTopics } from '../../test/integration/processing/wordcount-harness.js';
import { startBroker } from '../kafka/broker.js';

const client = (process.argv[2] ?? 'librdkafka') as KafkaClientName;
const broker = process.env.KAFKA_BROKERS ? { brokers: process.env.KAFKA_BROKERS, stop: async () => {} } : await startBroker();
process.env.KAFKA_BROKERS = broker.brokers;
const kafka = soakKafka([broker.brokers]);
const appId = soakName('cadence');
const input = soakName('cadence-in');
const output = soakName('cadence-out');
const repartition = `${appId}-words-repartition`;
const admin = kafka.admin();
await admin.connect();
await createTopics(admin, [input, output], 3);
const feeder = await startInputFeeder(kafka, input, 3, 60);
const dir = await mkdtemp(join(tmpdir(), 'iqgate-cadence-'));
await mkdir('.tmp', { recursive: true });
let spawned = 0;
const spawn = (crashAt?: string): SoakChild => spawnSoakChild({
  client, appId, input, output, stateDir: dir, sessionTimeoutMs: 6000, logFile: join('.tmp', `cadence-${client}-${spawned++}.jsonl`), ...(crashAt === undefined ? {} : { crashAt }),
});

async function committed(): Promise<number> {
  const topics = await admin.fetchOffsets({ groupId: appId, topics: [repartition] }).catch(() => []);
  return topics.flatMap((t) => t.partitions).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
}

async function watch(label: string, ms: number): Promise<void> {
  const t0 = Date.now();
  let last = await committed();
  const advances: Array<{ at: number; by: number }> = [];
  while (Date.now() - t0 < ms) {
    await sleep(250);
    const now = await committed();
    if (now !== last) advances.push({ at: Date.now() - t0, by: now - last });
    last = now;
  }
  let maxGap = 0;
  for (let i = 1; i < advances.length; i += 1) maxGap = Math.max(maxGap, (advances[i]?.at ?? 0) - (advances[i - 1]?.at ?? 0));
  const shown = advances.slice(0, 10).map((a) => `${(a.at / 1000).toFixed(1)}s(+${a.by})`).join(' ');
  console.log(`${client} ${label}: ${advances.length} advances in ${ms / 1000} s, first at ${((advances[0]?.at ?? 0) / 1000).toFixed(1)} s, longest gap ${(maxGap / 1000).toFixed(1)} s: ${shown}${advances.length > 10 ? ' …' : ''}`);
}

try {
  let c = spawn();
  await sleep(8000);
  await killNow(c);
  for (const before of ['crash after-send-offsets:6:1_', 'kill +3000', 'kill +400', 'crash after-kafka-commit:3:1_', 'graceful stop']) {
    if (before.startsWith('crash')) {
      c = spawn(before.split(' ')[1]);
      await c.exited;
    } else if (before === 'graceful stop') {
      c = spawn();
      await sleep(4000);
      await stopGracefully(c, 30_000);
    } else {
      c = spawn();
      await sleep(Number(before.split('+')[1]));
      await killNow(c);
    }
    c = spawn();
    await watch(`restart after ${before}`, 20_000);
    await killNow(c);
  }
} finally {
  await feeder.stop();
  await admin.disconnect();
  await killAllChildren();
  await rm(dir, { recursive: true, force: true });
  await broker.stop();
}
