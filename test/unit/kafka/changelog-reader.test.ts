import { describe, expect, it } from 'vitest';
import { FetchBatch, nextPositionWhenEmpty } from '../../../src/kafka/changelog-reader.js';

const record = (offset: number, firstOffset: number, lastOffsetDelta: number) => ({
  offset: String(offset),
  batchContext: { firstOffset: String(firstOffset), lastOffsetDelta },
});

describe('the changelog reader after a fetch that shows nothing at the position', () => {
  it('continues after a compacted batch whose remaining records all lie below the position', () => {
    // Batch [100, 110]: the cleaner kept 100..103; restore stands at 105. The records after 110
    // are still to be read: ending the restore here would lose them.
    const compacted = [record(100, 100, 10), record(101, 100, 10), record(103, 100, 10)];
    expect(nextPositionWhenEmpty(compacted, 105, 500)).toBe(111);
  });

  it('is at the end when no batch reaches the position', () => {
    expect(nextPositionWhenEmpty([], 105, 500)).toBe(500);
    expect(nextPositionWhenEmpty([record(90, 90, 4)], 105, 500)).toBe(500);
  });
});

describe('FetchBatch: concurrent restore reads share a Fetch request per broker', () => {
  type Sent = Array<{ topic: string; partition: number; position: number }>;
  const tp = (topic: string, partition: number) => ({ topic, partition });
  /** A broker stand-in: answers each partition with `count(topic, partition)` raw records, recording every request. */
  function broker(count: (topic: string, partition: number) => number) {
    const requests: Sent[] = [];
    let release: (() => void) | null = null;
    let hold = false;
    const send = async (targets: readonly { tp: { topic: string; partition: number }; position: number }[]) => {
      requests.push(targets.map((t) => ({ ...t.tp, position: t.position })));
      if (hold) await new Promise<void>((r) => (release = r));
      const topics = [...new Set(targets.map((t) => t.tp.topic))];
      return {
        responses: topics.map((topicName) => ({
          topicName,
          partitions: targets.filter((t) => t.tp.topic === topicName).map((t) => ({
            partition: t.tp.partition,
            errorCode: 0,
            highWatermark: '0',
            messages: Array.from({ length: count(topicName, t.tp.partition) }, (_, i) => ({ offset: String(t.position + i) })),
          })),
        })),
      };
    };
    return { requests, send, holdNext: () => (hold = true), release: () => { hold = false; release?.(); } };
  }

  it('sends the reads of one turn as one request, grouped by topic, and each read gets its own partition', async () => {
    const b = broker((_, p) => p + 1);
    const batch = new FetchBatch(b.send);
    const reads = [batch.fetch(tp('a', 0), 5), batch.fetch(tp('b', 3), 7), batch.fetch(tp('a', 1), 9)];
    const got = await Promise.all(reads);
    expect(b.requests).toEqual([[{ topic: 'a', partition: 0, position: 5 }, { topic: 'a', partition: 1, position: 9 }, { topic: 'b', partition: 3, position: 7 }]]);
    expect(got.map((g) => g.data.partition)).toEqual([0, 3, 1]);
    expect(got.map((g) => g.data.messages?.length)).toEqual([1, 4, 2]);
  });

  it('holds reads that arrive while a request is in flight for the next one', async () => {
    const b = broker(() => 1);
    const batch = new FetchBatch(b.send);
    b.holdNext();
    const first = batch.fetch(tp('a', 0), 0);
    await new Promise((r) => setImmediate(r));
    const later = [batch.fetch(tp('a', 1), 0), batch.fetch(tp('a', 2), 0)];
    expect(b.requests).toHaveLength(1);
    b.release();
    await Promise.all([first, ...later]);
    expect(b.requests.map((r) => r.map((t) => t.partition))).toEqual([[0], [1, 2]]);
  });

  it('marks a partition with no bytes as inconclusive when another partition of the answer got some (the byte limit may have cut it off)', async () => {
    const cutOff = broker((_, p) => (p === 1 ? 3 : 0));
    const mixed = new FetchBatch(cutOff.send);
    const got = await Promise.all([0, 1, 2].map((p) => mixed.fetch(tp('a', p), 0)));
    expect(got.map((g) => g.conclusive)).toEqual([false, true, false]);
    // Nothing anywhere: no byte of the limit was spent, so every "nothing" is real.
    const none = new FetchBatch(broker(() => 0).send);
    const empty = await Promise.all([0, 1].map((p) => none.fetch(tp('a', p), 0)));
    expect(empty.map((g) => g.conclusive)).toEqual([true, true]);
  });

  it('fails every read of a failed request, and goes on with the next', async () => {
    let fail = true;
    const b = broker(() => 1);
    const batch = new FetchBatch(async (targets) => {
      if (fail) {
        fail = false;
        throw new Error('broker went away');
      }
      return b.send(targets);
    });
    const failed = await Promise.allSettled([batch.fetch(tp('a', 0), 0), batch.fetch(tp('a', 1), 0)]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    const after = await batch.fetch(tp('a', 0), 0);
    expect(after.data.messages).toHaveLength(1);
  });
});
