/**
 * A processor's typed store keeps the bytes of the last primitive key it serialized, for the
 * read-modify-write that follows (task-node-runner.ts). What a processor writes must not depend
 * on that: a different key, or an object key changed between the read and the write, is
 * serialized afresh.
 */
import { describe, expect, it } from 'vitest';
import { TopologyBuilder } from '../../../src/processing/topology.js';
import { serdes } from '../../../src/store/serdes.js';
import { send } from './manager-harness.js';
import { harnessesClosedAfterEach } from './processing-fixture.js';

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
});
