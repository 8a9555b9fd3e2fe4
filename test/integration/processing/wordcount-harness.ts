/**
 * Shared helpers of the processing integration tests: topics, the expected model, reading the
 * read_committed output and the committed stores, and the setup of a wordcount suite.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll } from 'vitest';
import { createTopicsRetrying, kafkajs, testKafka as supportKafka, uniqueName, waitFor } from '../../support/kafka.js';
import { makeLine, wordsOf } from '../../../examples/wordcount/index.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Runtime } from '../../../src/runtime/runtime.js';

type Kafka = kafkajs.Kafka;
type Admin = kafkajs.Admin;
export { uniqueName };

export function testKafka(): Kafka {
  return supportKafka(uniqueName('pt'));
}

/** Waits for `predicate` (polled every `intervalMs`), failing with `what` after `timeoutMs`. */
export function until(what: string, predicate: () => boolean | Promise<boolean>, timeoutMs = 60_000, intervalMs = 50): Promise<void> {
  return waitFor(predicate, timeoutMs, intervalMs, what);
}

/**
 * Creates the topics and waits for their leaders. A broker busy creating and deleting many
 * topics (the whole suite on 2 cores) may answer kafkajs' metadata wait with
 * UNKNOWN_TOPIC_OR_PARTITION for a topic it has just created, which kafkajs does not retry
 * (seen in CI): ask again, a few times.
 */
export async function createTopics(admin: Admin, topics: readonly string[], partitions: number, configEntries?: Array<{ name: string; value: string }>): Promise<void> {
  await createTopicsRetrying(admin, topics.map((topic) => ({ topic, numPartitions: partitions, ...(configEntries === undefined ? {} : { configEntries }) })));
}

export interface WordcountSuite {
  readonly kafka: Kafka;
  /** Runtimes to stop after the suite. */
  readonly runtimes: Runtime[];
  /** Creates the topics (with these topic configs, if given) through an admin client disconnected after the suite. */
  createTopics(topics: readonly string[], partitions: number, configEntries?: Array<{ name: string; value: string }>): Promise<void>;
  /** A new temporary state directory, deleted after the suite. */
  stateDir(prefix: string): Promise<string>;
}

/**
 * Call inside a describe: a Kafka client, and after all its tests stops the runtimes, disconnects
 * the admin client and deletes the state directories.
 */
export function wordcountSuite(): WordcountSuite {
  const kafka = testKafka();
  let admin: Promise<Admin> | undefined;
  const runtimes: Runtime[] = [];
  const dirs: string[] = [];

  afterAll(async () => {
    for (const r of runtimes) await r.stop().catch(() => undefined);
    await (await admin?.catch(() => undefined))?.disconnect();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  return {
    kafka,
    runtimes,
    createTopics: async (topics, partitions, configEntries) => {
      // One admin client for the suite, however many calls.
      admin ??= (async () => {
        const client = kafka.admin();
        await client.connect();
        return client;
      })();
      await createTopics(await admin, topics, partitions, configEntries);
    },
    stateDir: async (prefix) => {
      const dir = await mkdtemp(join(tmpdir(), prefix));
      dirs.push(dir);
      return dir;
    },
  };
}

/** Counts computed directly from the input lines [0, count). */
export function expectedCounts(seed: number, count: number, wordsPerLine = 8): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i < count; i += 1) for (const w of wordsOf(makeLine(seed, i, wordsPerLine))) counts.set(w, (counts.get(w) ?? 0) + 1);
  return counts;
}

/** Everything committed in the output topic, read_committed, per word in offset order. */
export async function readOutput(kafka: Kafka, topic: string): Promise<Map<string, number[]>> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const updates = new Map<string, number[]>();
  const remaining = new Map(ends.map((e) => [e.partition, Number(e.high)]));
  for (const [p, end] of remaining) if (end <= 0) remaining.delete(p);
  if (remaining.size === 0) return updates;
  const consumer = kafka.consumer({ groupId: uniqueName('reader'), readUncommitted: false, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          const word = m.key?.toString() ?? '';
          const list = updates.get(word) ?? [];
          list.push(m.value === null ? -1 : Number(serdes.int64.deserialize(m.value))); // a Kafka long, as Kafka Streams' count() writes
          updates.set(word, list);
        }
        const end = remaining.get(batch.partition);
        if (end !== undefined && Number(batch.lastOffset()) + 1 >= end) remaining.delete(batch.partition);
        if (remaining.size === 0) resolve();
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  return updates;
}

/** The committed view of every local partition of the store, summed into one map. */
export async function committedCounts(runtimes: readonly Runtime[], storeName = 'word-counts'): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const runtime of runtimes) {
    for (const local of runtime.localStores()) {
      if (local.storeName !== storeName) continue;
      const view = local.store.view({ readCommitted: true });
      try {
        for await (const { key, value } of view.range()) counts.set(serdes.string.deserialize(key), Number(serdes.int64.deserialize(value)));
      } finally {
        await view.close();
      }
    }
  }
  return counts;
}

/** Until the committed counts of `runtimes` equal `expected`; returns them (they are equal). */
export async function convergedCounts(runtimes: readonly Runtime[], expected: ReadonlyMap<string, number>, timeoutMs = 90_000): Promise<Map<string, number>> {
  const deadline = Date.now() + timeoutMs;
  let committed = new Map<string, number>();
  while (!mapsEqual(committed, expected)) {
    if (Date.now() > deadline) throw new Error(`store did not converge: ${JSON.stringify([...committed].slice(0, 5))}`);
    await new Promise((r) => setTimeout(r, 200));
    committed = await committedCounts(runtimes);
  }
  return committed;
}

/** A pino logger at `level` whose every line (JSON) is kept, for tests of what is logged. */
export function capturingLogger(level: pino.Level): { logger: pino.Logger; text: () => string; lines: () => string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: pino({ level }, stream), text: () => lines.join(''), lines: () => lines };
}

export function mapsEqual(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

/**
 * Exactly-once on the output: with the record cache off every count update is forwarded, so the
 * read_committed updates of a word must be exactly 1, 2, …, total — a duplicate repeats a
 * number, a loss skips one. With caching on, they must strictly increase and end at the total.
 */
export function outputProblems(updates: ReadonlyMap<string, readonly number[]>, expected: ReadonlyMap<string, number>, everyUpdate: boolean): string[] {
  const problems: string[] = [];
  for (const [word, total] of expected) {
    const seq = updates.get(word) ?? [];
    if (seq[seq.length - 1] !== total) problems.push(`${word}: last update ${String(seq[seq.length - 1])}, expected ${total}`);
    for (let i = 0; i < seq.length; i += 1) {
      const want = everyUpdate ? i + 1 : undefined;
      if (want !== undefined && seq[i] !== want) {
        problems.push(`${word}: update #${i} is ${String(seq[i])}, expected ${want} (${seq.slice(Math.max(0, i - 2), i + 3).join(',')})`);
        break;
      }
      if (!everyUpdate && i > 0 && (seq[i] ?? 0) <= (seq[i - 1] ?? 0)) {
        problems.push(`${word}: not increasing at #${i}`);
        break;
      }
    }
  }
  for (const word of updates.keys()) if (!expected.has(word)) problems.push(`unexpected word ${word}`);
  return problems;
}
