/**
 * Serdes for keys and values.
 *
 * The numeric serdes `int32`, `int64` and `float64` write exactly what Kafka's
 * IntegerSerializer, LongSerializer and DoubleSerializer write, so Java, kcat and every other
 * Kafka client read iqgate's topics. Stores order keys by their serialized bytes (memcmp,
 * shorter first), and plain two's complement sorts -1 after every positive number: keys that
 * are read by numeric range use `sortableInt32`, `sortableInt64` or `sortableFloat64`, whose
 * byte order is numeric order (and which no other Kafka client decodes).
 *
 * `deserialize` throws IqgateError DECODE_FAILED on bytes it cannot decode and
 * `serialize` throws ENCODE_FAILED on values it cannot encode; neither touches any store.
 */
import { IqgateError } from '../errors.js';
import type { Serde } from './types.js';
import { Buffer } from 'node:buffer';
import { TextDecoder } from 'node:util';

function decodeFailed(serde: string, reason: string, cause?: unknown): IqgateError {
  return new IqgateError('DECODE_FAILED', `${serde} serde cannot decode: ${reason}`, {
    details: { serde },
    ...(cause === undefined ? {} : { cause }),
  });
}

function encodeFailed(serde: string, reason: string, cause?: unknown): IqgateError {
  return new IqgateError('ENCODE_FAILED', `${serde} serde cannot encode: ${reason}`, {
    details: { serde },
    ...(cause === undefined ? {} : { cause }),
  });
}

function checkLength(serde: string, bytes: Buffer, length: number): void {
  if (!Buffer.isBuffer(bytes)) throw decodeFailed(serde, 'not a Buffer');
  if (bytes.length !== length) throw decodeFailed(serde, `expected ${length} bytes, got ${bytes.length}`);
}

// 32-bit big-endian reads and writes by hand: Buffer#readInt32BE and friends validate their
// offset through a wrapped validator on every call (~10–25 ns each, measured), more than the
// read itself; checkLength has already bounded these.
function int32At(bytes: Buffer, at: number): number {
  return (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!;
}

function uint32At(bytes: Buffer, at: number): number {
  return int32At(bytes, at) >>> 0;
}

/** Writes the low 32 bits of `value` (an int32 or a uint32) at `at`. */
function put32(bytes: Buffer, at: number, value: number): void {
  bytes[at] = value >>> 24;
  bytes[at + 1] = value >>> 16;
  bytes[at + 2] = value >>> 8;
  bytes[at + 3] = value;
}

// Fatal decoding: Buffer#toString('utf8') silently replaces malformed sequences with U+FFFD,
// which would turn corrupt bytes into plausible data.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Up to this many chars (a word, a short key), ASCII text is encoded in JavaScript. */
const SHORT_TEXT = 24;
/**
 * Up to this many bytes, ASCII text is decoded in JavaScript: V8 copies concatenations shorter
 * than 13 chars into a flat string (ConsString::kMinLength), longer ones would be built as a
 * chain of cons strings, flattened again at their first hash.
 */
const SHORT_DECODE = 12;

/**
 * `bytes` as a string when they are at most SHORT_DECODE bytes of ASCII, else null. A native
 * TextDecoder call costs ~120 ns whatever the length; a word's few bytes take ~85 ns here
 * (measured), and ASCII is always well-formed UTF-8, so nothing the fatal decoder would refuse
 * gets through.
 */
function shortAscii(bytes: Buffer): string | null {
  const length = bytes.length;
  if (length > SHORT_DECODE) return null;
  let text = '';
  for (let i = 0; i < length; i++) {
    const byte = bytes[i]!;
    if (byte >= 0x80) return null;
    text += String.fromCharCode(byte);
  }
  return text;
}

/**
 * Writes `value` at `offset` char by char when it is all ASCII (the caller checked its length
 * against SHORT_TEXT and the room); false at its first non-ASCII char, with the ASCII before it
 * written. Buffer.from(value, 'utf8') and Buffer#utf8Write are native calls (~85 ns against
 * ~20 ns for a word, measured).
 */
function writeShortAscii(value: string, target: Buffer, offset: number): boolean {
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0x80) return false;
    target[offset + i] = unit;
  }
  return true;
}

function decodeUtf8(serde: string, bytes: Buffer): string {
  if (!Buffer.isBuffer(bytes)) throw decodeFailed(serde, 'not a Buffer');
  const ascii = shortAscii(bytes);
  if (ascii !== null) return ascii;
  try {
    return utf8.decode(bytes);
  } catch (error) {
    throw decodeFailed(serde, 'malformed UTF-8', error);
  }
}

/** UTF-8 text. Byte order is code-point order (not JS UTF-16 `<` order for astral characters). */
export const stringSerde: Serde<string> = {
  name: 'string',
  serialize(value) {
    if (typeof value !== 'string') throw encodeFailed('string', `expected a string, got ${typeof value}`);
    if (value.length <= SHORT_TEXT) {
      const bytes = Buffer.allocUnsafe(value.length);
      if (writeShortAscii(value, bytes, 0)) return bytes;
    }
    return Buffer.from(value, 'utf8');
  },
  encodeInto(value, target, offset) {
    if (typeof value !== 'string') throw encodeFailed('string', `expected a string, got ${typeof value}`);
    const room = target.length - offset;
    if (value.length <= SHORT_TEXT && value.length <= room && writeShortAscii(value, target, offset)) return value.length;
    // A UTF-16 unit takes at most 3 UTF-8 bytes: the exact length is counted only near the end.
    if (value.length * 3 > room && Buffer.byteLength(value, 'utf8') > room) return -1;
    // Buffer#utf8Write is what write(value, offset, 'utf8') ends in, minus its argument handling.
    return (target as unknown as Utf8Writer).utf8Write(value, offset, room);
  },
  deserialize: (bytes) => decodeUtf8('string', bytes),
};

interface Utf8Writer {
  utf8Write(value: string, offset: number, length: number): number;
}

/** JSON text as UTF-8. Key order follows the JSON text, so JSON keys rarely suit range queries. */
export const jsonSerde: Serde<unknown> = {
  name: 'json',
  serialize(value) {
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (error) {
      throw encodeFailed('json', 'JSON.stringify failed', error);
    }
    if (text === undefined) throw encodeFailed('json', `${typeof value} has no JSON form`);
    return Buffer.from(text, 'utf8');
  },
  deserialize(bytes) {
    const text = decodeUtf8('json', bytes);
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw decodeFailed('json', 'malformed JSON', error);
    }
  },
};

// Kafka-compatible numeric serdes: the bytes Kafka's own serializers write, so any Kafka
// client reads iqgate's topics (and iqgate reads theirs). Their byte order is NOT numeric order
// (-1 = ff ff ff ff sorts after every positive number): keys that need numeric ranges use the
// sortable serdes below.

/** Kafka's IntegerSerializer/IntegerDeserializer: 4 bytes, big-endian two's complement. */
export const int32Serde: Serde<number> = {
  name: 'int32',
  serialize(value) {
    if (!isInt32(value)) throw encodeFailed('int32', `${describe(value)} is not a 32-bit integer`);
    const bytes = Buffer.allocUnsafe(4);
    put32(bytes, 0, value);
    return bytes;
  },
  deserialize(bytes) {
    checkLength('int32', bytes, 4);
    return int32At(bytes, 0);
  },
};

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const SAFE_MIN = BigInt(Number.MIN_SAFE_INTEGER);
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);
const TWO_32 = 2 ** 32;

// A long's 8 big-endian bytes. Counts and sums almost always fit a double exactly (|v| < 2^53):
// then the two 32-bit halves are computed as numbers, where Buffer#writeBigInt64BE and
// readBigInt64BE shift and mask bigints (several bigint allocations per call, measurable on a
// count's read-modify-write of every record).
function writeInt64(value: bigint): Buffer {
  const bytes = Buffer.allocUnsafe(8);
  if (value >= SAFE_MIN && value <= SAFE_MAX) {
    const n = Number(value);
    const high = Math.floor(n / TWO_32);
    put32(bytes, 0, high);
    put32(bytes, 4, n - high * TWO_32);
  } else {
    bytes.writeBigInt64BE(value, 0);
  }
  return bytes;
}

/** The long whose high 32 bits (signed) and low 32 bits (unsigned) are given. */
function int64Of(high: number, low: number): bigint {
  // |high| < 2^21: the long is a double exactly.
  if (high >= -0x200000 && high < 0x200000) return BigInt(high * TWO_32 + low);
  return (BigInt(high) << 32n) | BigInt(low);
}

/**
 * Kafka's LongSerializer/LongDeserializer: 8 bytes, big-endian two's complement. Values are
 * bigints, not numbers: a Java long goes up to 2^63 - 1 and a JS number holds integers exactly
 * only up to 2^53 - 1, so a number would silently round (or refuse to decode) longs that any
 * other Kafka client may write — bigint is the JS type of every long. Numbers are refused
 * (ENCODE_FAILED) rather than converted, so that a value round-trips to what was written.
 */
export const int64Serde: Serde<bigint> = {
  name: 'int64',
  serialize(value) {
    checkInt64('int64', value);
    return writeInt64(value);
  },
  deserialize(bytes) {
    checkLength('int64', bytes, 8);
    return int64Of(int32At(bytes, 0), uint32At(bytes, 4));
  },
};

/**
 * Kafka's DoubleSerializer/DoubleDeserializer: 8 bytes of IEEE 754, big-endian. -0 stays -0;
 * every NaN is written as 7f f8 00 00 00 00 00 00, as Java's Double.doubleToLongBits does.
 */
export const float64Serde: Serde<number> = {
  name: 'float64',
  serialize(value) {
    if (typeof value !== 'number') throw encodeFailed('float64', `expected a number, got ${typeof value}`);
    return writeDouble(value);
  },
  deserialize(bytes) {
    checkLength('float64', bytes, 8);
    return bytes.readDoubleBE(0);
  },
};

// Sortable (order-preserving) numeric serdes, for keys read by numeric range: stores order keys
// by their bytes, and these flip the sign bit (floats: every bit of a negative) so that byte
// order is numeric order, negatives included, as HBase's OrderedBytes fixed-width encodings do.
// Not what Kafka's serializers write: use them for store keys and for topics only iqgate reads.

/** 4 bytes, big-endian two's complement with the sign bit flipped: byte order = numeric order. */
export const sortableInt32Serde: Serde<number> = {
  name: 'sortableInt32',
  serialize(value) {
    if (!isInt32(value)) throw encodeFailed('sortableInt32', `${describe(value)} is not a 32-bit integer`);
    const bytes = Buffer.allocUnsafe(4);
    put32(bytes, 0, value ^ 0x80000000);
    return bytes;
  },
  deserialize(bytes) {
    checkLength('sortableInt32', bytes, 4);
    return int32At(bytes, 0) ^ 0x80000000;
  },
};

/** 8 bytes, big-endian two's complement with the sign bit flipped; values are bigints (see int64). */
export const sortableInt64Serde: Serde<bigint> = {
  name: 'sortableInt64',
  serialize(value) {
    checkInt64('sortableInt64', value);
    const bytes = writeInt64(value);
    bytes[0] = bytes[0]! ^ 0x80;
    return bytes;
  },
  deserialize(bytes) {
    checkLength('sortableInt64', bytes, 8);
    return int64Of(int32At(bytes, 0) ^ 0x80000000, uint32At(bytes, 4));
  },
};

/**
 * 8 bytes of IEEE 754 big-endian, negatives with every bit flipped and positives with the
 * sign bit flipped, so byte order = numeric order. -0 is stored as +0 (they are the same key
 * to JS `===`); NaN is stored canonically and sorts above +Infinity.
 */
export const sortableFloat64Serde: Serde<number> = {
  name: 'sortableFloat64',
  serialize(value) {
    if (typeof value !== 'number') throw encodeFailed('sortableFloat64', `expected a number, got ${typeof value}`);
    const bytes = writeDouble(value === 0 ? 0 : value);
    if (bytes[0]! & 0x80) {
      for (let i = 0; i < 8; i++) bytes[i] = bytes[i]! ^ 0xff;
    } else {
      bytes[0] = bytes[0]! ^ 0x80;
    }
    return bytes;
  },
  deserialize(bytes) {
    checkLength('sortableFloat64', bytes, 8);
    const copy = Buffer.from(bytes);
    if (copy[0]! & 0x80) {
      copy[0] = copy[0]! ^ 0x80;
    } else {
      for (let i = 0; i < 8; i++) copy[i] = copy[i]! ^ 0xff;
    }
    return copy.readDoubleBE(0);
  },
};

const CANONICAL_NAN = Buffer.from([0x7f, 0xf8, 0, 0, 0, 0, 0, 0]);

/** IEEE 754 big-endian, NaN canonical (V8 may keep a NaN's payload bits; Java's doubleToLongBits does not). */
function writeDouble(value: number): Buffer {
  if (Number.isNaN(value)) return Buffer.from(CANONICAL_NAN);
  const bytes = Buffer.allocUnsafe(8);
  bytes.writeDoubleBE(value, 0);
  return bytes;
}

function isInt32(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff;
}

function checkInt64(serde: string, value: unknown): asserts value is bigint {
  if (typeof value === 'number' && Number.isInteger(value)) {
    throw encodeFailed(serde, `expected a bigint, got the number ${value} (write ${value}n or BigInt(${value}))`);
  }
  if (typeof value !== 'bigint') throw encodeFailed(serde, `${describe(value)} is not a 64-bit bigint`);
  if (value < INT64_MIN || value > INT64_MAX) throw encodeFailed(serde, `${value} is out of the 64-bit range`);
}

function describe(value: unknown): string {
  return typeof value === 'number' || typeof value === 'bigint' ? String(value) : typeof value;
}

/** Raw bytes, unchanged (the Buffer itself, not a copy). */
export const bytesSerde: Serde<Buffer> = {
  name: 'bytes',
  serialize(value) {
    if (!Buffer.isBuffer(value)) throw encodeFailed('bytes', 'expected a Buffer');
    return value;
  },
  deserialize(bytes) {
    if (!Buffer.isBuffer(bytes)) throw decodeFailed('bytes', 'not a Buffer');
    return bytes;
  },
};

export const serdes = {
  string: stringSerde,
  json: jsonSerde,
  int32: int32Serde,
  int64: int64Serde,
  float64: float64Serde,
  sortableInt32: sortableInt32Serde,
  sortableInt64: sortableInt64Serde,
  sortableFloat64: sortableFloat64Serde,
  bytes: bytesSerde,
} as const;

export type SerdeName = keyof typeof serdes;

/**
 * Serdes for which serialize(deserialize(bytes)) is `bytes` itself for every input they accept:
 * fatal UTF-8 (no replacement, a BOM kept) and fixed-width integers. Not the floats (NaN is made
 * canonical, sortable -0 becomes +0), JSON (spacing, key order) or any serde of a user's.
 */
const EXACT_ROUND_TRIP: ReadonlySet<Serde<unknown>> = new Set<Serde<unknown>>([
  stringSerde, int32Serde, int64Serde, sortableInt32Serde, sortableInt64Serde,
] as Array<Serde<unknown>>);

export function roundTripsExactly(serde: Serde<unknown>): boolean {
  return EXACT_ROUND_TRIP.has(serde);
}

export function isSerdeName(name: string): name is SerdeName {
  return Object.prototype.hasOwnProperty.call(serdes, name);
}

/** The serde with that stable name; IqgateError INVALID_CONFIG for an unknown name. */
export function serdeByName<N extends SerdeName>(name: N): (typeof serdes)[N];
export function serdeByName(name: string): Serde<unknown>;
export function serdeByName(name: string): Serde<unknown> {
  if (!isSerdeName(name)) {
    throw new IqgateError('INVALID_CONFIG', `unknown serde "${name}"; known: ${Object.keys(serdes).join(', ')}`, {
      details: { serde: name },
    });
  }
  return serdes[name] as Serde<unknown>;
}
