/**
 * Rebalance under exactly-once: while lines keep arriving, a second instance joins (kafkajs:
 * eager, every partition is revoked and re-assigned; librdkafka: cooperative, only the partitions
 * that move are revoked — half of them either way) and later leaves gracefully (they move back,
 * and the first instance restores the tail the second one wrote; a static member on librdkafka
 * leaves when its session ends). Afterwards the output holds every count update exactly once and
 * the stores equal the model.
 */
import { PACK_HEADER, unpackRecord } from '../../../src/processing/record-pack.js';
import { describe, expect, it } from 'vitest';
import { produceLines, runWordcount } from '../../../examples/wordcount/index.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import { brokers } from './brokers.js';
import { committedCounts, expectedCounts, mapsEqual, outputProblems, readOutput, testKafka, uniqueName, until, wordcountSuite } from './wordcount-harness.js';

const SEED = 31;

async function readWords(kafka: ReturnType<typeof testKafka>, topic: string): Promise<Map<string, number>> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const counts = new Map<string, number>();
  const remaining = new Map(ends.filter((e) => Number(e.high) > 0).map((e) => [e.partition, Number(e.high)]));
  const consumer = kafka.consumer({ groupId: uniqueName('diag'), maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise<void>((resolve) => {
    void consumer.run({ eachBatch: async ({ batch }) => {
      for (const m of batch.messages) {
        // Packed repartition records (src/processing/record-pack.ts) carry many words each.
        const pack = m.headers?.[PACK_HEADER];
        const keys = pack === undefined
          ? [m.key]
          : unpackRecord({ topic, partition: batch.partition, offset: Number(m.offset), key: null, value: m.value, timestamp: Number(m.timestamp), headers: { [PACK_HEADER]: pack.toString() } }).map((e) => e.key);
        for (const key of keys) { const w = key?.toString() ?? ''; counts.set(w, (counts.get(w) ?? 0) + 1); }
      }
      if (Number(batch.lastOffset()) + 1 >= (remaining.get(batch.partition) ?? 0)) remaining.delete(batch.partition);
      if (remaining.size === 0) resolve();
    } });
  });
  await consumer.disconnect();
  return counts;
}


describe('wordcount across a rebalance', () => {
  const { kafka, runtimes, createTopics, stateDir } = wordcountSuite();

  it('keeps exactly-once when a second instance joins and later leaves during processing', async () => {
    const input = uniqueName('rb-in');
    const output = uniqueName('rb-out');
    const appId = uniqueName('rb');
    await createTopics([input, output], 4);
    const start = async (): Promise<Runtime> => {
      const dir = await stateDir('iqgate-rb-');
      const runtime = await runWordcount({
        brokers: brokers(), inputTopic: input, outputTopic: output, applicationId: appId, stateDir: dir,
        cacheMaxBytes: 0, logLevel: 'error', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500,
      });
      runtimes.push(runtime);
      return runtime;
    };

    let produced = 0;
    const produce = async (count: number): Promise<void> => {
      const from = produced; // reserved before the await: the feeder and the test produce concurrently
      produced += count;
      await produceLines({ brokers: brokers(), topic: input, seed: SEED, from, count });
    };
    await produce(500);
    const a = await start();
    await until('first commits of A', () => a.metricsSnapshot().commits > 0);

    // Keep lines arriving in the background through both rebalances.
    let feeding = true;
    const feeder = (async () => {
      while (feeding) await produce(50);
    })();
    let bHostedStores = false;
    try {
      const b = await start();
      await until('B running tasks and committing', () => b.localTasks().some((t) => t.state === 'RUNNING') && b.metricsSnapshot().commits > 0);
      expect(a.localTasks().length).toBeLessThan(8); // half of the 8 tasks moved to B
      await produce(200);
      // The counting tasks (with stores) move with the kafkajs assignor, which keeps tasks
      // balanced per sub-topology; librdkafka's cooperative-sticky balances partitions overall.
      bHostedStores = b.localStores().length > 0;
      await b.stop();
      await until('A owning every task again', () => a.localTasks().length === 8 && a.localTasks().every((t) => t.state === 'RUNNING'));
    } finally {
      feeding = false;
      await feeder;
    }
    await produce(200);

    const expected = expectedCounts(SEED, produced);
    try {
      await until('A\'s committed store equal to the model', async () => mapsEqual(await committedCounts([a]), expected), 60_000);
    } catch (error) {
      const committed = await committedCounts([a]);
      const diff = [...expected].filter(([w, n]) => committed.get(w) !== n).slice(0, 5).map(([w, n]) => `${w}: ${String(committed.get(w))} vs ${n}`);
      const problems = outputProblems(await readOutput(kafka, output), expected, true).slice(0, 5);
      const tasks = a.localTasks().map((t) => `${t.id}:${t.state}`);
      const repartition = await readWords(kafka, `${appId}-words-repartition`);
      const rdiff = [...expected].filter(([w, n]) => repartition.get(w) !== n).slice(0, 5).map(([w, n]) => `${w}: ${String(repartition.get(w))} vs ${n}`);
      diff.push(`REPARTITION ${rdiff.join(', ')}`);
      throw new Error(`${String(error)}; store diff ${diff.join(', ')}; output ${problems.join('; ')}; tasks ${tasks.join(' ')}; ${JSON.stringify(a.metricsSnapshot())}`);
    }
    const updates = await readOutput(kafka, output);
    expect(outputProblems(updates, expected, true)).toEqual([]);
    // The tail B wrote came back through restore.
    if (bHostedStores) expect(a.metricsSnapshot().restoredRecords).toBeGreaterThan(0);
  });
});
