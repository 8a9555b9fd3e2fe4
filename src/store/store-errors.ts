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

/** Maps an error thrown by the storage engine to an IqgateError; IqgateErrors pass through. */
export function toStoreError(error: unknown, what: string): IqgateError {
  if (isIqgateError(error)) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && LEVEL_CLOSED_CODES.has(code)) {
    return new IqgateError('STORE_CLOSED', `${what} is closed`, { cause: error, details: { what } });
  }
  return new IqgateError('STORE_EXCEPTION', `${what} failed: ${error instanceof Error ? error.message : String(error)}`, {
    cause: error,
    retriable: false,
    details: { what },
  });
}
