/**
 * The local broker's KRaft cluster id goes to StorageTool as `-t <id>`: an id that starts with
 * '-' is read as an option and the format fails (a CI run failed that way, once in 64 starts);
 * and a data directory formatted before must be formatted again with its own id.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clusterId, formattedClusterId } from '../../scripts/kafka/broker.js';

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

describe('formattedClusterId', () => {
  it('reads the id a data directory was formatted with, so a restart on it formats with the same id', () => {
    const dir = mkdtempSync(join(tmpdir(), 'iqgate-meta-'));
    try {
      expect(formattedClusterId(dir)).toBeUndefined();
      mkdirSync(join(dir, 'logs'));
      writeFileSync(join(dir, 'logs', 'meta.properties'), '#\nnode.id=1\ndirectory.id=abc\nversion=1\ncluster.id=dO0arGux7RAY6hLy5zf2mg\n');
      expect(formattedClusterId(dir)).toBe('dO0arGux7RAY6hLy5zf2mg');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
