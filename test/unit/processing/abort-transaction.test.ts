/**
 * ProcessorContext.abortTransaction() on fake ports, per-task transactions (exactly-once v1 and
 * at-least-once) and the instance's one transaction (v2): the doomed writes are visible to
 * uncommitted reads until the commit point, then vanish; the other records of the transaction
 * are replayed into the next one; the record that asked is consumed without effect.
 */
import { describe, expect, it } from 'vitest';
import { TopologyBuilder } from '../../../src/processing/topology.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Harness, HarnessOptions } from './manager-harness.js';
import { send } from './manager-harness.js';
import { countingProcessorTopology, harnessesClosedAfterEach, waitFor } from './processing-fixture.js';

/**
 * Counts values per key into `counts` and forwards every count to `out`; the value "abort"
 * counts too, then asks to abort the transaction; "abort-twice" asks twice.
 */
function topology() {
  const b = new TopologyBuilder();
  b.addSource('src', 'in', serdes.string, serdes.string);
  b.addStore('counts', serdes.string, serdes.int32);
  b.addProcessor<string, string>('count', (record, ctx) => {
    const store = ctx.store<string, number>('counts');
    const count = (store.get(record.key) ?? 0) + 1;
    store.put(record.key, count);
    ctx.forward({ key: record.key, value: count, timestamp: record.timestamp });
    if (record.value.startsWith('abort')) ctx.abortTransaction(`value ${record.value}`);
    if (record.value === 'abort-twice') ctx.abortTransaction('again');
  }, ['src'], ['counts']);
  b.addSink('sink', 'out', serdes.string, serdes.int32, ['count']);
  return b.build();
}

const harnesses = harnessesClosedAfterEach();

type Variant = { name: string; options: Partial<HarnessOptions> };
const variants: Variant[] = [
  { name: 'exactly-once, a transaction per task', options: {} },
  { name: 'exactly-once, records sent ahead of the commit', options: { options: { sendAheadRecords: 1 } } },
  { name: 'exactly-once v2, one transaction for the instance', options: { eosV2: true } },
  { name: 'at-least-once', options: { options: { processingGuarantee: 'at_least_once' } } },
];

async function start(variant: Variant): Promise<Harness> {
  const h = await harnesses.startOnInput({ ...variant.options, topology: topology(), topics: ['in', 'out'] });
  await waitFor(() => h.manager.localTasks().every((t) => t.state === 'RUNNING'));
  return h;
}

const committedOutput = (h: Harness): number[] =>
  h.broker.readCommitted('out', 0, 0).records.map((r) => serdes.int32.deserialize(r.value as Buffer));
const committedChangelog = (h: Harness): number[] =>
  h.broker.readCommitted('app-counts-changelog', 0, 0).records.map((r) => serdes.int32.deserialize(r.value as Buffer));

describe('a processor aborts its transaction (ProcessorContext.abortTransaction)', () => {
  for (const variant of variants) {
    describe(variant.name, () => {
      it('shows the doomed writes to uncommitted reads until the commit point, then rolls them back and replays the other records', async () => {
        const h = await start(variant);
        send(h.broker, 'in', 0, 'k', 'a');
        send(h.broker, 'in', 0, 'k', 'abort');
        send(h.broker, 'in', 0, 'k', 'b');
        await h.pump();
        await h.manager.control.idle();
        // Before the commit point: the transaction's writes, the aborting record's included.
        expect(await h.counts('counts', 0, false)).toEqual(new Map([['k', 3]]));
        expect(await h.counts('counts', 0, true)).toEqual(new Map());

        await h.commitAll();

        expect(h.fatal).toEqual([]);
        // The aborting record is consumed without effect; a and b are counted once.
        expect(await h.counts('counts', 0, true)).toEqual(new Map([['k', 2]]));
        expect(await h.counts('counts', 0, false)).toEqual(new Map([['k', 2]]));
        expect(h.broker.groupOffsets.get('app:in:0')).toBe(3);
        expect(committedChangelog(h)).toEqual([1, 2]);
        if (variant.options.options?.processingGuarantee !== 'at_least_once') expect(committedOutput(h)).toEqual([1, 2]);
        if (variant.options.options?.sendAheadRecords === 1) expect(h.broker.calls).toContain('abort');
      });

      it('leaves earlier commits alone and drops only the records that asked, however often they asked', async () => {
        const h = await start(variant);
        send(h.broker, 'in', 0, 'k', 'a');
        await h.pump();
        await h.commitAll();
        send(h.broker, 'in', 0, 'k', 'abort-twice');
        send(h.broker, 'in', 0, 'k', 'b');
        send(h.broker, 'in', 0, 'k', 'abort');
        send(h.broker, 'in', 0, 'k', 'c');
        await h.pump();
        await h.manager.control.idle();
        expect(await h.counts('counts', 0, false)).toEqual(new Map([['k', 5]]));
        expect(await h.counts('counts', 0, true)).toEqual(new Map([['k', 1]]));

        await h.commitAll();

        expect(await h.counts('counts', 0, true)).toEqual(new Map([['k', 3]]));
        expect(h.broker.groupOffsets.get('app:in:0')).toBe(5);
        expect(committedChangelog(h)).toEqual([1, 2, 3]);
        if (variant.options.options?.processingGuarantee !== 'at_least_once') expect(committedOutput(h)).toEqual([1, 2, 3]);
      });
    });
  }

  it('logs each abort with code TRANSACTION_ABORTED, the records that asked and why', async () => {
    const logged: Array<Record<string, unknown>> = [];
    const logger = { warn: () => undefined, error: () => undefined, debug: () => undefined, info: (fields: Record<string, unknown>) => void logged.push(fields) };
    const h = await harnesses.startOnInput({ topology: topology(), topics: ['in', 'out'], eosV2: true, logger });
    await waitFor(() => h.manager.localTasks().every((t) => t.state === 'RUNNING'));
    send(h.broker, 'in', 0, 'k', 'a');
    send(h.broker, 'in', 0, 'k', 'abort');
    await h.pump();
    await h.commitAll();
    expect(logged.filter((f) => f.code !== undefined)).toEqual([
      { taskId: '0_0', code: 'TRANSACTION_ABORTED', reasons: ['in/0@1: value abort'], dropped: 1, replayed: 1 },
    ]);
  });

  it('keeps a record skipped by the processing-error policy skipped when a later abort replays the transaction', async () => {
    const topology = countingProcessorTopology((record, ctx) => {
      if (record.value === 'boom') throw new Error('processor exploded');
      if (record.value === 'abort') ctx.abortTransaction('asked to');
    });
    const h = await harnesses.startOnInput({ topology, topics: ['in'], options: { processingErrors: 'dead-letter' } });
    await waitFor(() => h.manager.localTasks().every((t) => t.state === 'RUNNING'));
    for (const value of ['a', 'boom', 'b', 'abort', 'c']) send(h.broker, 'in', 0, 'k', value);
    await h.pump();
    await h.commitAll();
    expect(await h.counts('counts', 0, true)).toEqual(new Map([['k', 3]]));
    // The failed record's dead letter survives the abort's replay, once.
    expect(h.broker.readCommitted('app-dlq', 0, 0).records.map((r) => r.value?.toString())).toEqual(['boom']);
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(5);
  });
});
