/**
 * A state directory LevelDB found damaged is wiped and restored, not retried forever: Kafka
 * Streams' corrupted-task path (wipe the task's state, restore it from the changelog). Damage
 * shows in two ways (docs/leveldb-notes.md, "Damaged files"): at open (a bad MANIFEST or
 * CURRENT: LevelDB refuses to open) or only when a damaged table block is read. The first is
 * wiped at once; the second fails that read with STATE_CORRUPTED and marks the directory
 * (MARKER), so the next start wipes it instead of failing on the same block again.
 *
 * Only LevelDB's own files go: iqgate's files in the directory (the instance id, the group
 * member file) stay, so the instance keeps its identity in the group.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const MARKER = 'IQGATE-CORRUPT';

/** LevelDB's files (db/filename.cc): CURRENT, LOCK, LOG(.old), MANIFEST-n, n.log, n.ldb, n.sst, n.dbtmp. */
const LEVEL_FILE = /^(CURRENT|LOCK|LOG|LOG\.old|MANIFEST-\d+|\d+\.(log|ldb|sst|dbtmp))$/;

/** Why an earlier run marked `directory` damaged; undefined when it did not. */
export function corruptMarker(directory: string): string | undefined {
  try {
    return readFileSync(join(directory, MARKER), 'utf8').trim() || 'no reason recorded';
  } catch {
    return undefined;
  }
}

/** Marks `directory` for wiping at the next open (best effort: a full disk may refuse even this). */
export function markCorrupt(directory: string, reason: string): void {
  try {
    writeFileSync(join(directory, MARKER), `${new Date().toISOString()} ${reason}\n`);
  } catch {
    // the read that found the damage still fails with STATE_CORRUPTED
  }
}

/** Removes LevelDB's files and the marker from `directory`; other files stay. */
export function wipeLevelFiles(directory: string): void {
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return; // nothing there yet
  }
  for (const name of names) {
    if (LEVEL_FILE.test(name) || name === MARKER) rmSync(join(directory, name), { force: true });
  }
}
