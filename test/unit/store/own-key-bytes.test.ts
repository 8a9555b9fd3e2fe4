import { describe, expect, it } from 'vitest';
import { ownKeyBytes } from '../../../src/store/record-cache.js';

// The rule behind the record cache's key copies, on whichever Node runs the suite (the pool's
// slab is 8 KiB on Node 22 and 64 KiB from Node 24).
describe('ownKeyBytes', () => {
  it('copies a view into a buffer larger than the pool slab, whatever the slab size', () => {
    for (const size of [Buffer.poolSize + 1024, 1024 * 1024]) {
      const big = Buffer.alloc(size, 0x61);
      const key = ownKeyBytes(big.subarray(10, 15));
      expect(key.buffer).not.toBe(big.buffer);
      expect(key.toString()).toBe('aaaaa');
    }
  });

  it('keeps a small key from the Buffer pool and a key that is its whole buffer as they are', () => {
    const pooled = Buffer.from('kafka');
    expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.length); // a view into the pool's slab
    expect(ownKeyBytes(pooled)).toBe(pooled);
    const whole = Buffer.alloc(Buffer.poolSize * 4, 0x62);
    expect(ownKeyBytes(whole)).toBe(whole);
  });
});
