/**
 * The client ceilings of bench:processing's exactly-once side: the stateless half of wordcount
 * (line → one record per word, as bench/plain-loop.ts) as a bare transactional consume→produce
 * loop. One consumer (read_committed, a group of its own, from earliest) on all input partitions,
 * one transactional producer, and every 100 ms (from the start of the previous commit, as Kafka
 * Streams' commit.interval.ms) the consumed offsets go into the transaction (sendOffsets) and it
 * commits. No state, no repartition, no changelog: what the client itself allows with a
 * transaction every 100 ms. Run by bench/processing.ts as a child process, once per client, like
 * bench/plain-loop.ts:
 *
 * - `librdkafka`: @confluentinc/kafka-javascript's callback (node-rdkafka) API, the shape of
 *   docs/kafka-clients.md: delivery reports off (a successful commitTransaction is the
 *   acknowledgement), linger.ms 5, batches of `consume(1000, cb)`, and `sendOffsetsToTransaction(
 *   offsets, consumer, timeout)` so the group generation and member id go along (KIP-447).
 * - `kafkajs`: kafkajs 2.2.4 **with iqgate's patches** (src/kafka/kafkajs-patches.ts, imported
 *   before kafkajs as bench/processing.ts does: the client iqgate's kafkajs adapter runs on):
 *   `producer.transaction()`, `send`, `sendOffsets` (group id only: kafkajs has no KIP-447),
 *   `commit`; the producer idempotent with one request in flight, as iqgate's.
 *
 * Both are double-buffered: consumption goes on while a transaction commits; what is consumed
 * meanwhile waits in JavaScript (producing is not allowed during a commit) and is produced into
 * the next transaction as soon as the commit returns. Consumption stops while 20,000 input
 * records wait (librdkafka: no further consume(); kafkajs: the batch handler waits).
 *
 * Done when <lines> input lines have been consumed and committed; linesPerSecond = lines / seconds
 * from the start of consumption (group join included, as in bench/plain-loop.ts) to the commit
 * that completed them. Then a read_committed kafkajs consumer counts the output records this run
 * committed (from the output's end offsets before the run): they must equal the words produced
 * in committed transactions, else exit 1.
 *
 * Usage: node --import tsx bench/txn-loop.ts <brokers> <input> <output> <lines> <kafkajs|librdkafka>
 * Diagnostics on stderr; the last stdout line is JSON:
 *   { "linesPerSecond": n, "transactions": n, "cycleP50Ms": n }
 * (transactions: committed ones; cycleP50Ms: median time from beginning a transaction to its
 * commit returning.) Knobs: TXN_LOOP_CAP (waiting input records, default 20000), TXN_LOOP_DEBUG=1
 * (one stderr line per transaction), TXN_LOOP_TIMEOUT_S (fail when not done, default 170).
 */
import { createRequire } from 'node:module';
import type * as Rdkafka from '@confluentinc/kafka-javascript';
import type { Kafka as KafkaType } from 'kafkajs';
import { wordsOf } from '../examples/wordcount/wordcount-topology.js';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';

const [brokers = '', input = '', output = '', linesArg = '0', client = 'librdkafka'] = process.argv.slice(2);
if (client !== 'kafkajs' && client !== 'librdkafka') throw new Error(`client must be kafkajs or librdkafka, not ${client}`);
if (client === 'kafkajs') await import('../src/kafka/kafkajs-patches.js');
const { Kafka, logLevel } = (await import('kafkajs')).default;

const LINES = Number(linesArg);
const COMMIT_INTERVAL_MS = 100;
const CAP = Number(process.env.TXN_LOOP_CAP ?? 20_000);
const TIMEOUT_MS = 30_000;
const suffix = `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
const groupId = `bench-txn-${client}-${suffix}`;
const transactionalId = `bench-txn-${client}-${suffix}`;
const DEBUG = process.env.TXN_LOOP_DEBUG === '1';
const log = (line: string): void => console.error(`[txn-loop ${client}] ${line}`);

interface Result {
  /** When the commit that completed <lines> lines returned (performance.now()). */
  readonly doneAt: number;
  readonly startedAt: number;
  readonly transactions: number;
  readonly cycles: number[];
  readonly committedLines: number;
  readonly committedWords: number;
}

/** Ends the process on the first error of a callback or a detached promise. */
function fail(error: unknown): never {
  console.error(`[txn-loop ${client}] failed:`, error);
  process.exit(1);
}

function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? 0;
}

// ---------------------------------------------------------------------------------------------
// librdkafka (callback API)

function promisify(call: (cb: (err: Rdkafka.LibrdKafkaError | null | undefined) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => call((err) => (err ? reject(err) : resolve())));
}

async function librdkafkaLoop(): Promise<Result> {
  const rd = createRequire(import.meta.url)('@confluentinc/kafka-javascript') as typeof Rdkafka;
  log(`librdkafka ${rd.librdkafkaVersion}`);
  const producer = new rd.Producer({
    'metadata.broker.list': brokers,
    'client.id': transactionalId,
    'transactional.id': transactionalId,
    'enable.idempotence': true,
    'linger.ms': 5,
    'queue.buffering.max.messages': 1_000_000,
    dr_cb: false,
  }, { acks: -1 });
  const consumer = new rd.KafkaConsumer({
    'metadata.broker.list': brokers,
    'client.id': groupId,
    'group.id': groupId,
    'enable.auto.commit': false,
    'isolation.level': 'read_committed',
  }, { 'auto.offset.reset': 'earliest' });
  producer.on('event.error', fail);
  consumer.on('event.error', fail);

  await new Promise<void>((resolve, reject) => producer.connect({}, (err) => (err ? reject(err) : resolve())));
  producer.setPollInterval(100); // serves error events; there are no delivery reports
  await promisify((cb) => producer.initTransactions(TIMEOUT_MS, cb));
  await new Promise<void>((resolve, reject) => consumer.connect({}, (err) => (err ? reject(err) : resolve())));
  // Wait up to 100 ms for the first record of a batch, not for each one.
  (consumer as unknown as { setDefaultIsTimeoutOnlyForFirstMessage(on: boolean): void }).setDefaultIsTimeoutOnlyForFirstMessage(true);
  consumer.setDefaultConsumeTimeout(100);

  const VALUE = Buffer.from('1');
  interface Txn { began: number; lines: number; words: number; readonly offsets: Map<number, number> }
  const newTxn = (): Txn => ({ began: performance.now(), lines: 0, words: 0, offsets: new Map() });

  await promisify((cb) => producer.beginTransaction(cb));
  const startedAt = performance.now();
  consumer.subscribe([input]);

  let txn = newTxn();
  let nextCommitAt = startedAt + COMMIT_INTERVAL_MS;
  let committing = false;
  let consuming = false;
  let finished = false;
  let pending: Rdkafka.Message[] = [];
  let transactions = 0;
  let committedLines = 0;
  let committedWords = 0;
  const cycles: number[] = [];
  let resolveDone!: (result: Result) => void;
  const done = new Promise<Result>((resolve) => { resolveDone = resolve; });

  const produce = (messages: readonly Rdkafka.Message[]): void => {
    for (const message of messages) {
      const words = wordsOf(message.value?.toString() ?? '');
      for (const word of words) producer.produce(output, null, VALUE, word);
      txn.lines += 1;
      txn.words += words.length;
      txn.offsets.set(message.partition, message.offset + 1);
    }
  };

  const pump = (): void => {
    if (finished || pending.length >= CAP) {
      consuming = false; // resumed when the commit returns
      return;
    }
    consuming = true;
    consumer.consume(1000, (err, messages) => {
      if (finished) return; // the last transaction has committed: these stay unconsumed
      if (err) fail(err);
      if (committing) pending.push(...messages);
      else produce(messages);
      maybeCommit();
      pump();
    });
  };

  const maybeCommit = (): void => {
    if (committing || finished || txn.lines === 0 || performance.now() < nextCommitAt) return;
    committing = true;
    const closing = txn;
    const commitStarted = performance.now();
    nextCommitAt = commitStarted + COMMIT_INTERVAL_MS;
    const offsets = [...closing.offsets].map(([partition, offset]) => ({ topic: input, partition, offset }));
    producer.sendOffsetsToTransaction(offsets, consumer, TIMEOUT_MS, (err) => {
      if (err) fail(err);
      producer.commitTransaction(TIMEOUT_MS, (err2) => {
        if (err2) fail(err2);
        const now = performance.now();
        transactions += 1;
        cycles.push(now - closing.began);
        committedLines += closing.lines;
        committedWords += closing.words;
        if (DEBUG) log(`txn ${transactions} at ${(now - startedAt).toFixed(0)} ms: ${closing.lines} lines, cycle ${(now - closing.began).toFixed(0)} ms, commit ${(now - commitStarted).toFixed(0)} ms, ${pending.length} waiting`);
        if (committedLines >= LINES) {
          finished = true;
          clearInterval(ticker);
          resolveDone({ doneAt: now, startedAt, transactions, cycles, committedLines, committedWords });
          return;
        }
        producer.beginTransaction((err3) => {
          if (err3) fail(err3);
          txn = newTxn();
          committing = false;
          const waiting = pending;
          pending = [];
          produce(waiting);
          if (!consuming) pump();
        });
      });
    });
  };

  const ticker = setInterval(maybeCommit, 5);
  pump();
  const result = await done;
  // Let the last consume() return before disconnecting.
  await new Promise((r) => setTimeout(r, 150));
  await Promise.race([
    Promise.all([
      new Promise<void>((resolve) => consumer.disconnect(() => resolve())),
      new Promise<void>((resolve) => producer.disconnect(() => resolve())),
    ]),
    new Promise((r) => setTimeout(r, 10_000)),
  ]);
  return result;
}

// ---------------------------------------------------------------------------------------------
// kafkajs (patched)

async function kafkajsLoop(kafka: KafkaType): Promise<Result> {
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const consumer = kafka.consumer({ groupId, readUncommitted: false, maxWaitTimeInMs: 100, allowAutoTopicCreation: false });
  await consumer.connect();
  await consumer.subscribe({ topic: input, fromBeginning: true });

  type Transaction = Awaited<ReturnType<typeof producer.transaction>>;
  interface Txn { readonly txn: Transaction; began: number; lines: number; words: number; readonly offsets: Map<number, number>; readonly sends: Set<Promise<void>> }
  const newTxn = async (): Promise<Txn> => ({ txn: await producer.transaction(), began: performance.now(), lines: 0, words: 0, offsets: new Map(), sends: new Set() });
  interface Waiting { readonly partition: number; readonly lines: string[]; readonly next: number }

  let txn = await newTxn(); // the first one also initialises the producer id
  let nextCommitAt = Infinity;
  let committing = false;
  let finished = false;
  let pending: Waiting[] = [];
  let pendingLines = 0;
  let commitReturned: Promise<void> = Promise.resolve();
  let transactions = 0;
  let committedLines = 0;
  let committedWords = 0;
  const cycles: number[] = [];
  let resolveDone!: (result: Result) => void;
  const done = new Promise<Result>((resolve) => { resolveDone = resolve; });

  /** Produces a batch's words into the open transaction; the promise settles when they are sent. */
  const assign = (batch: Waiting): Promise<void> => {
    const open = txn;
    const messages = batch.lines.flatMap((line) => wordsOf(line).map((word) => ({ key: word, value: '1' })));
    open.lines += batch.lines.length;
    open.words += messages.length;
    open.offsets.set(batch.partition, batch.next);
    const send = (async () => {
      // Requests of at most 1000 records, as iqgate's producer sends them (broker message.max.bytes).
      for (let i = 0; i < messages.length; i += 1000) await open.txn.send({ topic: output, messages: messages.slice(i, i + 1000), acks: -1 });
    })();
    open.sends.add(send);
    void send.then(() => open.sends.delete(send), fail);
    return send;
  };

  const commit = async (): Promise<void> => {
    committing = true;
    let release!: () => void;
    commitReturned = new Promise((resolve) => { release = resolve; });
    const closing = txn;
    const commitStarted = performance.now();
    nextCommitAt = commitStarted + COMMIT_INTERVAL_MS;
    await Promise.all(closing.sends);
    await closing.txn.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: input, partitions: [...closing.offsets].map(([partition, offset]) => ({ partition, offset: String(offset) })) }],
    });
    await closing.txn.commit();
    const now = performance.now();
    transactions += 1;
    cycles.push(now - closing.began);
    committedLines += closing.lines;
    committedWords += closing.words;
    if (DEBUG) log(`txn ${transactions} at ${(now - startedAt).toFixed(0)} ms: ${closing.lines} lines, cycle ${(now - closing.began).toFixed(0)} ms, commit ${(now - commitStarted).toFixed(0)} ms, ${pendingLines} waiting`);
    if (committedLines >= LINES) {
      finished = true;
      clearInterval(ticker);
      resolveDone({ doneAt: now, startedAt, transactions, cycles, committedLines, committedWords });
      release();
      return;
    }
    txn = await newTxn();
    committing = false;
    const waiting = pending;
    pending = [];
    pendingLines = 0;
    for (const batch of waiting) void assign(batch);
    release();
  };

  const ticker = setInterval(() => {
    if (!committing && !finished && txn.lines > 0 && performance.now() >= nextCommitAt) void commit().catch(fail);
  }, 5);

  const startedAt = performance.now();
  txn.began = startedAt;
  nextCommitAt = startedAt + COMMIT_INTERVAL_MS;
  await consumer.run({
    autoCommit: false,
    partitionsConsumedConcurrently: 4,
    eachBatch: async ({ batch }) => {
      const last = batch.messages[batch.messages.length - 1];
      if (last === undefined || finished) return;
      const waiting: Waiting = { partition: batch.partition, lines: batch.messages.map((m) => m.value?.toString() ?? ''), next: Number(last.offset) + 1 };
      if (committing) {
        pending.push(waiting);
        pendingLines += waiting.lines.length;
        if (pendingLines >= CAP) await commitReturned;
        return;
      }
      await assign(waiting);
    },
  });
  const result = await done;
  await consumer.disconnect();
  await producer.disconnect();
  return result;
}

// ---------------------------------------------------------------------------------------------

/** Output records committed since `from` (per-partition offsets), read with read_committed. */
async function countCommitted(kafka: KafkaType, from: ReadonlyMap<number, number>, expected: number): Promise<number> {
  const consumer = kafka.consumer({ groupId: `bench-txn-verify-${suffix}`, readUncommitted: false, maxWaitTimeInMs: 100, allowAutoTopicCreation: false });
  await consumer.connect();
  await consumer.subscribe({ topic: output, fromBeginning: true });
  let count = 0;
  let lastChange = Date.now();
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      const start = from.get(batch.partition) ?? 0;
      for (const m of batch.messages) if (Number(m.offset) >= start) count += 1;
      lastChange = Date.now();
    },
  });
  for (const [partition, offset] of from) consumer.seek({ topic: output, partition, offset: String(offset) });
  const deadline = Date.now() + 120_000;
  // Done when the expected count is reached and nothing more arrives for a second (more would be
  // duplicates), or nothing arrives for 10 s (fewer: records missing), or at the deadline.
  while (Date.now() < deadline) {
    const idle = Date.now() - lastChange;
    if ((count >= expected && idle > 1000) || idle > 10_000) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await consumer.disconnect();
  return count;
}

const kafka = new Kafka({ clientId: `bench-txn-${client}`, brokers: brokers.split(','), logLevel: logLevel.ERROR });
const admin = kafka.admin();
await admin.connect();
if (!(await admin.listTopics()).includes(input)) fail(new Error(`input topic ${input} does not exist`));
const held = (await admin.fetchTopicOffsets(input)).reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
if (held < LINES) fail(new Error(`input topic ${input} holds ${held} records, fewer than ${LINES} lines`));
await admin.createTopics({ waitForLeaders: true, topics: [{ topic: output, numPartitions: 4 }] }); // false when it exists
const outputStart = new Map((await admin.fetchTopicOffsets(output)).map((p) => [p.partition, Number(p.high)]));
// A stuck loop (broker gone, a transaction that never completes) fails instead of hanging.
const TIMEOUT_S = Number(process.env.TXN_LOOP_TIMEOUT_S ?? 170);
setTimeout(() => fail(new Error(`not done within ${TIMEOUT_S} s`)), TIMEOUT_S * 1000).unref();

const result = await (client === 'librdkafka' ? librdkafkaLoop() : kafkajsLoop(kafka)).catch(fail);
const seconds = (result.doneAt - result.startedAt) / 1000;
const linesPerSecond = LINES / seconds;
log(`${result.committedLines} lines → ${result.committedWords} words in ${seconds.toFixed(2)} s: ${Math.round(linesPerSecond)} lines/s, ${result.transactions} transactions, cycle p50 ${median(result.cycles).toFixed(1)} ms`);
if (result.committedLines !== LINES) log(`note: the input held more than ${LINES} lines (committed ${result.committedLines})`);

const committedOutput = await countCommitted(kafka, outputStart, result.committedWords);
await admin.disconnect();
if (committedOutput !== result.committedWords) {
  log(`WRONG: ${committedOutput} committed output records (read_committed), expected ${result.committedWords} (one per word)`);
  process.exit(1);
}
log(`checked: ${committedOutput} committed output records = words produced in committed transactions`);
console.log(JSON.stringify({ linesPerSecond, transactions: result.transactions, cycleP50Ms: median(result.cycles) }));
process.exit(0);
