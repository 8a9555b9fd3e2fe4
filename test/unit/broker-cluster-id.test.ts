/**
 * The local broker's KRaft cluster id goes to StorageTool as `-t <id>`: an id that starts with
 * '-' is read as an option and the format fails (a CI run failed that way, once in 64 starts).
 */
import { describe, expect, it } from 'vitest';
import { clusterId } from '../../scripts/kafka/broker.js';

describe('clusterId', () => {
  it('is a 16-byte base64url id that never starts with "-"', () => {
    const ids = Array.from({ length: 5_000 }, () => clusterId());
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
      expect(Buffer.from(id, 'base64url')).toHaveLength(16);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });
});
