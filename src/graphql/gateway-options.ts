/**
 * The gateway's options, with their defaults in one place.
 */
import type { StateProvider } from '../query/state-provider.js';
import type { Registry } from 'prom-client';

export interface GatewayOptions {
  /** Where the state comes from: the runtime, or a StaticStateProvider when embedding. */
  readonly provider: StateProvider;
  /** Largest page (first/last) and largest getMany key list. Default 1000. */
  readonly maxPageSize?: number;
  /** Page size when neither first nor last is given. Default 100. */
  readonly defaultPageSize?: number;
  /** Longest boundTimeoutMs a request may ask for. Default 30 000. */
  readonly maxBoundTimeoutMs?: number;
  /**
   * graphql-armor limits. Defaults: depth 8, aliases 30, directives 20, tokens 2000, and cost
   * 100 × maxPageSize: armor multiplies a field's cost by a literal first/last, so one full
   * page of entries (cost ≈ 40 × its size) passes while many aliased full pages do not.
   */
  readonly maxDepth?: number;
  readonly maxCost?: number;
  readonly maxAliases?: number;
  readonly maxDirectives?: number;
  readonly maxTokens?: number;
  /** Events buffered per slow subscriber before its subscription ends. Default 10 000. */
  readonly maxBufferedEvents?: number;
  /**
   * How long a query forwarded to the instance hosting a partition (`get`/`getMany` keys, a
   * `range`/`prefix` page) may take, on top of the request's boundTimeoutMs, before that
   * owner's keys or partitions fail FORWARD_FAILED. Default 5 000.
   */
  readonly forwardTimeoutMs?: number;
  /** Default true. */
  readonly graphiql?: boolean;
  /** Default '/graphql'. */
  readonly graphqlEndpoint?: string;
  /** Path of schema.graphql; default: the file at the repository top level. */
  readonly schemaPath?: string;
  /** Pass false to silence yoga's logger (tests, benchmarks). Default true. */
  readonly logging?: boolean;
  /**
   * Sees each failed partition read in full (clients get a masked STORE_EXCEPTION). Default:
   * written to stderr when `logging` is on.
   */
  readonly onPartitionError?: (error: unknown, context: { readonly partition: number }) => void;
  /**
   * A prom-client registry answered at GET /metrics (Prometheus text format). serve() passes one
   * holding the runtime's processing metrics and Node's process metrics. Default: no /metrics.
   */
  readonly metrics?: Registry;
}

export type ResolvedGatewayOptions = Required<Omit<GatewayOptions, 'schemaPath' | 'metrics'>> & {
  readonly schemaPath: string | undefined;
  readonly metrics: Registry | undefined;
};

function logPartitionError(error: unknown, context: { readonly partition: number }): void {
  console.error(`[iqgate] reading partition ${context.partition} failed:`, error);
}

export function resolveGatewayOptions(options: GatewayOptions): ResolvedGatewayOptions {
  const resolved: ResolvedGatewayOptions = {
    provider: options.provider,
    maxPageSize: options.maxPageSize ?? 1000,
    defaultPageSize: options.defaultPageSize ?? 100,
    maxBoundTimeoutMs: options.maxBoundTimeoutMs ?? 30_000,
    maxDepth: options.maxDepth ?? 8,
    maxCost: options.maxCost ?? 100 * (options.maxPageSize ?? 1000),
    maxAliases: options.maxAliases ?? 30,
    maxDirectives: options.maxDirectives ?? 20,
    maxTokens: options.maxTokens ?? 2000,
    maxBufferedEvents: options.maxBufferedEvents ?? 10_000,
    forwardTimeoutMs: options.forwardTimeoutMs ?? 5_000,
    graphiql: options.graphiql ?? true,
    graphqlEndpoint: options.graphqlEndpoint ?? '/graphql',
    schemaPath: options.schemaPath,
    metrics: options.metrics,
    logging: options.logging ?? true,
    onPartitionError: options.onPartitionError ?? ((options.logging ?? true) ? logPartitionError : () => undefined),
  };
  for (const name of ['maxPageSize', 'defaultPageSize', 'maxDepth', 'maxCost', 'maxAliases', 'maxDirectives', 'maxTokens', 'maxBufferedEvents', 'forwardTimeoutMs'] as const) {
    const value = resolved[name];
    if (!Number.isInteger(value) || value < 1) throw new TypeError(`gateway option ${name} must be a positive integer, got ${String(value)}`);
  }
  if (!Number.isInteger(resolved.maxBoundTimeoutMs) || resolved.maxBoundTimeoutMs < 0) {
    throw new TypeError(`gateway option maxBoundTimeoutMs must be a non-negative integer`);
  }
  if (resolved.defaultPageSize > resolved.maxPageSize) throw new TypeError('gateway option defaultPageSize exceeds maxPageSize');
  return resolved;
}
