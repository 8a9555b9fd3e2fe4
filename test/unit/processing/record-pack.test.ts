import { describe, expect, it } from 'vitest';
import { partitionForKey } from '../../../src/murmur2.js';
import type { InputRecord, OutputRecord } from '../../../src/processing/ports.js';
import { PACK_HEADER, PACK_MAX_BYTES, PACK_MAX_ENTRIES, PackDecodeError, PackWriter, unpackRecord } from '../../../src/processing/record-pack.js';

/** What a PackWriter makes of `records`: what it writes as they come, then the packs still open. */
function packRecords(records: readonly OutputRecord[], packed: ReadonlyMap<string, number>): OutputRecord[] {
  const writer = new PackWriter(packed);
  const out: OutputRecord[] = [];
  for (const record of records) writer.write(record, out);
  return [...out, ...writer.flush()];
}

const word = (w: string, timestamp = 1_700_000_000_000): OutputRecord => ({ topic: 'app-words', key: Buffer.from(w), value: Buffer.from(`v:${w}`), timestamp });

/** The Kafka record a consumer would hand over for a produced pack, at `offset`. */
function consumed(pack: OutputRecord, offset = 7): InputRecord {
  return { topic: pack.topic, partition: pack.partition ?? -1, offset, key: pack.key, value: pack.value, timestamp: pack.timestamp ?? 0, headers: pack.headers ?? {} };
}

describe('packed repartition records', () => {
  it('packs each partition\'s records in order, where murmur2 puts each key, and unpacks them unchanged', () => {
    const words = ['kafka', 'stream', 'state', 'kafka', 'query', 'level', 'state', 'graph', 'kafka'];
    const records = words.map((w, i) => word(w, 1_700_000_000_000 + i));
    const packs = packRecords(records, new Map([['app-words', 4]]));
    const partitions = new Set(words.map((w) => partitionForKey(Buffer.from(w), 4)));
    expect(packs).toHaveLength(partitions.size);
    for (const pack of packs) {
      expect(pack.key).toBeNull();
      expect(pack.headers?.[PACK_HEADER]).toBe('1');
      const entries = unpackRecord(consumed(pack));
      const expected = records.filter((r) => partitionForKey(r.key!, 4) === pack.partition);
      expect(entries.map((e) => [e.key?.toString(), e.value?.toString(), e.timestamp])).toEqual(expected.map((r) => [r.key?.toString(), r.value?.toString(), r.timestamp]));
      expect(entries.map((e) => e.entry)).toEqual(expected.map((_r, i) => i));
      expect(new Set(entries.map((e) => `${e.topic}/${e.partition}@${e.offset}`))).toEqual(new Set([`app-words/${String(pack.partition)}@7`]));
    }
  });

  it('stamps a pack with its latest entry\'s timestamp', () => {
    const [pack] = packRecords([word('a', 30), word('a', 50), word('a', 40)], new Map([['app-words', 1]]));
    expect(pack?.timestamp).toBe(50);
  });

  it('keeps null values and headers, and passes other topics and null keys through untouched', () => {
    const withHeaders: OutputRecord = { topic: 'app-words', key: Buffer.from('k'), value: null, headers: { trace: 'abc', 'ü': 'ß' }, timestamp: 5 };
    const other: OutputRecord = { topic: 'out', key: Buffer.from('k'), value: Buffer.from('x') };
    const nullKey: OutputRecord = { topic: 'app-words', key: null, value: Buffer.from('y') };
    const out = packRecords([other, withHeaders, nullKey], new Map([['app-words', 1]]));
    expect(out.slice(0, 2)).toEqual([other, nullKey]);
    const [entry] = unpackRecord(consumed(out[2]!));
    expect(entry).toMatchObject({ key: Buffer.from('k'), value: null, headers: { trace: 'abc', 'ü': 'ß' }, timestamp: 5, entry: 0 });
  });

  it('closes a pack at PACK_MAX_ENTRIES entries or PACK_MAX_BYTES bytes', () => {
    const many = Array.from({ length: PACK_MAX_ENTRIES * 2 + 1 }, () => word('same'));
    expect(packRecords(many, new Map([['app-words', 1]])).map((p) => unpackRecord(consumed(p)).length)).toEqual([PACK_MAX_ENTRIES, PACK_MAX_ENTRIES, 1]);
    const big: OutputRecord = { topic: 'app-words', key: Buffer.from('k'), value: Buffer.alloc(PACK_MAX_BYTES / 3) };
    const packs = packRecords([big, big, big, big], new Map([['app-words', 1]]));
    expect(packs.map((p) => unpackRecord(consumed(p)).length)).toEqual([2, 2]);
    for (const p of packs) expect(p.value!.length).toBeLessThanOrEqual(PACK_MAX_BYTES + 4);
  });

  it('sends a record too large for a pack on its own, in its partition, after the records before it', () => {
    const huge: OutputRecord = { topic: 'app-words', key: Buffer.from('k'), value: Buffer.alloc(PACK_MAX_BYTES + 1) };
    const out = packRecords([word('k'), huge, word('k')], new Map([['app-words', 4]]));
    const partition = partitionForKey(Buffer.from('k'), 4);
    expect(out).toHaveLength(3);
    expect(unpackRecord(consumed(out[0]!)).map((e) => e.value?.toString())).toEqual(['v:k']);
    expect(out[1]).toEqual({ ...huge, partition });
    expect(out[1]?.headers).toBeUndefined();
    expect(unpackRecord(consumed(out[2]!)).map((e) => e.value?.toString())).toEqual(['v:k']);
    expect(out.map((r) => r.partition)).toEqual([partition, partition, partition]);
  });

  it('refuses a malformed pack with PackDecodeError: cut short, trailing bytes, unknown version, no value', () => {
    const [pack] = packRecords([word('kafka'), word('stream')], new Map([['app-words', 1]]));
    const good = consumed(pack!);
    expect(() => unpackRecord({ ...good, value: good.value!.subarray(0, good.value!.length - 3) })).toThrow(PackDecodeError);
    expect(() => unpackRecord({ ...good, value: Buffer.concat([good.value!, Buffer.from([0])]) })).toThrow(/after the last of 2 entries/);
    expect(() => unpackRecord({ ...good, headers: { [PACK_HEADER]: '9' } })).toThrow(/unknown pack version "9"/);
    expect(() => unpackRecord({ ...good, value: null })).toThrow(PackDecodeError);
    const lying = Buffer.from(good.value!);
    lying.writeUInt32BE(1000, 0); // says 1000 entries, holds 2
    expect(() => unpackRecord({ ...good, value: lying })).toThrow(/cut short/);
  });
});
