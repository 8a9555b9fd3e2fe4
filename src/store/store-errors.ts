/**
 * The IqgateErrors the store raises, built in one place so codes and details stay uniform.
 * LevelDB's own "not open" errors (database, snapshot or iterator closed under a reader)
 * become STORE_CLOSED; anything else from the storage becomes STORE_EXCEPTION with the cause.
 */
import { IqgateError, isIqgateError } from '../errors.js';

export function storeClosedError(what: string): IqgateError {
  return new IqgateError('STORE_CLOSED', `${what} is closed`, { details: { what } });
}

const LEVEL_CLOSED_CODES = new Set([
  'LEVEL_DATABASE_NOT_OPEN',
  'LEVEL_SNAPSHOT_NOT_OPEN',
  'LEVEL_ITERATOR_NOT_OPEN',
]);

/** The error and its causes (classic-level wraps LevelDB's status in `cause`). */
function causes(error: unknown): Array<{ code?: unknown; message?: unknown }> {
  const list: Array<{ code?: unknown; message?: unknown }> = [];
  for (let e = error; e !== null && typeof e === 'object' && list.length < 5; e = (e as { cause?: unknown }).cause) list.push(e as { code?: unknown; message?: unknown });
  return list;
}

/** LevelDB reported damaged files: LEVEL_CORRUPTION, or a "Corruption:" status. */
export function isCorruption(error: unknown): boolean {
  return causes(error).some((e) => e.code === 'LEVEL_CORRUPTION' || (typeof e.message === 'string' && e.message.startsWith('Corruption:')));
}

/** The disk is full: Node's ENOSPC, or LevelDB's IO error saying so. */
function isDiskFull(error: unknown): boolean {
  return causes(error).some((e) => e.code === 'ENOSPC' || (typeof e.message === 'string' && /No space left on device|ENOSPC/.test(e.message)));
}

/**
 * Maps an error thrown by the storage engine to an IqgateError; IqgateErrors pass through.
 * Damaged files are STATE_CORRUPTED (level-committed-store.ts marks the directory, so the next
 * start wipes and restores it); a full disk is STORE_DISK_FULL, retriable: the failed commit
 * changed nothing, LevelDB's batch is all or nothing.
 */
export function toStoreError(error: unknown, what: string): IqgateError {
  if (isIqgateError(error)) return error;
  const reason = error instanceof Error ? error.message : String(error);
  // Before "not open": a failed open is LEVEL_DATABASE_NOT_OPEN whose cause says why.
  if (isCorruption(error)) {
    const status = causes(error).find((e) => e.code === 'LEVEL_CORRUPTION')?.message;
    return new IqgateError('STATE_CORRUPTED', `${what} failed: the state directory is damaged (${typeof status === 'string' ? status : reason})`, { cause: error, details: { what } });
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && LEVEL_CLOSED_CODES.has(code)) {
    return new IqgateError('STORE_CLOSED', `${what} is closed`, { cause: error, details: { what } });
  }
  if (isDiskFull(error)) return new IqgateError('STORE_DISK_FULL', `${what} failed: the state directory's disk is full (${reason})`, { cause: error, retriable: true, details: { what } });
  return new IqgateError('STORE_EXCEPTION', `${what} failed: ${error instanceof Error ? error.message : String(error)}`, {
    cause: error,
    retriable: false,
    details: { what },
  });
}
