/**
 * A repartitioning topology on fake ports: lines are split into words, the words go through the
 * internal repartition topic — as packs (record-pack.ts) unless packRepartition is false — and
 * are counted downstream. What the counting side commits must not depend on the packing, and an
 * error on one word of a pack must cost that word only.
 */
import { describe, expect, it } from 'vitest';
import { partitionForKey } from '../../../src/murmur2.js';
import { PACK_HEADER } from '../../../src/processing/record-pack.js';
import type { ErrorPolicy } from '../../../src/processing/processing-options.js';
import { TopologyBuilder } from '../../../src/processing/topology.js';
import { serdes } from '../../../src/store/serdes.js';
import { send, type Harness } from './manager-harness.js';
import { brokerWithTopics, harnessesClosedAfterEach } from './processing-fixture.js';

const WORD_PARTITIONS = 2;

/** in → split into words → app-words (internal, by word) → counts; the word "boom" makes the counter throw, "abort" abort its transaction. */
function topology() {
  const b = new TopologyBuilder();
  b.addSource('lines', 'in', serdes.string, serdes.string);
  b.addProcessor<string, string>('split', (record, ctx) => {
    for (const w of record.value.split(' ')) ctx.forward({ key: w, value: w, timestamp: record.timestamp });
  }, ['lines']);
  b.addSink('to-words', 'words', serdes.string, serdes.string, ['split'], { internal: true });
  b.addSource('words', 'words', serdes.string, serdes.string, { internal: true });
  b.addStore('counts', serdes.string, serdes.int32);
  b.addProcessor<string, string>('count', (record, ctx) => {
    if (record.key === 'boom') throw new Error('processor exploded');
    if (record.key === 'abort') ctx.abortTransaction('no aborts here');
    const store = ctx.store<string, number>('counts');
    store.put(record.key, (store.get(record.key) ?? 0) + 1);
  }, ['words'], ['counts']);
  return b.build();
}

const LINES = ['kafka stream state kafka', 'query boom level state', 'graph kafka abort stream', 'state state state kafka'];

const harnesses = harnessesClosedAfterEach();

async function run(eosV2: boolean, options: { packRepartition?: boolean; processingErrors?: ErrorPolicy }): Promise<Harness> {
  const broker = brokerWithTopics(['in']);
  broker.createTopic('app-words', WORD_PARTITIONS);
  const h = await harnesses.start({
    topology: topology(), partitions: WORD_PARTITIONS, broker, eosV2, options,
    repartitionPartitions: new Map([['app-words', WORD_PARTITIONS]]),
  });
  h.ports.consumer.assign([{ topic: 'in', partition: 0 }, ...Array.from({ length: WORD_PARTITIONS }, (_x, partition) => ({ topic: 'app-words', partition }))]);
  await h.manager.control.idle();
  for (const [i, line] of LINES.entries()) send(broker, 'in', 0, String(i), line);
  await h.pump();
  await h.commitAll(); // the words go out in this transaction…
  await h.pump();
  await h.commitAll(); // …and are counted in the next
  return h;
}

async function allCounts(h: Harness): Promise<Map<string, number>> {
  const all = new Map<string, number>();
  for (let p = 0; p < WORD_PARTITIONS; p += 1) for (const [w, n] of await h.counts('counts', p)) all.set(w, n);
  return all;
}

const expected = new Map([['kafka', 4], ['stream', 2], ['state', 5], ['query', 1], ['level', 1], ['graph', 1]]);

describe.each([['one transaction per instance', true], ['a transaction per task', false]])('packed repartition topics (%s)', (_name, eosV2) => {
  it('carry many words per Kafka record, and count the same as one record per word', async () => {
    const packed = await run(eosV2, { processingErrors: 'skip' });
    const plain = await run(eosV2, { processingErrors: 'skip', packRepartition: false });
    expect(await allCounts(packed)).toEqual(expected);
    expect(await allCounts(plain)).toEqual(expected);
    const words = LINES.join(' ').split(' ').length;
    expect(summary(plain)).toEqual({ records: words, packs: 0 });
    expect(summary(packed)).toEqual({ records: WORD_PARTITIONS, packs: WORD_PARTITIONS });
    // Committed input records count a pack's words each: the lines, then every word once.
    for (const h of [packed, plain]) expect(h.commits.reduce((a, b) => a + b, 0)).toBe(LINES.length + words);
    // The counting tasks committed past every Kafka record of their partitions.
    for (const h of [packed, plain]) {
      for (let p = 0; p < WORD_PARTITIONS; p += 1) {
        expect(h.broker.groupOffsets.get(`app:app-words:${p}`)).toBe(h.broker.readCommitted('app-words', p, 0).lso);
      }
    }
  });

  it('dead-letters the one word that failed, with its own key, and counts the rest of its pack', async () => {
    const h = await run(eosV2, { processingErrors: 'dead-letter' });
    expect(await allCounts(h)).toEqual(expected);
    const dead = h.broker.readCommitted('app-dlq', 0, 0).records;
    expect(dead.map((r) => r.key?.toString())).toEqual(['boom']);
    expect(dead[0]?.headers['iqgate-error-code']).toBe('PROCESSING_FAILED');
    expect(dead[0]?.headers[PACK_HEADER]).toBeUndefined();
    // Which entry of its pack: the words of one partition, in the order the lines gave them.
    const boomPartition = partitionForKey(Buffer.from('boom'), WORD_PARTITIONS);
    const wordsThere = LINES.join(' ').split(' ').filter((w) => partitionForKey(Buffer.from(w), WORD_PARTITIONS) === boomPartition);
    expect(dead[0]?.headers['iqgate-src-entry']).toBe(String(wordsThere.indexOf('boom')));
  });

  it('fail: stops with PROCESSING_FAILED on the word, and commits nothing of its task: no count, no offset', async () => {
    const h = await run(eosV2, { processingErrors: 'fail' });
    expect(h.fatal).toHaveLength(1);
    const boomPartition = partitionForKey(Buffer.from('boom'), WORD_PARTITIONS);
    expect(String((h.fatal[0] as Error).message)).toContain(`processor failed on app-words/${boomPartition}@0`);
    expect(await h.counts('counts', boomPartition)).toEqual(new Map());
    expect(h.broker.groupOffsets.get(`app:app-words:${boomPartition}`)).toBeUndefined();
  });
});

/**
 * One partition of words: 40 lines of 8 words, the last `lastLine`, split and committed into
 * app-words as three packs (128, 128, 64 words) that the counting task has not fetched yet.
 */
async function threePacks(o: { eosV2: boolean; options?: { processingErrors: ErrorPolicy; sendAheadRecords: number }; lastLine: string }): Promise<Harness> {
  const broker = brokerWithTopics(['in']);
  broker.createTopic('app-words', 1);
  const h = await harnesses.start({
    topology: topology(), partitions: 1, broker, eosV2: o.eosV2, repartitionPartitions: new Map([['app-words', 1]]),
    ...(o.options === undefined ? {} : { options: o.options }),
  });
  h.ports.consumer.assign([{ topic: 'in', partition: 0 }, { topic: 'app-words', partition: 0 }]);
  await h.manager.control.idle();
  for (let i = 0; i < 39; i += 1) send(broker, 'in', 0, String(i), 'kafka stream state query level graph kafka state');
  send(broker, 'in', 0, '39', o.lastLine);
  await h.pump();
  await h.commitAll();
  return h;
}

const countingTask = (h: Harness) => h.manager.localTasks().find((t) => t.id.startsWith('1_'))!;

describe('a processor error in a pack after the transaction sent records (a transaction per task)', () => {
  it('aborts in Kafka, replays without the one word, and dead-letters it', async () => {
    // "boom" is in the last pack, processed after the counting task has sent the first two
    // packs' changelog records ahead.
    const h = await threePacks({ eosV2: false, options: { processingErrors: 'dead-letter', sendAheadRecords: 1 }, lastLine: 'kafka stream state query boom graph kafka state' });
    const aborts = h.broker.calls.filter((c) => c === 'abort').length;
    await h.pump();
    await h.commitAll();
    expect(h.fatal).toEqual([]);
    expect(h.broker.calls.filter((c) => c === 'abort').length).toBe(aborts + 1);
    expect(await h.counts('counts', 0)).toEqual(new Map([['kafka', 80], ['stream', 40], ['state', 80], ['query', 40], ['level', 39], ['graph', 40]]));
    expect(h.broker.readCommitted('app-dlq', 0, 0).records.map((r) => r.key?.toString())).toEqual(['boom']);
  });
});

describe('a commit that runs before the rollback of a failed pack (a transaction per task)', () => {
  it('settles the rollback first: the entries before the failure are counted once', async () => {
    const h = await threePacks({ eosV2: false, options: { processingErrors: 'skip', sendAheadRecords: 1 }, lastLine: 'kafka stream state query boom graph kafka state' });
    const counter = countingTask(h);
    h.ports.consumer.deliver();
    // The first pack, then (its changelog records sent ahead) the other two: "boom" in the last
    // leaves a rollback pending, and a commit — queued before it, say by the memory limit — runs first.
    expect(counter.processSome(128, Number.POSITIVE_INFINITY, () => 0)).toBe(128);
    counter.processSome(1000, Number.POSITIVE_INFINITY, () => 0);
    expect(counter.rollback).not.toBeNull();
    await counter.commit(() => 0);
    expect(counter.rollback).toBeNull();
    await h.pump();
    await h.commitAll();
    expect(await h.counts('counts', 0)).toEqual(new Map([['kafka', 80], ['stream', 40], ['state', 80], ['query', 40], ['level', 39], ['graph', 40]]));
  });
});

describe('a pack in the task\'s inbox', () => {
  it('counts once in buffered() (back-pressure counts fetched Kafka records) and as its entries in processSome()\'s record limit (a pack is processed whole)', async () => {
    const h = await threePacks({ eosV2: true, lastLine: 'kafka stream state query level graph kafka state' });
    const counter = countingTask(h);
    h.ports.consumer.deliver(); // hands the packs over; the processing loop has not run yet
    expect(counter.buffered()).toBe(3);
    expect(counter.processSome(10, Number.POSITIVE_INFINITY, () => 0)).toBe(128);
    expect(counter.buffered()).toBe(2);
    expect(counter.processSome(200, Number.POSITIVE_INFINITY, () => 0)).toBe(192);
    expect(counter.buffered()).toBe(0);
  });
});

interface InputRecordsSummary { records: number; packs: number }

function summary(h: Harness): InputRecordsSummary {
  let records = 0;
  let packs = 0;
  for (let p = 0; p < WORD_PARTITIONS; p += 1) {
    for (const r of h.broker.readCommitted('app-words', p, 0).records) {
      records += 1;
      if (r.headers[PACK_HEADER] !== undefined) packs += 1;
    }
  }
  return { records, packs };
}
