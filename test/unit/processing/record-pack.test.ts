import { describe, expect, it } from 'vitest';
import { partitionForKey } from '../../../src/murmur2.js';
import type { InputRecord, OutputRecord } from '../../../src/processing/ports.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Serde } from '../../../src/store/types.js';
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

  it('packs a sink\'s values through encodeInto as write() packs their serialized bytes, in one order with them', () => {
    // ASCII, multi-byte UTF-8, a lone surrogate (serialize writes U+FFFD), an empty string and
    // values around a pack's size, a key longer than 32 bytes: each entry must hold exactly
    // serialize()'s bytes.
    const words = ['kafka', 'grüße', '日本語'.repeat(4), 'a\uD800b', '', 'x'.repeat(PACK_MAX_BYTES / 3), 'y'.repeat(PACK_MAX_BYTES / 2), 'z'.repeat(PACK_MAX_BYTES), 'kafka', 'state'];
    const packed = new Map([['app-words', 3]]);
    // Most values are the key itself (a word grouped by itself: its bytes are copied), some not.
    const valueOf = (w: string, i: number): string => (i % 4 === 0 ? `v:${w}` : w);
    const serialized = (w: string, i: number): OutputRecord => ({ topic: 'app-words', key: serdes.string.serialize(w), value: serdes.string.serialize(valueOf(w, i)), timestamp: i });
    const viaWrite = packRecords(words.map(serialized), packed);
    const writer = new PackWriter(packed);
    const out: OutputRecord[] = [];
    for (const [i, w] of words.entries()) {
      // Every other record goes through write(), as a sink whose serdes lack encodeInto would.
      if (i % 2 === 1) writer.write(serialized(w, i), out);
      else if (!writer.writeEncoded('app-words', w, valueOf(w, i), serdes.string, serdes.string, i, out)) writer.write(serialized(w, i), out);
    }
    const viaEncoded = [...out, ...writer.flush()];
    const entries = (packs: OutputRecord[]) => packs.map((p) => (p.headers?.[PACK_HEADER] === undefined
      ? { partition: p.partition, plain: [p.key?.toString('hex'), p.value?.toString('hex')] }
      : { partition: p.partition, entries: unpackRecord(consumed(p)).map((e) => [e.key?.toString('hex'), e.value?.toString('hex'), e.timestamp]) }));
    expect(entries(viaEncoded)).toEqual(entries(viaWrite));
    for (const p of viaEncoded) if (p.headers?.[PACK_HEADER] !== undefined) expect(p.value!.length).toBeLessThanOrEqual(PACK_MAX_BYTES + 4);
    // The two entries larger than a pack (key and value) went out plain, in their keys' partitions.
    const plain = viaEncoded.filter((p) => p.headers?.[PACK_HEADER] === undefined);
    expect(plain.map((p) => [p.key?.[0], p.partition])).toEqual(['y', 'z'].map((c) => [c.charCodeAt(0), partitionForKey(Buffer.from(c.repeat(c === 'y' ? PACK_MAX_BYTES / 2 : PACK_MAX_BYTES)), 3)]));
  });

  it('unpacks a value with its key\'s bytes as the key\'s own Buffer, and any other value as its own', () => {
    const records: OutputRecord[] = [
      { topic: 'app-words', key: Buffer.from('kafka'), value: Buffer.from('kafka') },
      { topic: 'app-words', key: Buffer.from('kafka'), value: Buffer.from('kafkA') },
      { topic: 'app-words', key: Buffer.from('k'), value: Buffer.from('kk') },
    ];
    const [pack] = packRecords(records, new Map([['app-words', 1]]));
    const [same, other, longer] = unpackRecord(consumed(pack!));
    expect(same!.value).toBe(same!.key);
    expect(other!.value).not.toBe(other!.key);
    expect([other!.value?.toString(), longer!.value?.toString()]).toEqual(['kafkA', 'kk']);
  });

  it('leaves to write() what encodeInto cannot pack: a serde without it, a null key, another topic, an entry larger than a pack', () => {
    const writer = new PackWriter(new Map([['app-words', 2]]));
    const out: OutputRecord[] = [];
    expect(writer.writeEncoded('app-words', 'k', 1, serdes.string, serdes.int32, 0, out)).toBe(false);
    expect(writer.writeEncoded('app-words', null, 'v', serdes.string as Serde<string | null>, serdes.string, 0, out)).toBe(false);
    expect(writer.writeEncoded('other', 'k', 'v', serdes.string, serdes.string, 0, out)).toBe(false);
    expect(writer.writeEncoded('app-words', 'k', 'v'.repeat(PACK_MAX_BYTES), serdes.string, serdes.string, 0, out)).toBe(false);
    expect(() => writer.writeEncoded('app-words', 'k', 7 as unknown as string, serdes.string, serdes.string, 0, out)).toThrow(expect.objectContaining({ code: 'ENCODE_FAILED' }));
    expect(out).toEqual([]);
    expect(writer.flush().map((p) => unpackRecord(consumed(p)).length)).toEqual([]);
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
