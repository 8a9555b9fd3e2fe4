/**
 * Claiming a state directory without touching it. Two ways it cannot be used get a coded error
 * naming it, before LevelDB opens anything:
 *
 * - STATE_DIR_LOCKED: a running instance (another process, or another engine in this one) has
 *   the database open. LevelDB holds a POSIX record lock (fcntl) on `LOCK` for as long as the
 *   database is open, but its open() renames the holder's `LOG` to `LOG.old` and starts a new
 *   one *before* it asks for that lock — so a failed open would still rotate the running
 *   instance's log. On Linux the lock is looked up in /proc/locks first (read-only); elsewhere,
 *   or if that finds nothing, LevelDB's own refusal (LEVEL_LOCKED) is mapped to the same code.
 * - STATE_DIR_NOT_WRITABLE: this process may not write the directory (or, when it does not
 *   exist yet, the nearest ancestor that does, where it would be created). LevelDB would append
 *   to an existing `LOG` before failing on the first file it must create.
 *
 * docs/leveldb-notes.md ("Opening a state directory") has the LevelDB source behind this.
 */
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { IqgateError } from '../errors.js';

/** Throws STATE_DIR_LOCKED or STATE_DIR_NOT_WRITABLE when `directory` cannot be used; touches nothing. */
export function checkStateDir(directory: string): void {
  const holder = lockHolder(directory);
  if (holder !== undefined) throw stateDirLocked(directory, holder);
  const unwritable = unwritableAncestor(directory);
  if (unwritable !== undefined) {
    throw new IqgateError('STATE_DIR_NOT_WRITABLE', `the state directory ${directory} cannot be written by this process (${unwritable.path}: ${unwritable.code}); give it write access or choose another stateDir`, {
      details: { directory, path: unwritable.path },
    });
  }
}

/** The coded error for LevelDB's failure to open `directory`. */
export function stateDirOpenError(directory: string, error: unknown): IqgateError {
  const cause = (error as { cause?: unknown } | null)?.cause;
  if ((error as { code?: unknown } | null)?.code === 'LEVEL_LOCKED' || (cause as { code?: unknown } | null)?.code === 'LEVEL_LOCKED') {
    return stateDirLocked(directory, undefined, error);
  }
  const reason = error instanceof Error ? error.message + (cause instanceof Error ? `: ${cause.message}` : '') : String(error);
  return new IqgateError('STORE_EXCEPTION', `cannot open the state directory ${directory}: ${reason}`, { cause: error, details: { directory } });
}

function stateDirLocked(directory: string, pid: number | undefined, cause?: unknown): IqgateError {
  const by = pid === undefined ? 'another running instance' : pid === process.pid ? 'another store engine in this process' : `process ${pid}`;
  return new IqgateError('STATE_DIR_LOCKED', `the state directory ${directory} is in use by ${by} (it holds LevelDB's lock); stop it, or give this instance its own stateDir`, {
    ...(cause === undefined ? {} : { cause }),
    details: { directory, ...(pid === undefined ? {} : { pid }) },
  });
}

/**
 * The pid holding a POSIX lock on `<directory>/LOCK`, from /proc/locks (Linux); undefined when
 * none is held, or it cannot be told. Lines read `1: POSIX  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF`
 * with major and minor in hex (fs/locks.c, lock_get_status).
 */
function lockHolder(directory: string): number | undefined {
  if (process.platform !== 'linux') return undefined;
  let ino: number;
  let dev: number;
  let locks: string;
  try {
    ({ ino, dev } = statSync(join(directory, 'LOCK')));
    locks = readFileSync('/proc/locks', 'utf8');
  } catch {
    return undefined; // no LOCK file (nothing opened it yet), or no /proc
  }
  // Linux's dev_t: the minor number's low 8 bits, then the major's 12, then the minor's upper bits.
  const major = ((dev >>> 8) & 0xfff).toString(16);
  const minor = ((dev & 0xff) | ((dev >>> 12) & ~0xff)).toString(16);
  for (const line of locks.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] !== 'POSIX') continue; // LevelDB takes fcntl F_SETLK locks (util/env_posix.cc, LockOrUnlock)
    const [maj, min, inode] = (fields[5] ?? '').split(':');
    if (inode === String(ino) && Number.parseInt(maj ?? '', 16).toString(16) === major && Number.parseInt(min ?? '', 16).toString(16) === minor) {
      const pid = Number(fields[4]);
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    }
  }
  return undefined;
}

/** The directory itself, or its nearest existing ancestor when it does not exist yet, if this process may not write it. */
function unwritableAncestor(directory: string): { path: string; code: string } | undefined {
  let path = resolve(directory);
  while (!existsSync(path) && dirname(path) !== path) path = dirname(path);
  try {
    accessSync(path, constants.W_OK | constants.X_OK);
    return undefined;
  } catch (error) {
    return { path, code: String((error as { code?: unknown }).code ?? 'EACCES') };
  }
}
