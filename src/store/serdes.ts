/**
 * Serdes for keys and values. Stores order keys by their serialized bytes (memcmp, shorter
 * first), so the numeric serdes are order-preserving: byte order equals numeric order,
 * negatives included. Kafka's built-in IntegerSerde/LongSerde write plain two's complement,
 * which sorts -1 after every positive number (a known range-query trap); these flip the sign
 * bit instead (encoders from LEVEL-NOTES §6). They are therefore NOT wire-compatible with
 * Kafka's integer serdes.
 *
 * `deserialize` throws IqgateError DECODE_FAILED on bytes it cannot decode and
 * `serialize` throws ENCODE_FAILED on values it cannot encode; neither touches any store.
 */
import { IqgateError } from '../errors.js';
import type { Serde } from './types.js';

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

// Fatal decoding: Buffer#toString('utf8') silently replaces malformed sequences with U+FFFD,
// which would turn corrupt bytes into plausible data.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decodeUtf8(serde: string, bytes: Buffer): string {
  if (!Buffer.isBuffer(bytes)) throw decodeFailed(serde, 'not a Buffer');
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
    return Buffer.from(value, 'utf8');
  },
  deserialize: (bytes) => decodeUtf8('string', bytes),
};

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

/** 4 bytes, big-endian two's complement with the sign bit flipped: byte order = numeric order. */
export const int32Serde: Serde<number> = {
  name: 'int32',
  serialize(value) {
    if (!Number.isInteger(value) || value < -0x80000000 || value > 0x7fffffff) {
      throw encodeFailed('int32', `${String(value)} is not a 32-bit integer`);
    }
    const bytes = Buffer.allocUnsafe(4);
    bytes.writeUInt32BE((value ^ 0x80000000) >>> 0, 0);
    return bytes;
  },
  deserialize(bytes) {
    checkLength('int32', bytes, 4);
    return (bytes.readUInt32BE(0) ^ 0x80000000) | 0;
  },
};

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

/** 8 bytes, big-endian two's complement with the sign bit flipped; values are bigints. */
export const int64Serde: Serde<bigint> = {
  name: 'int64',
  serialize(value) {
    if (typeof value !== 'bigint' || value < INT64_MIN || value > INT64_MAX) {
      throw encodeFailed('int64', `${String(value)} is not a 64-bit bigint`);
    }
    const bytes = Buffer.allocUnsafe(8);
    bytes.writeBigInt64BE(value, 0);
    bytes[0] = bytes[0]! ^ 0x80;
    return bytes;
  },
  deserialize(bytes) {
    checkLength('int64', bytes, 8);
    const copy = Buffer.from(bytes);
    copy[0] = copy[0]! ^ 0x80;
    return copy.readBigInt64BE(0);
  },
};

/**
 * 8 bytes of IEEE 754 big-endian, negatives with every bit flipped and positives with the
 * sign bit flipped, so byte order = numeric order. -0 is stored as +0 (they are the same key
 * to JS `===`); NaN is stored canonically and sorts above +Infinity.
 */
export const float64Serde: Serde<number> = {
  name: 'float64',
  serialize(value) {
    if (typeof value !== 'number') throw encodeFailed('float64', `expected a number, got ${typeof value}`);
    const bytes = Buffer.allocUnsafe(8);
    bytes.writeDoubleBE(value === 0 ? 0 : value, 0);
    if (bytes[0]! & 0x80) {
      for (let i = 0; i < 8; i++) bytes[i] = bytes[i]! ^ 0xff;
    } else {
      bytes[0] = bytes[0]! ^ 0x80;
    }
    return bytes;
  },
  deserialize(bytes) {
    checkLength('float64', bytes, 8);
    const copy = Buffer.from(bytes);
    if (copy[0]! & 0x80) {
      copy[0] = copy[0]! ^ 0x80;
    } else {
      for (let i = 0; i < 8; i++) copy[i] = copy[i]! ^ 0xff;
    }
    return copy.readDoubleBE(0);
  },
};

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
  bytes: bytesSerde,
} as const;

export type SerdeName = keyof typeof serdes;

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
