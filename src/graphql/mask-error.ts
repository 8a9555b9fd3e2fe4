/**
 * What clients see of an error: IqgateErrors keep their message and get their stable code as
 * `extensions.code`; GraphQLErrors that already carry a code pass unchanged; everything else
 * (bugs, driver failures) becomes "Unexpected error." with code INTERNAL_SERVER_ERROR, so no
 * stack or internal message leaks.
 */
import { GraphQLError } from 'graphql';
import { isIqgateError } from '../errors.js';

export function maskError(error: unknown): Error {
  const original = error instanceof GraphQLError ? error.originalError : error;
  const path = error instanceof GraphQLError ? (error.path ?? null) : null;
  const nodes = error instanceof GraphQLError ? (error.nodes ?? null) : null;
  if (isIqgateError(original)) {
    return new GraphQLError(original.message, {
      nodes,
      path,
      extensions: { code: original.code, retriable: original.retriable, ...(Object.keys(original.details).length > 0 ? { details: original.details } : {}) },
    });
  }
  if (error instanceof GraphQLError && (original === undefined || original === null || original instanceof GraphQLError)) {
    if (typeof error.extensions.code === 'string') return error;
    if (original instanceof GraphQLError && typeof original.extensions.code === 'string') {
      return new GraphQLError(error.message, { nodes, path, extensions: { ...original.extensions } });
    }
  }
  return new GraphQLError('Unexpected error.', { nodes, path, extensions: { code: 'INTERNAL_SERVER_ERROR' } });
}
