/**
 * The consuming half of a client's ceiling, for bench:processing: how fast the client hands
 * already-committed records to JavaScript, and what each costs the event loop. Wordcount
 * consumes a record per input line plus its share of the repartition topic's records (packs of
 * up to 128 words: ~1.06 records per line in all), so this cost times that bounds a one-thread
 * wordcount before any processing, producing or committing (bench/processing.ts,
 * wordcountBound(); docs/engine.md, "Where the time goes").
 *
 * Reads <records> records of <topic> from the beginning, read_committed, in a group of its own,
 * and does nothing with them:
 * - `librdkafka`: the callback API's `consume(500, cb)` in a loop, as iqgate's adapter;
 * - `kafkajs`: `eachBatch` with iqgate's patches, as iqgate's adapter.
 * Measured from the first record to the last: records/s, and the event loop's active time per
 * record (performance.eventLoopUtilization: the main thread's share, which is what a
 * one-thread runtime cannot give to processing or queries).
 *
 * Usage: node --import tsx bench/consume-loop.ts <brokers> <topic> <records> <kafkajs|librdkafka>
 * With <records> 0 it reads until no record came for a second (a topic of unknown size: packed
 * repartition records), and measures up to the last record.
 * The last stdout line is JSON: { "records": n, "recordsPerSecond": n, "activeMicrosPerRecord": n }.
 */
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import type * as Rdkafka from '@confluentinc/kafka-javascript';

const [brokers = '', topic = '', recordsArg = '0', client = 'librdkafka'] = process.argv.slice(2);
if (client !== 'kafkajs' && client !== 'librdkafka') throw new Error(`client must be kafkajs or librdkafka, not ${client}`);
const RECORDS = Number(recordsArg);
const groupId = `bench-consume-${client}-${Date.now().toString(36)}`;
const TIMEOUT_MS = 120_000;

interface Span { records: number; firstAt: number; lastAt: number; elu: ReturnType<typeof performance.eventLoopUtilization> }
const QUIET_MS = 1000;

/** Counts records until RECORDS; the span runs from the first delivered batch to the last. */
class Counter {
  private count = 0;
  private firstAt = 0;
  private eluAtFirst: ReturnType<typeof performance.eventLoopUtilization> | undefined;
  private finish!: (span: Span) => void;
  readonly done = new Promise<Span>((resolve) => { this.finish = resolve; });

  add(n: number): boolean {
    if (n === 0) return false;
    if (this.count === 0) {
      this.firstAt = performance.now();
      this.eluAtFirst = performance.eventLoopUtilization();
    }
    this.count += n;
    if (RECORDS === 0) {
      // Until the topic is read: the span ends at the last record once a quiet second follows it.
      const span: Span = { records: this.count, firstAt: this.firstAt, lastAt: performance.now(), elu: performance.eventLoopUtilization(this.eluAtFirst) };
      clearTimeout(this.quiet);
      this.quiet = setTimeout(() => this.finish(span), QUIET_MS);
      return false;
    }
    if (this.count < RECORDS) return false;
    this.finish({ records: this.count, firstAt: this.firstAt, lastAt: performance.now(), elu: performance.eventLoopUtilization(this.eluAtFirst) });
    return true;
  }

  private quiet: NodeJS.Timeout | undefined;
}

async function librdkafka(counter: Counter): Promise<() => Promise<void>> {
  const rd = createRequire(import.meta.url)('@confluentinc/kafka-javascript') as typeof Rdkafka;
  const consumer = new rd.KafkaConsumer({
    'metadata.broker.list': brokers,
    'group.id': groupId,
    'enable.auto.commit': false,
    'isolation.level': 'read_committed',
    'fetch.wait.max.ms': 200,
  }, { 'auto.offset.reset': 'earliest' });
  await new Promise<void>((resolve, reject) => consumer.connect({}, (err) => (err ? reject(err) : resolve())));
  (consumer as unknown as { setDefaultIsTimeoutOnlyForFirstMessage(on: boolean): void }).setDefaultIsTimeoutOnlyForFirstMessage(true);
  consumer.setDefaultConsumeTimeout(200);
  consumer.subscribe([topic]);
  let stopped = false;
  const next = (): void => {
    consumer.consume(500, (_err, messages) => {
      if (counter.add(messages?.length ?? 0)) stopped = true;
      if (!stopped) setImmediate(next);
    });
  };
  next();
  return async () => {
    stopped = true;
    await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
  };
}

async function kafkajs(counter: Counter): Promise<() => Promise<void>> {
  await import('../src/kafka/kafkajs-patches.js');
  const { Kafka, logLevel } = (await import('kafkajs')).default;
  const consumer = new Kafka({ clientId: groupId, brokers: brokers.split(','), logLevel: logLevel.ERROR })
    .consumer({ groupId, readUncommitted: false, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({ autoCommit: false, eachBatch: async ({ batch }) => { counter.add(batch.messages.length); } });
  return () => consumer.disconnect();
}

const counter = new Counter();
const stop = await (client === 'librdkafka' ? librdkafka(counter) : kafkajs(counter));
const timer = setTimeout(() => {
  console.error(`[consume-loop ${client}] did not read ${RECORDS} records of ${topic} within ${TIMEOUT_MS} ms`);
  process.exit(1);
}, TIMEOUT_MS);
const span = await counter.done;
clearTimeout(timer);
await stop();
const seconds = (span.lastAt - span.firstAt) / 1000;
const result = { records: span.records, recordsPerSecond: span.records / seconds, activeMicrosPerRecord: (span.elu.active * 1000) / span.records };
console.error(`[consume-loop ${client}] ${span.records} records in ${seconds.toFixed(2)} s: ${result.recordsPerSecond.toFixed(0)} records/s, ${result.activeMicrosPerRecord.toFixed(2)} µs of event loop per record`);
console.log(JSON.stringify(result));
process.exit(0);
