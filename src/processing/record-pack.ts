/**
 * Packed repartition records (docs/engine.md, "Packed repartition topics"). A repartition topic
 * is internal: only the sub-topology downstream reads it. So the task upstream may write many
 * of its records as one Kafka record — a pack — and the task downstream unpacks it. On the
 * librdkafka binding every consumed Kafka record costs ~5 µs of the JavaScript thread (an object
 * and two Buffer copies built in C++), whatever its size; a pack of 128 words costs about the
 * same as one word. Producing is per Kafka record too.
 *
 * A pack holds the records of one partition of one repartition topic, in the order they were
 * emitted; the partition is the one Kafka's default partitioner gives each key (murmur2), so a
 * key lands where it would have unpacked. The pack's header `iqgate-pack` says how its value is
 * laid out (version 1, big-endian):
 *
 *   u32 count, then per entry:
 *     i32 key length (-1: null), key bytes, i32 value length (-1: null), value bytes,
 *     f64 timestamp (ms), u16 header count, per header: u16 name length, name (UTF-8),
 *     u32 value length, value (UTF-8)
 *
 * Every entry of a pack has the pack's offset: a task processes a pack as one record (whole,
 * or not at all), so a commit never falls inside one.
 */
import { partitionForKey } from '../murmur2.js';
import type { Headers, InputRecord, OutputRecord } from './ports.js';

export const PACK_HEADER = 'iqgate-pack';
const PACK_VERSION = '1';
const PACK_HEADERS: Headers = { [PACK_HEADER]: PACK_VERSION };
const NO_HEADERS: Headers = Object.freeze({});

/** A pack closes at this many entries or bytes, whichever comes first. */
export const PACK_MAX_ENTRIES = 128;
export const PACK_MAX_BYTES = 32 * 1024;

/** One entry of a pack, as the task downstream processes it: `entry` is its index in the pack. */
export interface PackedEntry extends InputRecord {
  readonly entry: number;
}

export class PackDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PackDecodeError';
  }
}

/** The index in its pack of an entry (a PackedEntry, or a record source taken from one); undefined for a plain record. */
export function entryOf(record: object): number | undefined {
  return (record as { readonly entry?: number }).entry;
}

export function isPack(record: InputRecord): boolean {
  return record.headers[PACK_HEADER] !== undefined;
}

/** Bytes an entry takes in a pack. */
function entrySize(record: OutputRecord): number {
  let size = 4 + (record.key?.length ?? 0) + 4 + (record.value?.length ?? 0) + 8 + 2;
  if (record.headers !== undefined) {
    for (const [name, value] of Object.entries(record.headers)) size += 2 + Buffer.byteLength(name) + 4 + Buffer.byteLength(value);
  }
  return size;
}

function writeBytes(target: Buffer, at: number, bytes: Buffer | null): number {
  if (bytes === null) return target.writeInt32BE(-1, at);
  at = target.writeInt32BE(bytes.length, at);
  return at + bytes.copy(target, at);
}

function encode(entries: readonly OutputRecord[], bytes: number): Buffer {
  const out = Buffer.allocUnsafe(4 + bytes);
  let at = out.writeUInt32BE(entries.length, 0);
  for (const record of entries) {
    at = writeBytes(out, at, record.key);
    at = writeBytes(out, at, record.value);
    at = out.writeDoubleBE(record.timestamp ?? Date.now(), at);
    const headers = record.headers === undefined ? [] : Object.entries(record.headers);
    at = out.writeUInt16BE(headers.length, at);
    for (const [name, value] of headers) {
      at = out.writeUInt16BE(Buffer.byteLength(name), at);
      at += out.write(name, at);
      at = out.writeUInt32BE(Buffer.byteLength(value), at);
      at += out.write(value, at);
    }
  }
  return out;
}

interface OpenPack {
  readonly topic: string;
  readonly partition: number;
  readonly entries: OutputRecord[];
  bytes: number;
  /** The latest entry timestamp: the pack's own (what time-based retention goes by). */
  timestamp: number | undefined;
}

/**
 * Packs the records bound for `packed` topics (topic → partition count) with a non-null key, as
 * they come: write() hands back a pack as soon as one is full, so the encoding is spread over the
 * processing that emits the records instead of falling on the commit; flush() closes the rest.
 * Records of one partition keep their order, in packs of at most PACK_MAX_ENTRIES entries and
 * PACK_MAX_BYTES bytes.
 */
export class PackWriter {
  /** Open packs by topic, then partition (no per-record key string: this runs for every record). */
  private readonly open = new Map<string, Array<OpenPack | undefined>>();

  constructor(private readonly packed: ReadonlyMap<string, number>) {}

  /**
   * Takes a record and appends to `out` what is ready to go: the record itself when it is not
   * packed (another topic, a null key), else the pack it closed, if any. A record too large for a
   * pack goes out on its own, as a plain record of the same partition, after the partition's
   * open pack (so a record near Kafka's size limit is never pushed past it by a pack's few bytes).
   */
  write(record: OutputRecord, out: OutputRecord[]): void {
    const partitions = this.packed.get(record.topic);
    if (partitions === undefined || record.key === null) {
      out.push(record);
      return;
    }
    const partition = record.partition ?? partitionForKey(record.key, partitions);
    let ofTopic = this.open.get(record.topic);
    if (ofTopic === undefined) {
      ofTopic = [];
      this.open.set(record.topic, ofTopic);
    }
    const size = entrySize(record);
    let pack = ofTopic[partition];
    if (pack !== undefined && (pack.entries.length >= PACK_MAX_ENTRIES || pack.bytes + size > PACK_MAX_BYTES)) {
      out.push(this.close(pack));
      pack = undefined;
      ofTopic[partition] = undefined;
    }
    if (size > PACK_MAX_BYTES) {
      out.push({ ...record, partition });
      return;
    }
    if (pack === undefined) {
      pack = { topic: record.topic, partition, entries: [], bytes: 0, timestamp: undefined };
      ofTopic[partition] = pack;
    }
    pack.entries.push(record);
    pack.bytes += size;
    if (record.timestamp !== undefined && !(record.timestamp <= (pack.timestamp ?? -Infinity))) pack.timestamp = record.timestamp;
  }

  /** Closes every open pack. */
  flush(): OutputRecord[] {
    const packs: OutputRecord[] = [];
    for (const ofTopic of this.open.values()) {
      for (const pack of ofTopic) if (pack !== undefined) packs.push(this.close(pack));
    }
    this.open.clear();
    return packs;
  }

  /** Forgets the open packs (an abandoned transaction). */
  clear(): void {
    this.open.clear();
  }

  private close(pack: OpenPack): OutputRecord {
    const { timestamp } = pack;
    return { topic: pack.topic, partition: pack.partition, key: null, value: encode(pack.entries, pack.bytes), headers: PACK_HEADERS, ...(timestamp === undefined ? {} : { timestamp }) };
  }
}

/** The entries of a pack, each with the pack's topic, partition and offset. Throws PackDecodeError. */
export function unpackRecord(record: InputRecord): PackedEntry[] {
  const version = record.headers[PACK_HEADER];
  if (version !== PACK_VERSION) throw new PackDecodeError(`unknown pack version "${String(version)}"`);
  const buf = record.value;
  if (buf === null || buf.length < 4) throw new PackDecodeError('a pack without a value');
  const need = (at: number, n: number): void => {
    if (at + n > buf.length) throw new PackDecodeError(`a pack cut short at byte ${at} of ${buf.length}`);
  };
  // A field's length at `at` (-1: null), checked against what is left. No tuple per field: this
  // runs for every key and value of every pack.
  const lengthAt = (at: number): number => {
    need(at, 4);
    const length = buf.readInt32BE(at);
    if (length < -1) throw new PackDecodeError(`a negative length at byte ${at}`);
    if (length > 0) need(at + 4, length);
    return length;
  };
  const count = buf.readUInt32BE(0);
  const entries: PackedEntry[] = new Array<PackedEntry>(count);
  let at = 4;
  for (let entry = 0; entry < count; entry += 1) {
    const keyLength = lengthAt(at);
    const key = keyLength === -1 ? null : buf.subarray(at + 4, at + 4 + keyLength);
    at += 4 + Math.max(keyLength, 0);
    const valueLength = lengthAt(at);
    const value = valueLength === -1 ? null : buf.subarray(at + 4, at + 4 + valueLength);
    const afterValue = at + 4 + Math.max(valueLength, 0);
    need(afterValue, 10);
    const timestamp = buf.readDoubleBE(afterValue);
    const headerCount = buf.readUInt16BE(afterValue + 8);
    at = afterValue + 10;
    let headers = NO_HEADERS;
    if (headerCount > 0) {
      const h: Record<string, string> = {};
      for (let i = 0; i < headerCount; i += 1) {
        need(at, 2);
        const nameLength = buf.readUInt16BE(at);
        need(at + 2, nameLength + 4);
        const name = buf.toString('utf8', at + 2, at + 2 + nameLength);
        const headerLength = buf.readUInt32BE(at + 2 + nameLength);
        at += 6 + nameLength;
        need(at, headerLength);
        h[name] = buf.toString('utf8', at, at + headerLength);
        at += headerLength;
      }
      headers = h;
    }
    entries[entry] = { topic: record.topic, partition: record.partition, offset: record.offset, key, value, timestamp, headers, entry };
  }
  if (at !== buf.length) throw new PackDecodeError(`${buf.length - at} bytes after the last of ${count} entries`);
  return entries;
}
