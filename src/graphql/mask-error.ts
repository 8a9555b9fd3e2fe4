/**
 * What clients see of an error: IqgateErrors keep their message and get their stable code as
 * `extensions.code` (STORE_EXCEPTION excepted: its message is the storage driver's, so the
 * code's description replaces it); GraphQLErrors that already carry a code pass unchanged;
 * everything else (bugs, driver failures) becomes "Unexpected error." with code
 * INTERNAL_SERVER_ERROR, so no stack or internal message leaks.
 *
 * Errors are recognised by shape, not `instanceof`: graphql ships both an ESM and a CJS build,
 * and yoga may construct its GraphQLErrors from the other copy (the dual-package hazard).
 */
import { GraphQLError } from 'graphql';
import { ERROR_CODES, IqgateError, type ErrorCode } from '../errors.js';

interface GraphQLErrorLike extends Error {
  readonly originalError?: unknown;
  readonly path?: ReadonlyArray<string | number>;
  readonly nodes?: GraphQLError['nodes'];
  readonly extensions: Record<string, unknown>;
}

function isGraphQLErrorLike(error: unknown): error is GraphQLErrorLike {
  return error instanceof Error && error.name === 'GraphQLError' && typeof (error as { extensions?: unknown }).extensions === 'object';
}

/** An IqgateError, recognised by shape (see above). */
export function isCoded(error: unknown): error is IqgateError {
  return error instanceof Error && error.name === 'IqgateError' && typeof (error as { code?: unknown }).code === 'string';
}

export function maskError(error: unknown): Error {
  const graphqlError = isGraphQLErrorLike(error) ? error : undefined;
  const original = graphqlError !== undefined ? graphqlError.originalError : error;
  const path = graphqlError?.path ?? null;
  const nodes = graphqlError?.nodes ?? null;
  if (isCoded(original)) {
    const code: ErrorCode = original.code;
    if (code === 'STORE_EXCEPTION') {
      // Its message and details carry the storage driver's text (paths, LevelDB internals).
      return new GraphQLError(ERROR_CODES.STORE_EXCEPTION, { nodes, path, extensions: { code, retriable: original.retriable } });
    }
    const details = original instanceof IqgateError ? original.details : {};
    return new GraphQLError(original.message, {
      nodes,
      path,
      extensions: { code, retriable: original.retriable, ...(Object.keys(details).length > 0 ? { details } : {}) },
    });
  }
  if (graphqlError !== undefined && (original == null || isGraphQLErrorLike(original))) {
    if (typeof graphqlError.extensions.code === 'string') return graphqlError;
    if (isGraphQLErrorLike(original) && typeof original.extensions.code === 'string') {
      return new GraphQLError(graphqlError.message, { nodes, path, extensions: { ...original.extensions } });
    }
    // graphql-js's own errors are safe to show: without a path they are request errors
    // (a variable that does not coerce), with one they are a server-side contract slip.
    const code: ErrorCode = path === null ? 'GRAPHQL_VALIDATION_FAILED' : 'INTERNAL_SERVER_ERROR';
    return new GraphQLError(graphqlError.message, { nodes, path, extensions: { ...graphqlError.extensions, code } });
  }
  return new GraphQLError('Unexpected error.', { nodes, path, extensions: { code: 'INTERNAL_SERVER_ERROR' } });
}
