import { describe, expect, it } from 'vitest';
import { murmur2, partitionForKey, toPositive } from '../../src/murmur2.js';

// org.apache.kafka.common.utils.UtilsTest#testMurmur2 (apache/kafka, clients/src/test).
const JAVA_UTILS_TEST: Array<[Buffer, number]> = [
  [Buffer.from('21'), -973932308],
  [Buffer.from('foobar'), -790332482],
  [Buffer.from('a-little-bit-long-string'), -985981536],
  [Buffer.from('a-little-bit-longer-string'), -1486304829],
  [Buffer.from('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'), -58897971],
  [Buffer.from([0x61, 0x62, 0x63]), 479470107],
];

// kafkajs src/producer/partitioners/default/murmur2.spec.js, generated with the Java client.
const KAFKAJS_JAVA_COMPATIBLE: Record<string, number> = {
  '0': 971027396,
  '1': -1993445489,
  '128': -326012175,
  '2187': -1508407203,
  '16384': -325739742,
  '78125': -1654490814,
  '279936': 1462227128,
  '823543': -2014198330,
};

describe('murmur2', () => {
  it.each(JAVA_UTILS_TEST)('hashes %s exactly as the Java client does', (bytes, expected) => {
    expect(murmur2(bytes)).toBe(expected);
  });

  it('agrees with the Java-compatible vectors kafkajs tests against', () => {
    for (const [key, expected] of Object.entries(KAFKAJS_JAVA_COMPATIBLE)) expect(murmur2(Buffer.from(key))).toBe(expected);
  });

  it('covers every tail length (0 to 3 trailing bytes) without throwing or going non-integer', () => {
    for (let length = 0; length < 9; length++) {
      const hash = murmur2(Buffer.alloc(length, 0xff));
      expect(Number.isInteger(hash)).toBe(true);
      expect(hash).toBeGreaterThanOrEqual(-0x80000000);
      expect(hash).toBeLessThanOrEqual(0x7fffffff);
    }
  });
});

describe('partitionForKey', () => {
  it('clears the sign bit like Utils.toPositive rather than taking an absolute value', () => {
    expect(toPositive(-0x80000000)).toBe(0);
    expect(toPositive(-1)).toBe(0x7fffffff);
    expect(toPositive(5)).toBe(5);
  });

  it('is toPositive(murmur2(key)) % numPartitions', () => {
    // -973932308 & 0x7fffffff = 1173551340; % 3 = 0, % 4 = 0, % 7 = 5
    expect(partitionForKey(Buffer.from('21'), 3)).toBe(1173551340 % 3);
    expect(partitionForKey(Buffer.from('21'), 7)).toBe(1173551340 % 7);
    expect(partitionForKey(Buffer.from('foobar'), 10)).toBe(toPositive(-790332482) % 10);
  });

  it('rejects a partition count that is not a positive integer', () => {
    expect(() => partitionForKey(Buffer.from('a'), 0)).toThrow(TypeError);
    expect(() => partitionForKey(Buffer.from('a'), 1.5)).toThrow(TypeError);
  });
});
