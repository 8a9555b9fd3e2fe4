import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeSorted } from '../../../src/query/merge-sorted.js';

async function* from(items: Buffer[]): AsyncGenerator<Buffer> {
  for (const item of items) yield item;
}

async function collect(parts: Buffer[][], descending: boolean): Promise<Buffer[]> {
  const sign = descending ? -1 : 1;
  const sources = parts.map((part) => ({ iterator: from([...part].sort((a, b) => sign * Buffer.compare(a, b))), onError: () => undefined }));
  const out: Buffer[] = [];
  for await (const item of mergeSorted(sources, (b) => b, descending)) out.push(item);
  return out;
}

describe('mergeSorted', () => {
  it('yields the union of sorted sources in global byte order, either direction', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(fc.uint8Array({ maxLength: 4 }), { maxLength: 20 }), { maxLength: 6 }), fc.boolean(), async (raw, descending) => {
        const parts = raw.map((part) => part.map((bytes) => Buffer.from(bytes)));
        const merged = await collect(parts, descending);
        const expected = parts.flat().sort((a, b) => (descending ? -1 : 1) * Buffer.compare(a, b));
        expect(merged.map((b) => b.toString('hex'))).toEqual(expected.map((b) => b.toString('hex')));
      }),
      { numRuns: 200 },
    );
  });

  it('drops a failing source, reports it, and keeps merging the others', async () => {
    const failures: unknown[] = [];
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from('b');
      throw new Error('disk on fire');
    }
    const out: string[] = [];
    for await (const item of mergeSorted(
      [
        { iterator: from([Buffer.from('a'), Buffer.from('c')]), onError: () => undefined },
        { iterator: failing(), onError: (error) => failures.push(error) },
      ],
      (b) => b,
      false,
    )) {
      out.push(item.toString());
    }
    expect(out).toEqual(['a', 'b', 'c']);
    expect(failures).toHaveLength(1);
  });
});
