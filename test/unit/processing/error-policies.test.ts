import { describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import { TopologyBuilder } from '../../../src/processing/topology.js';
import { serdes } from '../../../src/store/serdes.js';
import type { ErrorPolicy } from '../../../src/processing/processing-options.js';
import type { FakeBroker } from './fake-kafka.js';
import { send, type Harness } from './manager-harness.js';
import { countingProcessorTopology, harnessesClosedAfterEach } from './processing-fixture.js';

/** Counts values per key (int32 keys, so a 3-byte key is undecodable); the value "boom" makes the processor throw. */
function topology() {
  return countingProcessorTopology((record) => {
    if (record.value === 'boom') throw new Error('processor exploded');
  });
}

function intKeyTopology() {
  const b = new TopologyBuilder();
  b.addSource('src', 'in', serdes.int32, serdes.string);
  b.addStore('counts', serdes.string, serdes.int32);
  b.addProcessor<number, string>('count', (record, ctx) => {
    const store = ctx.store<string, number>('counts');
    store.put(String(record.key), (store.get(String(record.key)) ?? 0) + 1);
  }, ['src'], ['counts']);
  return b.build();
}

const harnesses = harnessesClosedAfterEach();

async function run(policy: { deserializationErrors?: ErrorPolicy; processingErrors?: ErrorPolicy }, t = topology(), feed: (b: FakeBroker) => void): Promise<Harness> {
  const h = await harnesses.startOnInput({ topology: t, topics: ['in'], options: policy });
  feed(h.broker);
  await h.pump();
  if (h.fatal.length === 0) await h.commitAll();
  return h;
}

const int = (n: number): Buffer => serdes.int32.serialize(n);

describe('deserialization error policies', () => {
  const feed = (b: FakeBroker): void => {
    send(b, 'in', 0, int(1), 'a');
    send(b, 'in', 0, Buffer.from([1, 2, 3]), 'undecodable key');
    send(b, 'in', 0, int(1), 'b');
  };

  it('fail: stops with DECODE_FAILED and commits nothing', async () => {
    const h = await run({ deserializationErrors: 'fail' }, intKeyTopology(), feed);
    expect(h.fatal).toHaveLength(1);
    expect(isIqgateError(h.fatal[0], 'DECODE_FAILED')).toBe(true);
    expect(h.broker.groupOffsets.get('app:in:0')).toBeUndefined();
    expect(await h.counts('counts', 0)).toEqual(new Map());
  });

  it('skip: leaves the record out and commits past it', async () => {
    const h = await run({ deserializationErrors: 'skip' }, intKeyTopology(), feed);
    expect(h.fatal).toEqual([]);
    expect(await h.counts('counts', 0)).toEqual(new Map([['1', 2]]));
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(3);
  });

  it('dead-letter: sends the raw record with error headers in the same transaction', async () => {
    const h = await run({ deserializationErrors: 'dead-letter' }, intKeyTopology(), feed);
    expect(await h.counts('counts', 0)).toEqual(new Map([['1', 2]]));
    const dead = h.broker.readCommitted('app-dlq', 0, 0).records;
    expect(dead).toHaveLength(1);
    expect(dead[0]?.key).toEqual(Buffer.from([1, 2, 3]));
    expect(dead[0]?.headers['iqgate-error-code']).toBe('DECODE_FAILED');
    expect(dead[0]?.headers['iqgate-src-offset']).toBe('1');
  });
});

describe('processing error policies', () => {
  const feed = (b: FakeBroker): void => {
    send(b, 'in', 0, 'k', 'a');
    send(b, 'in', 0, 'k', 'b');
    send(b, 'in', 0, 'k', 'boom'); // writes, then throws: its write must not survive
    send(b, 'in', 0, 'k', 'c');
  };

  it('fail: stops with PROCESSING_FAILED and nothing of the transaction is committed', async () => {
    const h = await run({ processingErrors: 'fail' }, topology(), feed);
    expect(h.fatal).toHaveLength(1);
    expect(isIqgateError(h.fatal[0], 'PROCESSING_FAILED')).toBe(true);
    expect(await h.counts('counts', 0)).toEqual(new Map());
    expect(h.broker.groupOffsets.get('app:in:0')).toBeUndefined();
    expect(h.broker.readCommitted('app-counts-changelog', 0, 0).records).toEqual([]);
  });

  it('skip: rolls back the failed record\'s partial writes and keeps the records before and after it', async () => {
    const h = await run({ processingErrors: 'skip' }, topology(), feed);
    expect(h.fatal).toEqual([]);
    expect(await h.counts('counts', 0)).toEqual(new Map([['k', 3]]));
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(4);
    // The changelog holds the three good updates only.
    const changelog = h.broker.readCommitted('app-counts-changelog', 0, 0).records;
    expect(changelog.map((r) => serdes.int32.deserialize(r.value as Buffer))).toEqual([1, 2, 3]);
  });

  it('dead-letter: the failed record goes to the dead-letter topic once, its writes do not', async () => {
    const h = await run({ processingErrors: 'dead-letter' }, topology(), feed);
    expect(await h.counts('counts', 0)).toEqual(new Map([['k', 3]]));
    const dead = h.broker.readCommitted('app-dlq', 0, 0).records;
    expect(dead.map((r) => r.value?.toString())).toEqual(['boom']);
    expect(dead[0]?.headers['iqgate-error-code']).toBe('PROCESSING_FAILED');
  });
});

describe('two processor errors in one transaction', () => {
  it('dead-letters both failed records exactly once', async () => {
    const h = await run({ processingErrors: 'dead-letter' }, topology(), (b) => {
      send(b, 'in', 0, 'k', 'a');
      send(b, 'in', 0, 'k', 'boom');
      send(b, 'in', 0, 'k', 'b');
      send(b, 'in', 0, 'k', 'boom');
      send(b, 'in', 0, 'k', 'c');
    });
    expect(await h.counts('counts', 0)).toEqual(new Map([['k', 3]]));
    expect(h.broker.readCommitted('app-dlq', 0, 0).records.map((r) => r.headers['iqgate-src-offset'])).toEqual(['1', '3']);
  });
});

describe('a processor error after records of the transaction were already sent', () => {
  it('aborts the Kafka transaction, then replays without the record: nothing of the aborted attempt is visible', async () => {
    const h = await harnesses.startOnInput({ topology: topology(), topics: ['in'], options: { processingErrors: 'skip', sendAheadRecords: 1 } });
    const { broker } = h;
    send(broker, 'in', 0, 'k', 'a');
    send(broker, 'in', 0, 'k', 'b');
    await h.pump();
    await h.manager.control.idle();
    send(broker, 'in', 0, 'k', 'boom');
    send(broker, 'in', 0, 'k', 'c');
    await h.pump();
    await h.manager.control.idle();
    await h.pump();
    await h.commitAll();
    expect(h.broker.calls).toContain('abort');
    expect(await h.counts('counts', 0)).toEqual(new Map([['k', 3]]));
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(4);
    const changelog = h.broker.readCommitted('app-counts-changelog', 0, 0).records;
    expect(changelog.map((r) => serdes.int32.deserialize(r.value as Buffer))).toEqual([1, 2, 3]);
  });
});
