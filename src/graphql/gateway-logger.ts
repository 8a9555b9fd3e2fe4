/**
 * Yoga's own console logger, with one change: an error that answers a client's request — a
 * bad argument, an unknown store, a partition that moved — is logged at debug, not at error.
 *
 * Yoga logs at error level, with its stack, every error that its `maskError` replaces, and
 * src/graphql/mask-error.ts replaces every coded error (to give it `extensions.code`): without
 * this, a query for an unknown store printed a stack trace at error level on the server. The
 * client still gets the coded error; failures of the server itself (STORE_EXCEPTION,
 * DECODE_FAILED on stored bytes, anything uncoded) stay at error.
 */
import { createLogger, type YogaLogger } from 'graphql-yoga';
import type { ErrorCode } from '../errors.js';
import { isCoded } from './mask-error.js';

/** Codes that answer the request itself (its input, or a state the client must react to). */
const CLIENT_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'STORE_CLOSED', 'STORE_NOT_FOUND', 'PARTITION_NOT_FOUND', 'ENCODE_FAILED', 'KEY_TOO_LARGE', 'VALUE_TOO_LARGE',
  'INVALID_RANGE', 'INVALID_KEY', 'INVALID_ARGUMENT', 'INVALID_CURSOR', 'STALE_CURSOR', 'PAGE_SIZE_EXCEEDED', 'NOT_UP_TO_BOUND',
  'NOT_STARTED', 'SUBSCRIPTION_OVERFLOW', 'PARTITION_REVOKED', 'QUERY_TOO_DEEP', 'QUERY_TOO_COSTLY',
  'TOO_MANY_ALIASES', 'TOO_MANY_DIRECTIVES', 'TOO_MANY_TOKENS', 'GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED',
]);

/** The code of an IqgateError, or of the IqgateError a GraphQLError wraps. */
function codeOf(error: unknown): string | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 3; e = (e as { originalError?: unknown }).originalError, depth += 1) {
    if (isCoded(e)) return e.code;
  }
  return undefined;
}

export function isClientError(error: unknown): boolean {
  const code = codeOf(error);
  return code !== undefined && CLIENT_CODES.has(code as ErrorCode);
}

/** The gateway's logger: `base` (default: yoga's, at info; DEBUG=1 for debug) with client errors at debug. */
export function gatewayLogger(base: YogaLogger = createLogger()): YogaLogger {
  return {
    debug: (...args: unknown[]) => base.debug(...args),
    info: (...args: unknown[]) => base.info(...args),
    warn: (...args: unknown[]) => base.warn(...args),
    error: (...args: unknown[]) => (args.length === 1 && isClientError(args[0]) ? base.debug(...args) : base.error(...args)),
  };
}
