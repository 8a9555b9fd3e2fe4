/**
 * Kafka's default partitioner hash, so that a key query touches exactly the partition the
 * producer wrote the key to. Mirrors `org.apache.kafka.common.utils.Utils.murmur2` (and
 * kafkajs' "default" — Java-compatible — partitioner): MurmurHash2, 32-bit, seed 0x9747b28c.
 * Written here rather than imported from kafkajs because only src/kafka may depend on kafkajs
 * (docs/architecture.md §2); a top-level module, as the query engine routes keys with it and src/kafka
 * partitions produced records with it (kafkajs' own murmur2 emulates 64-bit Long arithmetic).
 */
const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/** The signed 32-bit murmur2 hash of `bytes` (its first `length`), equal to Java's `Utils.murmur2(bytes)`. */
export function murmur2(bytes: Uint8Array, length = bytes.length): number {
  let h = (SEED ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    // Little-endian 4-byte blocks, as Java reads them.
    let k = (bytes[i]! & 0xff) | ((bytes[i + 1]! & 0xff) << 8) | ((bytes[i + 2]! & 0xff) << 16) | ((bytes[i + 3]! & 0xff) << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  // The tail, falling through like Java's switch.
  const rest = length & 3;
  if (rest === 3) h ^= (bytes[whole + 2]! & 0xff) << 16;
  if (rest >= 2) h ^= (bytes[whole + 1]! & 0xff) << 8;
  if (rest >= 1) {
    h ^= bytes[whole]! & 0xff;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** Java's `Utils.toPositive`: clears the sign bit (not Math.abs, which overflows on MIN_VALUE). */
export function toPositive(n: number): number {
  return n & 0x7fffffff;
}

/** The partition Kafka's default partitioner picks for a non-null key (`keyBytes`' first `length`). */
export function partitionForKey(keyBytes: Uint8Array, numPartitions: number, length = keyBytes.length): number {
  if (!Number.isInteger(numPartitions) || numPartitions < 1) {
    throw new TypeError(`numPartitions must be a positive integer, got ${String(numPartitions)}`);
  }
  return toPositive(murmur2(keyBytes, length)) % numPartitions;
}
