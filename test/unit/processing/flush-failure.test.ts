/**
 * A change flushed from the record cache that fails downstream (a processor after toStream()
 * throws on it) is a processing error of the record whose write it carried: the transaction is
 * rolled back and replayed without that record (its policy), whoever's write or commit point
 * made the cache flush it. Before, a flush at exactly-once v2's cut left the task with a write
 * batch holding the changes after the failing one without their changelog records, and the
 * next cut committed them; a flush forced by another task's write (the cache is shared) blamed
 * that task's record instead. Either way the committed store no longer matched its changelog.
 */
import { describe, expect, it } from 'vitest';
import { serdes } from '../../../src/store/serdes.js';
import { send } from './manager-harness.js';
import { brokerWithTopics, harnessesClosedAfterEach, refusingDownstreamTopology as topology } from './processing-fixture.js';

const harnesses = harnessesClosedAfterEach();

/** The changelog's last count per key, read committed. */
function changelogCounts(h: { broker: { readCommitted(topic: string, partition: number, from: number): { records: Array<{ key: unknown; value: unknown }> } } }, partition: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of h.broker.readCommitted('app-counts-changelog', partition, 0).records) counts.set(String(r.key), serdes.int32.deserialize(r.value as Buffer));
  return counts;
}

describe('a flushed change that fails downstream', () => {
  it('at exactly-once v2\'s cut: the transaction replays without the record that wrote it; the store commits what its changelog holds', async () => {
    const h = await harnesses.start({ topology: topology(), partitions: 1, broker: brokerWithTopics(['in', 'out']), eosV2: true, cacheMaxBytes: 1_000_000, options: { processingErrors: 'skip' } });
    h.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await h.manager.control.idle();
    for (const key of ['good', 'bad', 'good', 'other']) send(h.broker, 'in', 0, key, 'v');
    await h.pump();
    await h.commitAll();
    await h.commitAll();
    expect(await h.counts('counts', 0)).toEqual(new Map([['good', 2], ['other', 1]]));
    expect(changelogCounts(h, 0)).toEqual(await h.counts('counts', 0));
    expect(h.fatal).toEqual([]);
  });

  for (const eosV2 of [true, false]) {
    it(`under the \`fail\` policy, fails the task manager instead of re-opening the task for ever (${eosV2 ? 'v2 cut' : 'per-task commit'})`, async () => {
      const h = await harnesses.start({ topology: topology(), partitions: 1, broker: brokerWithTopics(['in', 'out']), eosV2, cacheMaxBytes: 1_000_000, options: { processingErrors: 'fail' } });
      h.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
      await h.manager.control.idle();
      for (const key of ['good', 'bad']) send(h.broker, 'in', 0, key, 'v');
      await h.pump();
      await h.commitAll();
      const deadline = Date.now() + 5_000;
      while (h.fatal.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(h.fatal.map((e) => (e as { code?: string }).code)).toEqual(['PROCESSING_FAILED']);
      expect(changelogCounts(h, 0)).toEqual(new Map());
    });
  }

  it('flushed by another task\'s write (the cache is shared): the other task loses nothing, and the owner replays without its record', async () => {
    const h = await harnesses.start({ topology: topology(), partitions: 2, broker: brokerWithTopics(['in', 'out'], 2), eosV2: true, cacheMaxBytes: 400, options: { processingErrors: 'skip' } });
    h.ports.consumer.assign([{ topic: 'in', partition: 0 }, { topic: 'in', partition: 1 }]);
    await h.manager.control.idle();
    send(h.broker, 'in', 0, 'bad', 'v');
    send(h.broker, 'in', 0, 'good', 'v');
    await h.pump();
    // Partition 1's writes fill the small cache: the eldest dirty entries, partition 0's, flush.
    for (let i = 0; i < 30; i += 1) send(h.broker, 'in', 1, `k${i}`, 'v');
    await h.pump();
    send(h.broker, 'in', 0, 'good', 'v');
    await h.pump();
    await h.commitAll();
    await h.commitAll();
    const other = await h.counts('counts', 1);
    expect(other.size).toBe(30); // none of partition 1's records was blamed and skipped
    expect(changelogCounts(h, 1)).toEqual(other);
    expect(await h.counts('counts', 0)).toEqual(new Map([['good', 2]]));
    expect(changelogCounts(h, 0)).toEqual(await h.counts('counts', 0));
    expect(h.fatal).toEqual([]);
  });
});
