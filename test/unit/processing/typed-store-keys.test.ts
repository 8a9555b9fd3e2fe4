/**
 * A processor's typed store keeps the bytes of the last primitive key it serialized, for the
 * read-modify-write that follows (task-node-runner.ts). What a processor writes must not depend
 * on that: a different key, or an object key changed between the read and the write, is
 * serialized afresh. A store key that is the input record's own key may be written as the
 * record's key bytes, but only through a serde that gives those bytes back exactly.
 */
import { describe, expect, it } from 'vitest';
import { TopologyBuilder } from '../../../src/processing/topology.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Serde } from '../../../src/store/types.js';
import { send, type Harness } from './manager-harness.js';
import { brokerWithTopics, countingProcessorTopology, harnessesClosedAfterEach } from './processing-fixture.js';

const harnesses = harnessesClosedAfterEach();

describe('typed store keys', () => {
  it('a read of one key then a write of another, or of the same object changed in between, writes the key written', async () => {
    const b = new TopologyBuilder();
    b.addSource('src', 'in', serdes.string, serdes.string);
    b.addStore('by-string', serdes.string, serdes.int32);
    b.addStore('by-object', serdes.json, serdes.int32);
    b.addProcessor<string, string>('write', (record, ctx) => {
      const strings = ctx.store<string, number>('by-string');
      strings.get(record.key);
      strings.put(`${record.key}-other`, 1); // not the key just read
      strings.put(record.key, (strings.get(record.key) ?? 0) + 1);
      const objects = ctx.store<{ id: string }, number>('by-object');
      const key = { id: record.key };
      objects.get(key);
      key.id = `${record.key}-changed`;
      objects.put(key, 7);
    }, ['src'], ['by-string', 'by-object']);
    const h = await harnesses.startOnInput({ topology: b.build(), topics: ['in'] });
    send(h.broker, 'in', 0, 'a', 'x');
    send(h.broker, 'in', 0, 'a', 'y');
    await h.pump();
    await h.commitAll();
    expect(await h.counts('by-string', 0)).toEqual(new Map([['a', 2], ['a-other', 1]]));
    const task = h.manager.localTasks()[0]!;
    const view = task.stores!.store('by-object').view({ readCommitted: true });
    const keys: unknown[] = [];
    for await (const { key } of view.range()) keys.push(serdes.json.deserialize(key));
    await view.close();
    expect(keys).toEqual([{ id: 'a-changed' }]);
  });

  it('string keys count the same and range in byte order whether ASCII (the key is its own internal form) or not', async () => {
    const topology = countingProcessorTopology((record, ctx) => {
      // A key that is not the input's, read back in the same transaction through the cache.
      const store = ctx.store<string, number>('counts');
      const other = `${record.key}\u00e9`;
      store.put(other, (store.get(other) ?? 0) + 1);
    });
    const h = await harnesses.startOnInput({ topology, topics: ['in'] });
    const keys = ['a', '\u00e9', 'a', 'z', '\u00e9', '\u65e5\u672c', 'ab', 'A', '\u00ff'];
    for (const key of keys) send(h.broker, 'in', 0, key, 'v');
    await h.pump();
    const expected = new Map<string, number>();
    for (const key of keys) for (const k of [key, `${key}\u00e9`]) expected.set(k, (expected.get(k) ?? 0) + 1);
    expect(await h.counts('counts', 0, false)).toEqual(expected);
    await h.commitAll();
    expect(await h.counts('counts', 0, true)).toEqual(expected);
    const task = h.manager.localTasks()[0]!;
    const view = task.stores!.store('counts').view({ readCommitted: true });
    const ranged: Buffer[] = [];
    for await (const { key } of view.range()) ranged.push(key);
    await view.close();
    const byBytes = [...expected.keys()].map((k) => Buffer.from(k)).sort(Buffer.compare);
    expect(ranged.map((k) => k.toString('hex'))).toEqual(byBytes.map((k) => k.toString('hex')));
  });

  it('a processor may forward back to an ancestor (the Processor API allows a cycle); each node keeps its this', async () => {
    // The runs of a node's children are built at its first record, so a cycle does not recurse
    // at build time (task-node-runner.ts childrenRun).
    const b = new TopologyBuilder();
    b.addSource('src', 'in', serdes.string, serdes.string);
    b.addStore('counts', serdes.string, serdes.int32);
    b.addProcessor<string, string>('down', (record, ctx) => {
      const left = Number(record.value);
      if (left > 0) ctx.forward({ ...record, value: String(left - 1) });
    }, ['src', 'tally']);
    const nodes: unknown[] = [];
    b.addProcessor<string, string>('tally', function (this: unknown, record, ctx) {
      nodes.push(this);
      const store = ctx.store<string, number>('counts');
      store.put(record.key, (store.get(record.key) ?? 0) + 1);
      ctx.forward(record);
    }, ['down'], ['counts']);
    const h = await harnesses.startOnInput({ topology: b.build(), topics: ['in'] });
    send(h.broker, 'in', 0, 'k', '3');
    await h.pump();
    expect(await h.counts('counts', 0, false)).toEqual(new Map([['k', 3]]));
    expect(nodes.every((node) => (node as { name?: string } | undefined)?.name === 'tally')).toBe(true);
  });

  it('a store key that is the input key keeps its bytes only where the serde gives them back exactly', async () => {
    /** Counts the input keys in `counts`, keyed with `serde` as the input is. */
    const counting = async (serde: Serde<unknown>) => {
      const b = new TopologyBuilder();
      b.addSource('src', 'in', serde, serdes.string);
      b.addStore('counts', serde, serdes.int32);
      b.addProcessor<unknown, string>('count', (record, ctx) => {
        const store = ctx.store<unknown, number>('counts');
        store.put(record.key, (store.get(record.key) ?? 0) + 1);
      }, ['src'], ['counts']);
      return harnesses.startOnInput({ topology: b.build(), topics: ['in'] });
    };
    const committed = async (h: Harness): Promise<Array<[string, number]>> => {
      const view = h.manager.localTasks()[0]!.stores!.store('counts').view({ readCommitted: true });
      const entries: Array<[string, number]> = [];
      for await (const { key, value } of view.range()) entries.push([key.toString('hex'), serdes.int32.deserialize(value)]);
      await view.close();
      return entries;
    };

    // A NaN with payload bits: float64 reads it as NaN and writes NaN canonically.
    const floats = await counting(serdes.float64 as Serde<unknown>);
    send(floats.broker, 'in', 0, Buffer.from('7ff8000000000001', 'hex'), 'x');
    send(floats.broker, 'in', 0, Buffer.from('7ff8000000000000', 'hex'), 'y');
    await floats.pump();
    await floats.commitAll();
    expect(await committed(floats)).toEqual([['7ff8000000000000', 2]]);

    // A key inside a larger buffer (as a pack's entries are) counts as any other (that the cache
    // keeps a copy of its own, not the buffer, store-contract-lifecycle.ts checks).
    const words = await counting(serdes.string as Serde<unknown>);
    const big = Buffer.alloc(64 * 1024, 0x61);
    big.write('kafka', 100, 'utf8');
    send(words.broker, 'in', 0, big.subarray(100, 105), 'x');
    send(words.broker, 'in', 0, Buffer.from('kafka'), 'y');
    await words.pump();
    await words.commitAll();
    expect(await committed(words)).toEqual([[Buffer.from('kafka').toString('hex'), 2]]);
  });

  it('a value unpacked as its key\'s own bytes reaches a processor as its own object, never the key\'s', async () => {
    const b = new TopologyBuilder();
    b.addSource('lines', 'in', serdes.string, serdes.string);
    b.addProcessor<string, string>('split', (record, ctx) => {
      for (const id of record.value.split(' ')) ctx.forward({ key: { id }, value: { id }, timestamp: record.timestamp });
    }, ['lines']);
    b.addSink('to-ids', 'ids', serdes.json, serdes.json, ['split'], { internal: true });
    b.addSource('ids', 'ids', serdes.json, serdes.json, { internal: true });
    b.addStore('seen', serdes.string, serdes.string);
    b.addProcessor<{ id: string }, { id: string }>('mutate', (record, ctx) => {
      record.value.id = `${record.value.id}!`; // a processor may change its value…
      ctx.store<string, string>('seen').put(record.key.id, record.value.id); // …and its key is still its own
    }, ['ids'], ['seen']);
    const broker = brokerWithTopics(['in']);
    broker.createTopic('app-ids', 1);
    const h = await harnesses.start({ topology: b.build(), partitions: 1, broker, eosV2: true, repartitionPartitions: new Map([['app-ids', 1]]) });
    h.ports.consumer.assign([{ topic: 'in', partition: 0 }, { topic: 'app-ids', partition: 0 }]);
    await h.manager.control.idle();
    send(broker, 'in', 0, 'l', 'a b');
    await h.pump();
    await h.commitAll();
    await h.pump();
    await h.commitAll();
    const view = h.manager.localTasks().find((t) => t.stores?.storeNames().includes('seen'))!.stores!.store('seen').view({ readCommitted: true });
    const entries: string[] = [];
    for await (const { key, value } of view.range()) entries.push(`${key.toString()}=${value.toString()}`);
    await view.close();
    expect(entries).toEqual(['a=a!', 'b=b!']);
  });
});
