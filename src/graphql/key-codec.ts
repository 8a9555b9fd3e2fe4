/**
 * The GraphQL form of keys and values, per serde (see schema.graphql): the edge converts a
 * `Key` argument to bytes once, with the store's own serde, and the inside only sees bytes.
 */
import { IqgateError, isIqgateError } from '../errors.js';
import type { Bytes, Serde } from '../store/types.js';
import { Buffer } from 'node:buffer';

const INT64_PATTERN = /^-?\d{1,19}$/;
const BASE64_PATTERN = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A `Key` argument → key bytes; INVALID_KEY when it does not fit the serde. */
export function encodeKey(serde: Serde<unknown>, input: unknown, argument = 'key'): Bytes {
  const typed = toTyped(serde.name, input, argument);
  try {
    return serde.serialize(typed);
  } catch (error) {
    if (isIqgateError(error) || error instanceof TypeError || error instanceof RangeError) {
      throw new IqgateError('INVALID_KEY', `${argument}: ${error.message}`, { cause: error, details: { serde: serde.name } });
    }
    throw error;
  }
}

function toTyped(serdeName: string, input: unknown, argument: string): unknown {
  const invalid = (expected: string): IqgateError =>
    new IqgateError('INVALID_KEY', `${argument}: the store's ${serdeName} key serde expects ${expected}, got ${JSON.stringify(input) ?? typeof input}.`, {
      details: { serde: serdeName },
    });
  switch (serdeName) {
    case 'string':
      if (typeof input !== 'string') throw invalid('a String');
      return input;
    case 'int32':
    case 'sortableInt32':
      if (typeof input !== 'number' || !Number.isInteger(input) || input < -0x80000000 || input > 0x7fffffff) throw invalid('a 32-bit Int');
      return input;
    case 'int64':
    case 'sortableInt64':
      if (typeof input === 'number' && Number.isSafeInteger(input)) return BigInt(input);
      if (typeof input !== 'string' || !INT64_PATTERN.test(input)) throw invalid('a decimal integer String');
      return BigInt(input);
    case 'float64':
    case 'sortableFloat64':
      if (typeof input !== 'number' || !Number.isFinite(input)) throw invalid('a Float');
      return input;
    case 'bytes':
      if (typeof input !== 'string' || !BASE64_PATTERN.test(input)) throw invalid('a base64 String');
      return Buffer.from(input, 'base64');
    default:
      // json and serdes we know nothing special about take the value as given.
      return input;
  }
}

/** Decoded key or value → its GraphQL/JSON form (int64 as decimal text, bytes as base64). */
export function toGraphQLValue(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (Buffer.isBuffer(value)) return value.toString('base64');
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  return value;
}

/** Bytes → GraphQL form through the serde; DECODE_FAILED surfaces on the field that needed it. */
export function decodeForGraphQL(serde: Serde<unknown>, bytes: Bytes): unknown {
  return toGraphQLValue(serde.deserialize(bytes));
}
