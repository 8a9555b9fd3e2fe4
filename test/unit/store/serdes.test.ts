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

describe('serdes', () => {
  it('int32 round-trips and its byte order is numeric order, negatives included', () => {
    fc.assert(
      fc.property(fc.integer(), fc.integer(), (x, y) => {
        const [a, b] = [serdes.int32.serialize(x), serdes.int32.serialize(y)];
        expect(serdes.int32.deserialize(a)).toBe(x);
        expect(Math.sign(byteOrder(a, b))).toBe(Math.sign(x - y));
      }),
    );
    expect(serdes.int32.deserialize(serdes.int32.serialize(-0x80000000))).toBe(-0x80000000);
  });

  it('int64 round-trips and its byte order is numeric order, negatives included', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }), fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }), (x, y) => {
        const [a, b] = [serdes.int64.serialize(x), serdes.int64.serialize(y)];
        expect(serdes.int64.deserialize(a)).toBe(x);
        expect(Math.sign(byteOrder(a, b))).toBe(x < y ? -1 : x > y ? 1 : 0);
      }),
    );
  });

  it('float64 round-trips and its byte order is numeric order, infinities included', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }), fc.double({ noNaN: true }), (x, y) => {
        const [a, b] = [serdes.float64.serialize(x), serdes.float64.serialize(y)];
        expect(serdes.float64.deserialize(a)).toBe(x === 0 ? 0 : x);
        expect(Math.sign(byteOrder(a, b))).toBe(x < y ? -1 : x > y ? 1 : 0);
      }),
    );
    expect(serdes.float64.serialize(-0).equals(serdes.float64.serialize(0))).toBe(true);
    expect(Number.isNaN(serdes.float64.deserialize(serdes.float64.serialize(NaN)))).toBe(true);
    expect(byteOrder(serdes.float64.serialize(NaN), serdes.float64.serialize(Infinity))).toBe(1);
  });

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

  it('bytes that do not decode raise DECODE_FAILED', () => {
    expectCode(() => serdes.string.deserialize(Buffer.from([0xc3, 0x28])), 'DECODE_FAILED');
    expectCode(() => serdes.json.deserialize(Buffer.from('{"a":')), 'DECODE_FAILED');
    expectCode(() => serdes.json.deserialize(Buffer.from([0xff])), 'DECODE_FAILED');
    expectCode(() => serdes.int32.deserialize(Buffer.alloc(3)), 'DECODE_FAILED');
    expectCode(() => serdes.int64.deserialize(Buffer.alloc(9)), 'DECODE_FAILED');
    expectCode(() => serdes.float64.deserialize(Buffer.alloc(0)), 'DECODE_FAILED');
    expectCode(() => serdes.bytes.deserialize('x' as unknown as Buffer), 'DECODE_FAILED');
  });

  it('values that cannot be encoded raise ENCODE_FAILED', () => {
    expectCode(() => serdes.int32.serialize(2 ** 31), 'ENCODE_FAILED');
    expectCode(() => serdes.int32.serialize(1.5), 'ENCODE_FAILED');
    expectCode(() => serdes.int64.serialize(1n << 63n), 'ENCODE_FAILED');
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
    expectCode(() => serdeByName('int16'), 'INVALID_CONFIG');
    expectCode(() => serdeByName('toString'), 'INVALID_CONFIG');
  });
});
