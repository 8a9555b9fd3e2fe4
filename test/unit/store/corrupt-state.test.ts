/**
 * A damaged state directory (bytes overwritten in real LevelDB files) is wiped and opened empty
 * — the runtime then restores every store from its changelog — instead of failing every start:
 * at once when LevelDB cannot open it, or at the next start when a damaged table block is
 * found while reading (the read fails STATE_CORRUPTED and marks the directory). iqgate's own
 * files in the directory survive the wipe. A full disk is STORE_DISK_FULL, retriable.
 */
import { existsSync, openSync, readdirSync, statSync, writeFileSync, writeSync, closeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { afterEach, describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import { LevelCommittedStore } from '../../../src/store/level-committed-store.js';
import { pairEntries } from '../../../src/store/committed-store.js';
import { Position } from '../../../src/store/position.js';
import { toStoreError } from '../../../src/store/store-errors.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

const STORE = 'counts';
const value = (i: number) => Buffer.from(`value-${i}-${'x'.repeat(90)}`);

/** A directory with `n` committed entries of task 0_0, closed, plus an iqgate file beside LevelDB's. */
async function committedDirectory(n: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'iqgate-corrupt-'));
  dirs.push(dir);
  const store = await LevelCommittedStore.open(dir);
  const keyspace = await store.keyspace(STORE, 0);
  const entries: Array<[string, Buffer]> = Array.from({ length: n }, (_, i) => [`key-${String(i).padStart(6, '0')}`, value(i)]);
  await store.commit([{ taskId: '0_0', keyspace, entries: pairEntries(entries), meta: { changelogOffset: n, position: Position.empty() } }]);
  await store.close();
  writeFileSync(join(dir, 'iqgate-instance.json'), '{"id":"kept"}');
  return dir;
}

function overwrite(file: string, at: 'start' | 'middle'): void {
  const size = statSync(file).size;
  const fd = openSync(file, 'r+');
  const length = Math.min(64, size);
  writeSync(fd, Buffer.alloc(length, 0xff), 0, length, at === 'start' ? 0 : Math.floor(size / 2));
  closeSync(fd);
}

async function readAll(store: LevelCommittedStore): Promise<number> {
  const keyspace = await store.keyspace(STORE, 0);
  const view = keyspace.snapshot('0_0');
  const cursor = view.cursor({ bounds: {}, reverse: false, limit: Infinity });
  let n = 0;
  try {
    for (let chunk = await cursor.next(); chunk !== undefined; chunk = await cursor.next()) n += chunk.length;
  } finally {
    await view.close();
  }
  return n;
}

describe('a damaged state directory', () => {
  for (const file of ['CURRENT', 'MANIFEST'] as const) {
    it(`that LevelDB cannot open (${file} overwritten) is wiped at open, says why, keeps iqgate's own files, and opens empty`, async () => {
      const dir = await committedDirectory(200);
      const target = readdirSync(dir).find((name) => name.startsWith(file))!;
      overwrite(join(dir, target), 'start');
      // LevelDB itself refuses it (so the test below shows the wipe, not a file LevelDB shrugged off).
      await expect(new Level(dir).open()).rejects.toMatchObject({ cause: { code: 'LEVEL_CORRUPTION' } });

      const reasons: string[] = [];
      const store = await LevelCommittedStore.open(dir, (reason) => reasons.push(reason));
      try {
        expect(reasons).toHaveLength(1);
        expect(reasons[0]).toContain('damaged');
        expect(await store.readMeta('0_0', STORE)).toBeUndefined(); // no offsets: the task restores from its changelog's start
        expect(await readAll(store)).toBe(0);
        expect(existsSync(join(dir, 'iqgate-instance.json'))).toBe(true);
      } finally {
        await store.close();
      }
    });
  }

  it('whose damage shows only when a table block is read fails that read with STATE_CORRUPTED, and the next open wipes it', async () => {
    const dir = await committedDirectory(30_000);
    // Into table files (.ldb): a compaction of everything.
    const raw = new Level<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await raw.open();
    await (raw as unknown as { compactRange(start: Buffer, end: Buffer): Promise<void> }).compactRange(Buffer.alloc(0), Buffer.alloc(8, 0xff));
    await raw.close();
    const tables = readdirSync(dir).filter((name) => name.endsWith('.ldb')).sort((x, y) => statSync(join(dir, y)).size - statSync(join(dir, x)).size);
    expect(tables.length).toBeGreaterThan(0);
    overwrite(join(dir, tables[0]!), 'middle');

    const reasons: string[] = [];
    let store = await LevelCommittedStore.open(dir, (reason) => reasons.push(reason));
    if (reasons.length === 0) {
      // Opened: reading the damaged block fails, coded, and marks the directory.
      const failure = await readAll(store).then(() => undefined, (error: unknown) => error);
      expect(isIqgateError(failure, 'STATE_CORRUPTED'), String(failure)).toBe(true);
      await store.close();
      expect(readdirSync(dir)).toContain('IQGATE-CORRUPT');
      store = await LevelCommittedStore.open(dir, (reason) => reasons.push(reason));
      expect(reasons).toEqual([expect.stringContaining('an earlier run found it damaged')]);
    }
    try {
      expect(await readAll(store)).toBe(0);
      expect(readdirSync(dir)).not.toContain('IQGATE-CORRUPT');
      // And it works again: a commit and its read-back.
      const keyspace = await store.keyspace(STORE, 0);
      await store.commit([{ taskId: '0_0', keyspace, entries: pairEntries([['again', value(1)]]), meta: { changelogOffset: 1, position: Position.empty() } }]);
      expect(keyspace.getSync(Buffer.from('again'))).toEqual(value(1));
    } finally {
      await store.close();
    }
  });

  it('a full disk is STORE_DISK_FULL, retriable (the batch did not happen), and a damaged file STATE_CORRUPTED, not retried', () => {
    const full = toStoreError(Object.assign(new Error('IO error: /state/000012.log: No space left on device'), { code: 'LEVEL_IO_ERROR' }), 'commit of task 0_1');
    expect(full).toMatchObject({ code: 'STORE_DISK_FULL', retriable: true });
    const nodeFull = toStoreError(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }), 'commit of task 0_1');
    expect(nodeFull.code).toBe('STORE_DISK_FULL');
    const damaged = toStoreError(Object.assign(new Error('Corruption: block checksum mismatch'), { code: 'LEVEL_CORRUPTION' }), 'store counts');
    expect(damaged).toMatchObject({ code: 'STATE_CORRUPTED', retriable: false });
  });
});
