import { describe, expect, it } from 'vitest';
import { StreamsBuilder, type KGroupedStream, type KTable } from '../../../src/processing/stream-builder.js';
import type { Topology } from '../../../src/processing/topology.js';
import { serdes } from '../../../src/store/serdes.js';
import { send } from './manager-harness.js';
import { harnessesClosedAfterEach } from './processing-fixture.js';

const harnesses = harnessesClosedAfterEach();

/** in → groupByKey → count into `counts` (counts typed by the value serde) → out. */
function countTopology(count: (grouped: KGroupedStream<string, string>) => KTable<string, bigint> | KTable<string, number>): Topology {
  const b = new StreamsBuilder();
  count(b.stream('in', { key: serdes.string, value: serdes.string }).groupByKey()).toStream().to('out');
  return b.build();
}

describe('count()', () => {
  it('with serdes.int64 counts in bigints and writes Kafka longs, as Kafka Streams count() does', async () => {
    const h = await harnesses.startOnInput({ topology: countTopology((g) => g.count({ store: 'counts', value: serdes.int64 }) satisfies KTable<string, bigint>) });
    for (const word of ['a', 'b', 'a', 'a']) send(h.broker, 'in', 0, word, 'x');
    await h.pump();
    await h.commitAll();
    const out = h.broker.readCommitted('out', 0, 0).records;
    expect(out.map((r) => [r.key?.toString(), (r.value as Buffer).toString('hex')])).toEqual([
      ['a', '0000000000000001'],
      ['b', '0000000000000001'],
      ['a', '0000000000000002'],
      ['a', '0000000000000003'],
    ]);
    const view = h.manager.localTasks()[0]!.stores!.store('counts').view({ readCommitted: true });
    const stored = await view.get(serdes.string.serialize('a'));
    await view.close();
    expect(serdes.int64.deserialize(stored!)).toBe(3n);
  });

  it('with a number serde counts in numbers', async () => {
    const h = await harnesses.startOnInput({ topology: countTopology((g) => g.count({ store: 'counts', value: serdes.int32 }) satisfies KTable<string, number>) });
    for (const word of ['a', 'a']) send(h.broker, 'in', 0, word, 'x');
    await h.pump();
    await h.commitAll();
    expect(await h.counts('counts', 0)).toEqual(new Map([['a', 2]]));
    expect(h.broker.readCommitted('out', 0, 0).records.map((r) => serdes.int32.deserialize(r.value as Buffer))).toEqual([1, 2]);
  });
});
