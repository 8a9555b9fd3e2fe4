import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import { serdeByName, serdes } from '../../../src/store/index.js';

function expectCode(fn: () => unknown, code: 'DECODE_FAILED' | 'ENCODE_FAILED' | 'INVALID_CONFIG'): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(isIqgateError(caught, code), `expected ${code}, got ${String(caught)}`).toBe(true);
}

const byteOrder = (a: Buffer, b: Buffer) => Buffer.compare(a, b);
const hex = (bytes: Buffer): string => bytes.toString('hex').replace(/(..)(?!$)/g, '$1 ');
const INT64 = { min: -(1n << 63n), max: (1n << 63n) - 1n };

/** A NaN with payload bits (Java: Double.longBitsToDouble(0x7ff0000000000001L)). */
const payloadNaN = new Float64Array(new BigUint64Array([0x7ff0000000000001n]).buffer)[0]!;

// What kafka-clients 4.1.1 writes: IntegerSerializer, LongSerializer and DoubleSerializer run
// on these values (a small Java program against the broker's kafka-clients jar) printed these
// bytes.
const KAFKA_INT32: Array<[number, string]> = [
  [0, '00 00 00 00'],
  [1, '00 00 00 01'],
  [-1, 'ff ff ff ff'],
  [256, '00 00 01 00'],
  [2147483647, '7f ff ff ff'],
  [-2147483648, '80 00 00 00'],
  [-123456789, 'f8 a4 32 eb'],
];
const KAFKA_INT64: Array<[bigint, string]> = [
  [0n, '00 00 00 00 00 00 00 00'],
  [1n, '00 00 00 00 00 00 00 01'],
  [-1n, 'ff ff ff ff ff ff ff ff'],
  [9007199254740993n, '00 20 00 00 00 00 00 01'],
  [9223372036854775807n, '7f ff ff ff ff ff ff ff'],
  [-9223372036854775808n, '80 00 00 00 00 00 00 00'],
  [-4611686018427387904n, 'c0 00 00 00 00 00 00 00'],
];
const KAFKA_FLOAT64: Array<[number, string]> = [
  [1.0, '3f f0 00 00 00 00 00 00'],
  [-2.0, 'c0 00 00 00 00 00 00 00'],
  [0, '00 00 00 00 00 00 00 00'],
  [-0, '80 00 00 00 00 00 00 00'],
  [0.1, '3f b9 99 99 99 99 99 9a'],
  [Infinity, '7f f0 00 00 00 00 00 00'],
  [-Infinity, 'ff f0 00 00 00 00 00 00'],
  [Number.MIN_VALUE, '00 00 00 00 00 00 00 01'],
  [NaN, '7f f8 00 00 00 00 00 00'],
  [payloadNaN, '7f f8 00 00 00 00 00 00'],
];

describe('Kafka-compatible serdes', () => {
  it('int32 writes what Kafka IntegerSerializer writes and reads it back', () => {
    for (const [value, bytes] of KAFKA_INT32) {
      expect(hex(serdes.int32.serialize(value)), String(value)).toBe(bytes);
      expect(serdes.int32.deserialize(Buffer.from(bytes.replace(/ /g, ''), 'hex'))).toBe(value);
    }
  });

  it('int64 writes what Kafka LongSerializer writes and reads it back as a bigint', () => {
    for (const [value, bytes] of KAFKA_INT64) {
      expect(hex(serdes.int64.serialize(value)), String(value)).toBe(bytes);
      expect(serdes.int64.deserialize(Buffer.from(bytes.replace(/ /g, ''), 'hex'))).toBe(value);
    }
  });

  it('int64 writes the bytes of Buffer#writeBigInt64BE for every long, at the edges of exact doubles too', () => {
    // int64 computes longs within ±(2^53 - 1) as two 32-bit halves of a double (serdes.ts).
    const edges = [0n, -1n, 2n ** 32n - 1n, -(2n ** 32n), 2n ** 53n - 1n, 2n ** 53n, -(2n ** 53n) + 1n, -(2n ** 53n), -(2n ** 53n) - 1n, 2n ** 63n - 1n, -(2n ** 63n)];
    const check = (value: bigint): void => {
      const expected = Buffer.alloc(8);
      expected.writeBigInt64BE(value);
      expect(hex(serdes.int64.serialize(value)), String(value)).toBe(hex(expected));
      expect(serdes.int64.deserialize(expected)).toBe(value);
    };
    for (const value of edges) check(value);
    fc.assert(fc.property(fc.bigInt(INT64), check));
  });

  it('int32 writes the bytes of Buffer#writeInt32BE for every int, the edges included, and reads them back as readInt32BE does', () => {
    // int32 and the sortable serdes write and read their 32-bit words by hand (serdes.ts).
    const check = (value: number): void => {
      const expected = Buffer.alloc(4);
      expected.writeInt32BE(value);
      expect(hex(serdes.int32.serialize(value)), String(value)).toBe(hex(expected));
      expect(serdes.int32.deserialize(expected)).toBe(expected.readInt32BE(0));
      const flipped = Buffer.from(expected);
      flipped[0] = flipped[0]! ^ 0x80;
      expect(hex(serdes.sortableInt32.serialize(value)), String(value)).toBe(hex(flipped));
      expect(serdes.sortableInt32.deserialize(flipped)).toBe(value);
    };
    for (const value of [0, -1, 1, 0x7fffffff, -0x80000000, 0xffff, -0x10000, 255, -256]) check(value);
    fc.assert(fc.property(fc.integer(), check));
  });

  it('float64 writes what Kafka DoubleSerializer writes, -0 and a canonical NaN included, and reads it back', () => {
    for (const [value, bytes] of KAFKA_FLOAT64) {
      expect(hex(serdes.float64.serialize(value)), String(value)).toBe(bytes);
      expect(serdes.float64.deserialize(Buffer.from(bytes.replace(/ /g, ''), 'hex'))).toBe(value);
    }
  });

  it('int32, int64 and float64 round-trip every value of their type', () => {
    fc.assert(
      fc.property(fc.integer(), fc.bigInt(INT64), fc.double(), (i, l, d) => {
        expect(serdes.int32.deserialize(serdes.int32.serialize(i))).toBe(i);
        expect(serdes.int64.deserialize(serdes.int64.serialize(l))).toBe(l);
        expect(serdes.float64.deserialize(serdes.float64.serialize(d))).toBe(d); // toBe is Object.is: -0 stays -0
      }),
    );
  });
});

describe('sortable serdes', () => {
  it('sortableInt32 round-trips, its byte order is numeric order, and its bytes are int32 with the sign bit flipped', () => {
    fc.assert(
      fc.property(fc.integer(), fc.integer(), (x, y) => {
        const [a, b] = [serdes.sortableInt32.serialize(x), serdes.sortableInt32.serialize(y)];
        expect(serdes.sortableInt32.deserialize(a)).toBe(x);
        expect(Math.sign(byteOrder(a, b))).toBe(Math.sign(x - y));
        const kafka = serdes.int32.serialize(x);
        kafka[0] = kafka[0]! ^ 0x80;
        expect(a.equals(kafka)).toBe(true);
      }),
    );
    expect(serdes.sortableInt32.deserialize(serdes.sortableInt32.serialize(-0x80000000))).toBe(-0x80000000);
  });

  it('sortableInt64 round-trips and its byte order is numeric order, negatives included', () => {
    fc.assert(
      fc.property(fc.bigInt(INT64), fc.bigInt(INT64), (x, y) => {
        const [a, b] = [serdes.sortableInt64.serialize(x), serdes.sortableInt64.serialize(y)];
        expect(serdes.sortableInt64.deserialize(a)).toBe(x);
        expect(Math.sign(byteOrder(a, b))).toBe(x < y ? -1 : x > y ? 1 : 0);
      }),
    );
  });

  it('sortableFloat64 round-trips and its byte order is numeric order, infinities included', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }), fc.double({ noNaN: true }), (x, y) => {
        const [a, b] = [serdes.sortableFloat64.serialize(x), serdes.sortableFloat64.serialize(y)];
        expect(serdes.sortableFloat64.deserialize(a)).toBe(x === 0 ? 0 : x);
        expect(Math.sign(byteOrder(a, b))).toBe(x < y ? -1 : x > y ? 1 : 0);
      }),
    );
    expect(serdes.sortableFloat64.serialize(-0).equals(serdes.sortableFloat64.serialize(0))).toBe(true);
    expect(Number.isNaN(serdes.sortableFloat64.deserialize(serdes.sortableFloat64.serialize(NaN)))).toBe(true);
    expect(serdes.sortableFloat64.serialize(payloadNaN).equals(serdes.sortableFloat64.serialize(NaN))).toBe(true);
    expect(byteOrder(serdes.sortableFloat64.serialize(NaN), serdes.sortableFloat64.serialize(Infinity))).toBe(1);
  });

  it('the Kafka-compatible int32 does not keep numeric order, which is why the sortable one exists', () => {
    expect(byteOrder(serdes.int32.serialize(-1), serdes.int32.serialize(1))).toBe(1);
    expect(byteOrder(serdes.sortableInt32.serialize(-1), serdes.sortableInt32.serialize(1))).toBe(-1);
  });
});

describe('serdes', () => {
  it('string, json and bytes round-trip', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.jsonValue(), fc.uint8Array(), (s, j, u) => {
        expect(serdes.string.deserialize(serdes.string.serialize(s))).toBe(s);
        expect(serdes.json.deserialize(serdes.json.serialize(j))).toEqual(JSON.parse(JSON.stringify(j)));
        const bytes = Buffer.from(u);
        expect(serdes.bytes.deserialize(serdes.bytes.serialize(bytes)).equals(bytes)).toBe(true);
      }),
    );
  });

  it('string decodes every byte sequence as the fatal UTF-8 decoder does, short ASCII included, and refuses what it refuses', () => {
    // Short ASCII is decoded in JavaScript (serdes.ts shortAscii); the rest by TextDecoder.
    const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    const check = (bytes: Uint8Array): void => {
      let expected: string | null = null;
      try {
        expected = decoder.decode(bytes);
      } catch {
        expected = null;
      }
      if (expected === null) expectCode(() => serdes.string.deserialize(Buffer.from(bytes)), 'DECODE_FAILED');
      else expect(serdes.string.deserialize(Buffer.from(bytes))).toBe(expected);
    };
    for (const text of ['', 'a', 'kafka', 'x'.repeat(12), 'x'.repeat(13), 'x'.repeat(24), 'é', 'aé', '\ufeffa']) check(Buffer.from(text));
    check(Buffer.from([0x61, 0x80])); // a continuation byte alone, after ASCII
    fc.assert(fc.property(fc.uint8Array({ maxLength: 30 }), check));
    fc.assert(fc.property(fc.uint8Array({ maxLength: 30, max: 0x7f }), check));
  });

  it('string serialize and encodeInto write the bytes of Buffer.from(value) (encodeInto says how many, or -1 without the room)', () => {
    // Short ASCII is written char by char (serdes.ts); anything else by Buffer#utf8Write.
    const check = (value: string, slack: number): void => {
      const expected = Buffer.from(value, 'utf8');
      expect(hex(serdes.string.serialize(value))).toBe(hex(expected));
      const target = Buffer.alloc(3 + expected.length + slack, 0xaa);
      const written = serdes.string.encodeInto!(value, target, 3);
      expect(written).toBe(expected.length);
      expect(hex(target.subarray(3, 3 + written))).toBe(hex(expected));
      expect(target.subarray(0, 3).every((b) => b === 0xaa)).toBe(true);
      if (expected.length > 0) expect(serdes.string.encodeInto!(value, Buffer.alloc(2 + expected.length - 1), 2)).toBe(-1);
    };
    for (const value of ['', 'a', 'kafka', 'x'.repeat(24), 'x'.repeat(25), 'aé', 'é', 'a\ud800', '日本', 'a😀']) check(value, 0);
    fc.assert(fc.property(fc.string({ maxLength: 30 }), fc.integer({ min: 0, max: 4 }), check));
    fc.assert(fc.property(fc.string({ maxLength: 30, unit: 'binary' }), fc.integer({ min: 0, max: 4 }), check));
  });

  it('bytes that do not decode raise DECODE_FAILED', () => {
    expectCode(() => serdes.string.deserialize(Buffer.from([0xc3, 0x28])), 'DECODE_FAILED');
    expectCode(() => serdes.json.deserialize(Buffer.from('{"a":')), 'DECODE_FAILED');
    expectCode(() => serdes.json.deserialize(Buffer.from([0xff])), 'DECODE_FAILED');
    for (const name of ['int32', 'sortableInt32'] as const) expectCode(() => serdes[name].deserialize(Buffer.alloc(3)), 'DECODE_FAILED');
    for (const name of ['int64', 'sortableInt64'] as const) expectCode(() => serdes[name].deserialize(Buffer.alloc(9)), 'DECODE_FAILED');
    for (const name of ['float64', 'sortableFloat64'] as const) expectCode(() => serdes[name].deserialize(Buffer.alloc(0)), 'DECODE_FAILED');
    expectCode(() => serdes.bytes.deserialize('x' as unknown as Buffer), 'DECODE_FAILED');
  });

  it('values that cannot be encoded raise ENCODE_FAILED', () => {
    for (const name of ['int32', 'sortableInt32'] as const) {
      for (const bad of [2 ** 31, -(2 ** 31) - 1, 1.5, NaN, Infinity, '1', 1n]) expectCode(() => serdes[name].serialize(bad as unknown as number), 'ENCODE_FAILED');
    }
    for (const name of ['int64', 'sortableInt64'] as const) {
      // Numbers too: an int64 is a bigint (see int64Serde), 3 must be written 3n.
      for (const bad of [1n << 63n, -(1n << 63n) - 1n, 3, 1.5, '3', null]) expectCode(() => serdes[name].serialize(bad as unknown as bigint), 'ENCODE_FAILED');
    }
    for (const name of ['float64', 'sortableFloat64'] as const) {
      for (const bad of ['1', 1n, null]) expectCode(() => serdes[name].serialize(bad as unknown as number), 'ENCODE_FAILED');
    }
    expectCode(() => serdes.json.serialize(undefined), 'ENCODE_FAILED');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expectCode(() => serdes.json.serialize(cyclic), 'ENCODE_FAILED');
    expectCode(() => serdes.string.serialize(3 as unknown as string), 'ENCODE_FAILED');
  });

  it('serdeByName finds every serde by its stable name and rejects unknown names', () => {
    for (const [name, serde] of Object.entries(serdes)) {
      expect(serdeByName(name)).toBe(serde);
      expect(serde.name).toBe(name);
    }
    expect(Object.keys(serdes)).toEqual(['string', 'json', 'int32', 'int64', 'float64', 'sortableInt32', 'sortableInt64', 'sortableFloat64', 'bytes']);
    expectCode(() => serdeByName('int16'), 'INVALID_CONFIG');
    expectCode(() => serdeByName('toString'), 'INVALID_CONFIG');
  });
});
