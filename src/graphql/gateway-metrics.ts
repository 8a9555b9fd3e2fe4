/**
 * The gateway's own figures on the /metrics registry: request latency by HTTP status, and
 * GraphQL errors by their stable code (the code a client sees, after masking), so that a
 * dashboard or an alert can tell bad input (INVALID_KEY, PAGE_SIZE_EXCEEDED) from trouble
 * (STORE_EXCEPTION, INTERNAL_SERVER_ERROR). Per-partition failures are data, not errors: they
 * are in each result's `partitions`.
 *
 * One GatewayMetrics per gateway, fed by two sources: the yoga plugin below, and the fast path
 * for known operations (node-fast-path.ts), which answers without yoga's hooks.
 */
import type { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { maskError } from './mask-error.js';
import { performance } from 'node:perf_hooks';

function codeOf(error: unknown): string {
  const code = (maskError(error) as GraphQLError).extensions?.code;
  return typeof code === 'string' ? code : 'INTERNAL_SERVER_ERROR';
}

export class GatewayMetrics {
  private readonly duration: Histogram<'status'>;
  private readonly errors: Counter<'code'>;

  constructor(registry: Registry, graphqlEndpoint: string, sources: { readonly pinnedSnapshots?: () => number } = {}, prefix = 'iqgate_') {
    this.duration = new Histogram({
      name: `${prefix}graphql_request_duration_seconds`,
      help: `Time to answer a request to ${graphqlEndpoint} (to the first byte for subscriptions over SSE), by HTTP status.`,
      labelNames: ['status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.errors = new Counter({
      name: `${prefix}graphql_errors_total`,
      help: 'GraphQL errors answered to clients, by extensions.code.',
      labelNames: ['code'],
      registers: [registry],
    });
    const pinned = sources.pinnedSnapshots;
    if (pinned !== undefined) {
      new Gauge({
        name: `${prefix}pinned_snapshots`,
        help: 'Snapshots held for paged range/prefix listings (cursorSnapshotTtlMs, maxPinnedSnapshots): each keeps a LevelDB snapshot and in-memory clones alive.',
        registers: [registry],
        collect() {
          this.set(pinned());
        },
      });
    }
  }

  /** The histogram's child per status, so that an observation does not hash its labels again. */
  private readonly byStatus = new Map<number, { observe(seconds: number): void }>();

  /** A request to the GraphQL endpoint answered with `status`, `startedAt` from performance.now(). */
  observeRequest(status: number, startedAt: number): void {
    let child = this.byStatus.get(status);
    if (child === undefined) this.byStatus.set(status, (child = this.duration.labels({ status: String(status) })));
    child.observe((performance.now() - startedAt) / 1000);
  }

  countErrors(list: readonly unknown[] | undefined): void {
    for (const error of list ?? []) this.errors.inc({ code: codeOf(error) });
  }
}

export function useGatewayMetrics(metrics: GatewayMetrics, graphqlEndpoint: string): Plugin {
  const startedAt = new WeakMap<Request, number>();
  return {
    onRequest({ request, url }) {
      if (url.pathname === graphqlEndpoint) startedAt.set(request, performance.now());
    },
    onResponse({ request, response }) {
      const started = startedAt.get(request);
      if (started !== undefined) metrics.observeRequest(response.status, started);
    },
    onValidate() {
      return ({ result }) => metrics.countErrors(result);
    },
    onExecute() {
      return {
        onExecuteDone({ result }) {
          if ('errors' in result) metrics.countErrors(result.errors);
        },
      };
    },
  };
}
