import { describe, expect, it } from 'vitest';
import { FreshPartitionReader } from '../../../src/processing/fresh-partition-reader.js';

/** A fetch whose requests the test answers by hand, recording what each asked for. */
function manualFetch() {
  const requests: Array<{ topic: string; partitions: readonly number[]; answer: (offsets: Map<number, number>) => void }> = [];
  const fetch = (topic: string, partitions: readonly number[]): Promise<Map<number, number>> =>
    new Promise((resolve) => requests.push({ topic, partitions, answer: resolve }));
  return { requests, fetch };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('FreshPartitionReader', () => {
  it('asks once for the partitions of every caller of the same turn, and only for those', async () => {
    const { requests, fetch } = manualFetch();
    const reader = new FreshPartitionReader(fetch);
    const reads = [reader.get('t', 7), reader.get('t', 3), reader.get('t', 7)];
    await settle();
    expect(requests.map((r) => [r.topic, r.partitions])).toEqual([['t', [3, 7]]]);
    requests[0]!.answer(new Map([[3, 30], [7, 70], [9, 90]]));
    expect(await Promise.all(reads)).toEqual([70, 30, 70]);
  });

  it('answers a caller that came while a request was in flight from a later request, shared with the others that came meanwhile', async () => {
    const { requests, fetch } = manualFetch();
    const reader = new FreshPartitionReader(fetch);
    const first = reader.get('t', 1);
    await settle();
    const late = [reader.get('t', 2), reader.get('t', 1)];
    await settle();
    expect(requests).toHaveLength(1); // the second waits for the first to settle
    requests[0]!.answer(new Map([[1, 10]]));
    expect(await first).toBe(10);
    await settle();
    expect(requests.map((r) => r.partitions)).toEqual([[1], [1, 2]]);
    requests[1]!.answer(new Map([[1, 11]]));
    expect(await Promise.all(late)).toEqual([undefined, 11]);
  });

  it('keeps topics apart and passes a failure to the callers of that request only', async () => {
    const requests: Array<{ topic: string; settle: (error?: Error) => void }> = [];
    const reader = new FreshPartitionReader((topic) => new Promise((resolve, reject) => {
      requests.push({ topic, settle: (error) => (error ? reject(error) : resolve(new Map([[0, 5]]))) });
    }));
    const a = reader.get('a', 0);
    const b = reader.get('b', 0);
    await settle();
    expect(requests.map((r) => r.topic)).toEqual(['a', 'b']);
    requests[0]!.settle(new Error('broker away'));
    requests[1]!.settle();
    await expect(a).rejects.toThrow('broker away');
    expect(await b).toBe(5);
    const again = reader.get('a', 0);
    await settle();
    requests[2]!.settle();
    expect(await again).toBe(5);
  });
});
