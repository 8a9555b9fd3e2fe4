/**
 * iqgate's record encoder must write exactly the bytes of kafkajs' own (`recordBatch/record/v0`),
 * which the patch replaces; kafkajs' original is compiled afresh from its file for the comparison.
 * A round trip through kafkajs' record decoder checks the fields themselves.
 */
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { createRequire, Module } from 'node:module';
import { describe, expect, it } from 'vitest';
import '../../../src/kafka/kafkajs-patches.js';
import { encodeRecord, type RecordInput } from '../../../src/kafka/record-encoder.js';

const require = createRequire(import.meta.url);
type Encoded = { buffer: Buffer };

/** kafkajs' own record encoder, loaded outside the module cache (which holds the patch). */
function kafkajsOriginal(): (record: RecordInput) => Encoded {
  const file = require.resolve('kafkajs/src/protocol/recordBatch/record/v0/index.js');
  const original = new Module(file) as Module & { _compile(source: string, filename: string): void; paths: string[] };
  original.filename = file;
  original.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(file);
  original._compile(readFileSync(file, 'utf8'), file);
  return original.exports as (record: RecordInput) => Encoded;
}
const original = kafkajsOriginal();
const Decoder = require('kafkajs/src/protocol/decoder') as new (buffer: Buffer) => unknown;
const decodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0/decoder') as (decoder: unknown, batchContext: unknown) => {
  key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer | Buffer[]>; offset: string; timestamp: string;
};

const bytes = fc.oneof(
  fc.constant(null),
  fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
  fc.string({ unit: 'binary', maxLength: 200 }),
);
const headerValue = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 20 }), fc.uint8Array({ maxLength: 20 }).map((a) => Buffer.from(a)));
const record = fc.record(
  {
    offsetDelta: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    timestampDelta: fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 }), fc.integer({ min: -(2 ** 51), max: 2 ** 51 }), fc.constantFrom(0, 63, 64, -64, -65, 8191, 8192)),
    key: bytes,
    value: bytes,
    headers: fc.dictionary(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.oneof(headerValue, fc.array(headerValue, { maxLength: 3 })), { maxKeys: 4 }),
  },
  { requiredKeys: [] },
);

describe('record encoder (kafkajs patch 5)', () => {
  it('writes the same bytes as kafkajs for random records', () => {
    fc.assert(
      fc.property(record, (r) => {
        expect(encodeRecord(r).buffer.equals(original(r).buffer)).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('the bytes decode, with kafkajs\' decoder, to the record that was encoded', () => {
    const encoded = encodeRecord({ offsetDelta: 7, timestampDelta: 1234, key: Buffer.from('k'), value: 'välue', headers: { h: 'x', multi: ['a', Buffer.from('b')] } }).buffer;
    const framed = new Decoder(encoded) as { readVarIntBytes(): Buffer }; // as RecordBatch's decoder: the length, then the record
    const decoded = decodeRecord(new Decoder(framed.readVarIntBytes()), { firstOffset: '100', firstTimestamp: '1000', magicByte: 2 });
    expect(decoded.offset).toBe('107');
    expect(decoded.timestamp).toBe('2234');
    expect(decoded.key?.toString()).toBe('k');
    expect(decoded.value?.toString()).toBe('välue');
    expect(decoded.headers.h?.toString()).toBe('x');
    expect((decoded.headers.multi as Buffer[]).map(String)).toEqual(['a', 'b']);
  });

  it('takes the general path, with the same bytes, for inputs outside the fast shape', () => {
    const Long = require('kafkajs/src/utils/long') as { fromString(s: string): unknown };
    const unusual: RecordInput[] = [
      { timestampDelta: Long.fromString('9007199254740993'), key: 'k', value: 'v' },
      { timestampDelta: 2 ** 52 + 2, key: null, value: Buffer.from('v') },
      { timestampDelta: -(2 ** 52), value: 'v' },
      {},
    ];
    for (const r of unusual) expect(encodeRecord(r).buffer.equals(original(r).buffer)).toBe(true);
  });

  it('is what kafkajs\' produce request uses once the patches are loaded', () => {
    const used = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as unknown;
    expect(used).toBe(encodeRecord);
  });
});
