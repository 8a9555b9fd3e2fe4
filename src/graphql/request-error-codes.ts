/**
 * Gives parse and validation errors a stable code too (graphql-js leaves them without one), so
 * every error a client sees carries `extensions.code`, as the schema description promises.
 */
import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { ErrorCode } from '../errors.js';

function withCode(error: GraphQLError, code: ErrorCode): GraphQLError {
  if (typeof error.extensions.code === 'string') return error;
  return new GraphQLError(error.message, {
    nodes: error.nodes ?? null,
    source: error.source ?? null,
    positions: error.positions ?? null,
    path: error.path ?? null,
    originalError: error.originalError ?? null,
    extensions: { ...error.extensions, code },
  });
}

export function useRequestErrorCodes(): Plugin {
  return {
    onParse() {
      return ({ result, replaceParseResult }) => {
        if (result instanceof Error && result.name === 'GraphQLError') replaceParseResult(withCode(result as GraphQLError, 'GRAPHQL_PARSE_FAILED'));
      };
    },
    onValidate() {
      return ({ result, setResult }) => {
        if (result.length > 0) setResult(result.map((error) => withCode(error, 'GRAPHQL_VALIDATION_FAILED')));
      };
    },
  };
}
