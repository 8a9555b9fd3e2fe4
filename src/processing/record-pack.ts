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
import type { Serde } from '../store/types.js';
import type { Headers, InputRecord, OutputRecord } from './ports.js';
import { Buffer } from 'node:buffer';

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

function writeBytes(pack: OpenPack, at: number, bytes: Buffer | null): number {
  pack.view.setInt32(at, bytes === null ? -1 : bytes.length);
  return bytes === null ? at + 4 : at + 4 + copySmall(bytes, bytes.length, pack.buf, at + 4);
}

/** A pack's bytes: the count, then its entries; at most this many. */
const PACK_CAPACITY = 4 + PACK_MAX_BYTES;
/** A new pack's buffer; it doubles as entries need room, up to PACK_CAPACITY. */
const FIRST_PACK_BYTES = 4096;

interface OpenPack {
  readonly topic: string;
  readonly partition: number;
  /** The pack as it is written: the count (written at close) and the entries so far, up to `at`. */
  buf: Buffer;
  /**
   * `buf`'s bytes, for the lengths, timestamps and counts: DataView's accessors, unlike
   * Buffer#writeInt32BE and friends, run no argument validation (a wrapped validator per call,
   * ~10–25 ns, several per entry). Bounds are the writer's own checks.
   */
  view: DataView;
  at: number;
  count: number;
  /** The latest entry timestamp: the pack's own (what time-based retention goes by). */
  timestamp: number | undefined;
}

/**
 * Packs the records bound for `packed` topics (topic → partition count) with a non-null key, as
 * they come, each entry written into its pack's buffer at once: write() hands back a pack as soon
 * as one is full, so the encoding is spread over the processing that emits the records instead of
 * falling on the commit; flush() closes the rest. Records of one partition keep their order, in
 * packs of at most PACK_MAX_ENTRIES entries and PACK_MAX_BYTES bytes.
 *
 * writeEncoded() takes a sink's key and value before serialization: through serdes that encode
 * into a buffer (Serde.encodeInto), the key goes to a scratch buffer (its partition is its
 * murmur2) and the value straight into the pack — no Buffer per key and value, no copy at close.
 */
export class PackWriter {
  /** Open packs by topic, then partition (no per-record key string: this runs for every record). */
  private readonly open = new Map<string, Array<OpenPack | undefined>>();
  private scratch: Buffer | null = null;

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
    const size = entrySize(record);
    if (size > PACK_MAX_BYTES) {
      this.closeOpen(record.topic, partition, out);
      out.push({ ...record, partition });
      return;
    }
    let pack = this.packFor(record.topic, partition, out);
    if (pack.at + size > PACK_CAPACITY) pack = this.replace(pack, out);
    ensureRoom(pack, size);
    let at = writeBytes(pack, pack.at, record.key);
    at = writeBytes(pack, at, record.value);
    pack.at = writeEntryEnd(pack, at, record.timestamp, record.headers);
    this.added(pack, record.timestamp);
  }

  /**
   * A sink's record, not serialized yet: packed with the serdes' encodeInto when both have one
   * and the entry fits a pack (then true, with any pack it closed appended to `out`). False when
   * it is not packed this way (another topic, a null key, a serde without encodeInto, an entry
   * larger than a pack): the caller serializes it and calls write(). Throws what the serdes throw
   * (ENCODE_FAILED), with nothing written.
   */
  writeEncoded<K, V>(topic: string, key: K, value: V | null, keySerde: Serde<K>, valueSerde: Serde<V>, timestamp: number, out: OutputRecord[]): boolean {
    const partitions = this.packed.get(topic);
    if (partitions === undefined || key === null || key === undefined || keySerde.encodeInto === undefined || valueSerde.encodeInto === undefined) return false;
    const scratch = (this.scratch ??= Buffer.allocUnsafe(PACK_CAPACITY));
    const keyLength = keySerde.encodeInto(key, scratch, 0);
    if (keyLength < 0) return false;
    const partition = partitionForKey(scratch, partitions, keyLength);
    // A value that is the key itself through the same serde (a word grouped by itself) has the
    // key's bytes: copied, not encoded again.
    const valueIsKey = value !== null && (valueSerde as Serde<unknown>) === keySerde && Object.is(value, key);
    let pack = this.packFor(topic, partition, out);
    for (;;) {
      // Key length, key, value length, then the value where it goes; the entry is taken only if
      // the value and the 10 bytes after it (timestamp, header count) fit before `end`.
      const valueAt = pack.at + 4 + keyLength + 4;
      const end = pack.buf.length - 10;
      let valueLength = -1;
      if (value !== null && valueAt <= end) {
        if (!valueIsKey) valueLength = valueSerde.encodeInto(value, pack.buf, valueAt);
        else if (valueAt + keyLength <= end) valueLength = copySmall(scratch, keyLength, pack.buf, valueAt);
      }
      if (valueAt <= end && (value === null || (valueLength >= 0 && valueAt + valueLength <= end))) {
        pack.view.setInt32(pack.at, keyLength);
        copySmall(scratch, keyLength, pack.buf, pack.at + 4);
        pack.view.setInt32(pack.at + 4 + keyLength, value === null ? -1 : valueLength);
        pack.at = writeEntryEnd(pack, valueAt + Math.max(valueLength, 0), timestamp, undefined);
        this.added(pack, timestamp);
        return true;
      }
      if (pack.buf.length < PACK_CAPACITY) grow(pack, PACK_CAPACITY);
      else if (pack.count > 0) pack = this.replace(pack, out);
      else return false; // larger than a pack on its own
    }
  }

  /** Closes every open pack. */
  flush(): OutputRecord[] {
    const packs: OutputRecord[] = [];
    for (const ofTopic of this.open.values()) {
      for (const pack of ofTopic) if (pack !== undefined && pack.count > 0) packs.push(close(pack));
    }
    this.open.clear();
    return packs;
  }

  /** Forgets the open packs (an abandoned transaction). */
  clear(): void {
    this.open.clear();
  }

  /** The open pack of `topic`'s `partition`, a full one closed (to `out`) and replaced. */
  private packFor(topic: string, partition: number, out: OutputRecord[]): OpenPack {
    let ofTopic = this.open.get(topic);
    if (ofTopic === undefined) {
      ofTopic = [];
      this.open.set(topic, ofTopic);
    }
    const pack = ofTopic[partition];
    if (pack === undefined) return (ofTopic[partition] = newPack(topic, partition));
    return pack.count >= PACK_MAX_ENTRIES ? this.replace(pack, out) : pack;
  }

  /** Closes `pack` to `out`; a new, empty pack takes its place. */
  private replace(pack: OpenPack, out: OutputRecord[]): OpenPack {
    out.push(close(pack));
    const next = newPack(pack.topic, pack.partition);
    this.open.get(pack.topic)![pack.partition] = next;
    return next;
  }

  private closeOpen(topic: string, partition: number, out: OutputRecord[]): void {
    const ofTopic = this.open.get(topic);
    const pack = ofTopic?.[partition];
    if (ofTopic === undefined || pack === undefined) return;
    // Empty when writeEncoded() found the entry too large for it: nothing to send.
    if (pack.count > 0) out.push(close(pack));
    ofTopic[partition] = undefined;
  }

  private added(pack: OpenPack, timestamp: number | undefined): void {
    pack.count += 1;
    if (timestamp !== undefined && !(timestamp <= (pack.timestamp ?? -Infinity))) pack.timestamp = timestamp;
  }
}

/**
 * Copies `source`'s first `length` bytes to `target` at `at`; returns `length`. A byte loop for
 * keys and words: Buffer#copy's argument checks cost more than the copy (~7 % of the lines phase
 * of a wordcount as a profile's `_copyActual`).
 */
function copySmall(source: Buffer, length: number, target: Buffer, at: number): number {
  if (length > 32) return source.copy(target, at, 0, length);
  for (let i = 0; i < length; i++) target[at + i] = source[i]!;
  return length;
}

function newPack(topic: string, partition: number): OpenPack {
  const buf = Buffer.allocUnsafe(FIRST_PACK_BYTES);
  return { topic, partition, buf, view: viewOf(buf), at: 4, count: 0, timestamp: undefined };
}

function viewOf(buf: Buffer): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.length);
}

/** Room in `pack` for `size` more bytes (within PACK_CAPACITY, which the caller checked). */
function ensureRoom(pack: OpenPack, size: number): void {
  if (pack.at + size > pack.buf.length) grow(pack, Math.min(PACK_CAPACITY, Math.max(pack.at + size, pack.buf.length * 2)));
}

function grow(pack: OpenPack, capacity: number): void {
  const buf = Buffer.allocUnsafe(capacity);
  pack.buf.copy(buf, 0, 0, pack.at);
  pack.buf = buf;
  pack.view = viewOf(buf);
}

/** An entry's timestamp and headers, from `at`; returns where the entry ends. */
function writeEntryEnd(pack: OpenPack, at: number, timestamp: number | undefined, headers: Headers | undefined): number {
  const { buf, view } = pack;
  view.setFloat64(at, timestamp ?? Date.now());
  at += 8;
  if (headers === undefined) {
    view.setUint16(at, 0);
    return at + 2;
  }
  const entries = Object.entries(headers);
  at = buf.writeUInt16BE(entries.length, at);
  for (const [name, value] of entries) {
    at = buf.writeUInt16BE(Buffer.byteLength(name), at);
    at += buf.write(name, at);
    at = buf.writeUInt32BE(Buffer.byteLength(value), at);
    at += buf.write(value, at);
  }
  return at;
}

function close(pack: OpenPack): OutputRecord {
  pack.view.setUint32(0, pack.count);
  const { timestamp } = pack;
  return { topic: pack.topic, partition: pack.partition, key: null, value: pack.buf.subarray(0, pack.at), headers: PACK_HEADERS, ...(timestamp === undefined ? {} : { timestamp }) };
}

/** Whether `buf`'s `length` bytes at `a` and at `b` are the same (short runs: a key, a word). */
function sameBytes(buf: Buffer, a: number, b: number, length: number): boolean {
  if (length > 64) return false;
  for (let i = 0; i < length; i++) if (buf[a + i] !== buf[b + i]) return false;
  return true;
}

/** The entries of a pack, each with the pack's topic, partition and offset. Throws PackDecodeError. */
export function unpackRecord(record: InputRecord): PackedEntry[] {
  const version = record.headers[PACK_HEADER];
  if (version !== PACK_VERSION) throw new PackDecodeError(`unknown pack version "${String(version)}"`);
  const buf = record.value;
  if (buf === null || buf.length < 4) throw new PackDecodeError('a pack without a value');
  // Read through a DataView: no argument validation per read (see OpenPack.view); `need` bounds them.
  const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  const need = (at: number, n: number): void => {
    if (at + n > buf.length) throw new PackDecodeError(`a pack cut short at byte ${at} of ${buf.length}`);
  };
  // A field's length at `at` (-1: null), checked against what is left. No tuple per field: this
  // runs for every key and value of every pack.
  const lengthAt = (at: number): number => {
    need(at, 4);
    const length = view.getInt32(at);
    if (length < -1) throw new PackDecodeError(`a negative length at byte ${at}`);
    if (length > 0) need(at + 4, length);
    return length;
  };
  const count = view.getUint32(0);
  const entries: PackedEntry[] = new Array<PackedEntry>(count);
  let at = 4;
  for (let entry = 0; entry < count; entry += 1) {
    const keyLength = lengthAt(at);
    const key = keyLength === -1 ? null : buf.subarray(at + 4, at + 4 + keyLength);
    at += 4 + Math.max(keyLength, 0);
    const valueLength = lengthAt(at);
    // A value with the key's bytes (a word grouped by itself) is the key's Buffer: one view
    // less, and the source decodes it once (TaskProcessor.processSource).
    let value: Buffer | null = null;
    if (valueLength !== -1) value = key !== null && valueLength === keyLength && sameBytes(buf, at - keyLength, at + 4, keyLength) ? key : buf.subarray(at + 4, at + 4 + valueLength);
    const afterValue = at + 4 + Math.max(valueLength, 0);
    need(afterValue, 10);
    const timestamp = view.getFloat64(afterValue);
    const headerCount = view.getUint16(afterValue + 8);
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
