/**
 * One Kafka record (the v2 record format, "Record" in KIP-98) encoded in a single exact-size
 * buffer, for kafkajs' producer (installed by kafkajs-patches.ts, patch 5).
 *
 * kafkajs 2.2.4 encodes each record through a fresh `Encoder` (a zero-filled 512-byte buffer),
 * builds each varint as a temporary array and Buffer, computes the timestamp delta's varlong size
 * with its 64-bit `Long` emulation, and gives every header an Encoder of its own; in
 * bench:processing's CPU profile that was the largest kafkajs item after the request encoding, and
 * a sixth of the time went to garbage collection. Here the record's size is computed first with
 * plain number arithmetic, one `Buffer.allocUnsafe` of that size is filled byte by byte, and the
 * result is handed back inside an Encoder, which is what RecordBatch expects.
 *
 * The bytes are the same as kafkajs' (a property test compares both on random records). Inputs
 * outside the common shape (a `Long` or unsafe-integer timestamp delta, keys or values that are
 * neither Buffer, string nor null, non-string header keys or null header values) take the general
 * path, which writes through kafkajs' Encoder field by field as kafkajs does.
 *
 * Layout: length varint | attributes int8 (0) | timestampDelta varlong | offsetDelta varint |
 * key varint-bytes | value varint-bytes | header count varint | headers (key varint-string,
 * value varint-bytes). Varints are zigzag-encoded base-128, least significant group first.
 */
import { createRequire } from 'node:module';
import { Buffer } from 'node:buffer';

interface EncoderLike {
  buf: Buffer;
  offset: number;
  writeVarInt(value: number): EncoderLike;
  writeInt8(value: number): EncoderLike;
  writeVarLong(value: unknown): EncoderLike;
  writeVarIntBytes(value: unknown): EncoderLike;
  writeVarIntString(value: unknown): EncoderLike;
  writeEncoder(value: EncoderLike): EncoderLike;
  readonly buffer: Buffer;
}
type EncoderClass = (new (initialSize?: number) => EncoderLike) & { sizeOfVarLong(value: unknown): number };

const require = createRequire(import.meta.url);
const Encoder = require('kafkajs/src/protocol/encoder') as EncoderClass;

export interface RecordInput {
  readonly offsetDelta?: number;
  readonly timestampDelta?: unknown;
  readonly key?: unknown;
  readonly value?: unknown;
  readonly headers?: Readonly<Record<string, unknown>>;
}

/** Largest magnitude whose zigzag form (2|n| or 2|n|-1) is still an exact double. */
const MAX_FAST_TIMESTAMP_DELTA = 2 ** 51;

/** Zigzag: 0, -1, 1, -2 … → 0, 1, 2, 3 …; exact for |value| ≤ 2^51. */
function zigzag(value: number): number {
  return value >= 0 ? value * 2 : -value * 2 - 1;
}

/** Bytes of an unsigned base-128 varint (value < 2^53). */
function sizeOfUnsignedVarint(value: number): number {
  let bytes = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    bytes += 1;
  }
  return bytes;
}

function writeUnsignedVarint(buffer: Buffer, offset: number, value: number): number {
  while (value >= 128) {
    buffer[offset++] = (value % 128) | 0x80;
    value = Math.floor(value / 128);
  }
  buffer[offset++] = value;
  return offset;
}

type Bytes = Buffer | string | null | undefined;

function isBytes(value: unknown): value is Bytes {
  return value === null || value === undefined || typeof value === 'string' || Buffer.isBuffer(value);
}

/** Byte length of the payload of varint-bytes (-1 for null). */
function payloadLength(value: Bytes): number {
  if (value === null || value === undefined) return -1;
  return typeof value === 'string' ? Buffer.byteLength(value, 'utf8') : value.length;
}

function sizeOfVarintBytes(length: number): number {
  return length < 0 ? 1 : sizeOfUnsignedVarint(zigzag(length)) + length;
}

function writeVarintBytes(buffer: Buffer, offset: number, value: Bytes, length: number): number {
  offset = writeUnsignedVarint(buffer, offset, zigzag(length));
  if (length <= 0 || value === null || value === undefined) return offset;
  if (typeof value === 'string') return offset + buffer.write(value, offset, length, 'utf8');
  return offset + value.copy(buffer, offset);
}

interface Header {
  readonly key: string;
  readonly value: unknown;
}

/** The headers flattened as kafkajs flattens them (an array value = one header per element). */
function flattenHeaders(headers: Readonly<Record<string, unknown>>): Header[] {
  const flat: Header[] = [];
  for (const key of Object.keys(headers)) {
    const value = headers[key];
    if (Array.isArray(value)) for (const one of value as unknown[]) flat.push({ key, value: one });
    else flat.push({ key, value });
  }
  return flat;
}

function encodeGeneral(record: RecordInput, headers: readonly Header[]): EncoderLike {
  const body = new Encoder()
    .writeInt8(0)
    .writeVarLong(record.timestampDelta ?? 0)
    .writeVarInt(record.offsetDelta ?? 0)
    .writeVarIntBytes(record.key)
    .writeVarIntBytes(record.value)
    .writeVarInt(headers.length);
  for (const header of headers) body.writeVarIntString(header.key).writeVarIntBytes(header.value);
  return new Encoder().writeVarInt(body.offset).writeEncoder(body);
}

/** Encodes one record as kafkajs' `recordBatch/record/v0` does, returning an Encoder holding exactly its bytes. */
export function encodeRecord(record: RecordInput): EncoderLike {
  const { offsetDelta = 0, timestampDelta = 0, key, value, headers = {} } = record;
  const flat = flattenHeaders(headers);
  if (
    !flat.every((header) => typeof header.value === 'string' || Buffer.isBuffer(header.value)) ||
    typeof timestampDelta !== 'number' ||
    !Number.isSafeInteger(timestampDelta) ||
    Math.abs(timestampDelta) > MAX_FAST_TIMESTAMP_DELTA ||
    !Number.isSafeInteger(offsetDelta) ||
    !isBytes(key) ||
    !isBytes(value)
  ) {
    return encodeGeneral(record, flat);
  }

  const keyLength = payloadLength(key);
  const valueLength = payloadLength(value);
  const headerLengths: number[] = [];
  let headersSize = sizeOfUnsignedVarint(zigzag(flat.length));
  for (const header of flat) {
    const keyBytes = Buffer.byteLength(header.key, 'utf8');
    const valueBytes = payloadLength(header.value as Buffer | string);
    headerLengths.push(keyBytes, valueBytes);
    headersSize += sizeOfVarintBytes(keyBytes) + sizeOfVarintBytes(valueBytes);
  }
  const timestamp = zigzag(timestampDelta);
  const offsetZigzag = zigzag(offsetDelta);
  const bodySize =
    1 + sizeOfUnsignedVarint(timestamp) + sizeOfUnsignedVarint(offsetZigzag) + sizeOfVarintBytes(keyLength) + sizeOfVarintBytes(valueLength) + headersSize;
  const lengthZigzag = zigzag(bodySize);
  const total = sizeOfUnsignedVarint(lengthZigzag) + bodySize;

  const buffer = Buffer.allocUnsafe(total);
  let at = writeUnsignedVarint(buffer, 0, lengthZigzag);
  buffer[at++] = 0; // attributes: none are used by records
  at = writeUnsignedVarint(buffer, at, timestamp);
  at = writeUnsignedVarint(buffer, at, offsetZigzag);
  at = writeVarintBytes(buffer, at, key, keyLength);
  at = writeVarintBytes(buffer, at, value, valueLength);
  at = writeUnsignedVarint(buffer, at, zigzag(flat.length));
  for (let i = 0; i < flat.length; i++) {
    const header = flat[i]!;
    at = writeVarintBytes(buffer, at, header.key, headerLengths[2 * i]!);
    at = writeVarintBytes(buffer, at, header.value as Buffer | string, headerLengths[2 * i + 1]!);
  }
  if (at !== total) throw new Error(`iqgate record encoder wrote ${at} bytes of ${total}`); // a bug here, never input

  const encoder = new Encoder(0);
  encoder.buf = buffer;
  encoder.offset = total;
  return encoder;
}
