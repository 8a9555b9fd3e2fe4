/**
 * The gateway's options, with their defaults in one place.
 */
import type { StateProvider } from '../query/state-provider.js';
import type { Registry } from 'prom-client';
import { IqgateError } from '../errors.js';
import { DEFAULT_CURSOR_SNAPSHOT_TTL_MS, DEFAULT_MAX_PINNED_SNAPSHOTS } from '../query/pinned-snapshots.js';
import type { PeerLink } from './forward-request.js';
import { PeerHealth } from './peer-health.js';
import { ApiKeys, type ApiKeyEntry } from './gate/api-keys.js';
import { JwtVerifier, type JwtOptions } from './gate/jwt-verifier.js';
import { RateLimiter, type RateLimitOptions } from './gate/rate-limiter.js';
import { RequestGate } from './gate/request-gate.js';

/**
 * Who may call the gateway (src/graphql/gate/). Give `jwt` and/or `apiKeys`, or choose
 * `anonymous: true` by name. Without any, the gateway is anonymous by default, which
 * listenGateway and serve() refuse on an address other than loopback.
 */
export interface AuthOptions {
  /** Requests without credentials are let in (as `anonymous`, every store). */
  readonly anonymous?: boolean;
  /** Bearer JWTs: the key source, issuer, audience, and the claim listing the stores. */
  readonly jwt?: JwtOptions | JwtVerifier;
  /** API keys (bearer, x-api-key, or HTTP Basic's password), each with its stores. */
  readonly apiKeys?: readonly ApiKeyEntry[] | ApiKeys;
  /**
   * The secret every instance of the application shares, to sign the requests it forwards to
   * the partition's owner and verify those it gets (gate/peer-signature.ts). Needed for
   * routing unless the gateway is anonymous; at least 32 characters.
   */
  readonly clusterSecret?: string;
}

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
  /**
   * How long a forwarded key read or page waits for the partition's owner before it asks the partition's
   * standbys as well (when it has any, and the read does not requireActive); the first to answer
   * stands. A silent owner — cut off or paused, where a dead one refuses at once — then costs a
   * read this long instead of forwardTimeoutMs plus the bound wait. An owner that is only slow,
   * or waiting for the read's positionBound, is hedged as well: the standbys do the same read
   * (they honour the bound too), work spent for a sooner answer. A standby host asked in the
   * owner's stead is hedged the same way: after this long without its answer, the keys that have a
   * next standby host ask that one too. A range or prefix page hedges its owners likewise, when
   * every partition asked of the owner has a standby (gather-page.ts). 0 never asks before the
   * owner, or the standby host before, has failed. Default 1 000.
   */
  readonly forwardHedgeMs?: number;
  /** Who may call: see AuthOptions. Default: anonymous, on loopback only. */
  readonly auth?: AuthOptions;
  /**
   * Origins granted CORS (exact, e.g. https://dash.example.com), with credentials. Default:
   * none, so no browser page of another origin may read an answer.
   */
  readonly corsOrigins?: readonly string[];
  /** Turns GraphiQL and introspection off unless they are set explicitly. Default false. */
  readonly production?: boolean;
  /** Default true (false with `production`). */
  readonly graphiql?: boolean;
  /** Schema introspection (__schema, __type). Default true (false with `production`). */
  readonly introspection?: boolean;
  /** Largest request body on any path, in bytes. Default 1 MiB. */
  readonly maxBodyBytes?: number;
  /** Per-client request rate (clients: token subject, API key, or anonymous address). Default: none. */
  readonly rateLimit?: RateLimitOptions;
  /** Open subscriptions per client. Default 100. */
  readonly maxSubscriptionsPerClient?: number;
  /**
   * Entries one request may ask for over all its fields (getMany keys, first/last of pages,
   * subscribed keys), whether given as literals or variables — armor's cost limit sees
   * literals only. Default maxCost / 40 (armor's estimate of an entry is ≈ 40).
   */
  readonly maxEntriesPerRequest?: number;
  /**
   * How long the snapshot a range or prefix listing started from stays pinned for its later
   * pages, in ms from its first page; a cursor used later, or on another instance, fails
   * STALE_CURSOR (docs/architecture.md §5). 0 pins nothing: each page is read at the state it
   * meets, and a cursor continues on any instance. Default 30 000.
   */
  readonly cursorSnapshotTtlMs?: number;
  /** Listing snapshots this gateway holds at most; a new listing evicts the oldest. Default 1000. */
  readonly maxPinnedSnapshots?: number;
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

export type ResolvedGatewayOptions = Required<Omit<GatewayOptions, 'schemaPath' | 'metrics' | 'auth' | 'rateLimit' | 'production'>> & {
  readonly schemaPath: string | undefined;
  readonly metrics: Registry | undefined;
  /** The gate built from `auth`, the body limit and the rate limit. */
  readonly gate: RequestGate;
  /** How forwards reach the owners: forwardTimeoutMs and the cluster secret they are signed with. */
  readonly peer: PeerLink;
};

/** The gate `options` describe; INVALID_CONFIG on a bad combination. */
function buildGate(options: GatewayOptions, graphqlEndpoint: string, maxBodyBytes: number, maxSubscriptionsPerClient: number): RequestGate {
  const auth = options.auth ?? {};
  const jwt = auth.jwt === undefined ? undefined : auth.jwt instanceof JwtVerifier ? auth.jwt : new JwtVerifier(auth.jwt);
  const apiKeys = auth.apiKeys === undefined ? undefined : auth.apiKeys instanceof ApiKeys ? auth.apiKeys : new ApiKeys(auth.apiKeys);
  if (auth.clusterSecret !== undefined && auth.clusterSecret.length < 32) {
    throw new IqgateError('INVALID_CONFIG', 'the cluster secret needs at least 32 characters');
  }
  for (const origin of options.corsOrigins ?? []) {
    let exact = false;
    try {
      exact = new URL(origin).origin === origin;
    } catch {
      exact = false;
    }
    if (!exact) throw new IqgateError('INVALID_CONFIG', `CORS origin ${JSON.stringify(origin)} is not an origin (scheme://host[:port], no path or trailing slash)`);
  }
  const chosen = jwt !== undefined || apiKeys !== undefined || auth.anonymous !== undefined;
  return new RequestGate({
    graphqlEndpoint,
    anonymous: auth.anonymous ?? !chosen,
    anonymousByDefault: !chosen,
    jwt,
    apiKeys,
    clusterSecret: auth.clusterSecret,
    maxBodyBytes,
    rateLimit: options.rateLimit === undefined ? undefined : new RateLimiter(options.rateLimit),
    maxSubscriptionsPerClient,
  });
}

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
    forwardHedgeMs: options.forwardHedgeMs ?? 1_000,
    cursorSnapshotTtlMs: options.cursorSnapshotTtlMs ?? DEFAULT_CURSOR_SNAPSHOT_TTL_MS,
    maxPinnedSnapshots: options.maxPinnedSnapshots ?? DEFAULT_MAX_PINNED_SNAPSHOTS,
    graphiql: options.graphiql ?? !(options.production ?? false),
    introspection: options.introspection ?? !(options.production ?? false),
    corsOrigins: options.corsOrigins ?? [],
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    maxSubscriptionsPerClient: options.maxSubscriptionsPerClient ?? 100,
    maxEntriesPerRequest: options.maxEntriesPerRequest ?? Math.max(1, Math.floor((options.maxCost ?? 100 * (options.maxPageSize ?? 1000)) / 40)),
    gate: buildGate(options, options.graphqlEndpoint ?? '/graphql', options.maxBodyBytes ?? 1024 * 1024, options.maxSubscriptionsPerClient ?? 100),
    peer: { timeoutMs: options.forwardTimeoutMs ?? 5_000, secret: options.auth?.clusterSecret, health: new PeerHealth() },
    graphqlEndpoint: options.graphqlEndpoint ?? '/graphql',
    schemaPath: options.schemaPath,
    metrics: options.metrics,
    logging: options.logging ?? true,
    onPartitionError: options.onPartitionError ?? ((options.logging ?? true) ? logPartitionError : () => undefined),
  };
  for (const name of ['maxPageSize', 'defaultPageSize', 'maxDepth', 'maxCost', 'maxAliases', 'maxDirectives', 'maxTokens', 'maxBufferedEvents', 'forwardTimeoutMs', 'maxBodyBytes', 'maxSubscriptionsPerClient', 'maxEntriesPerRequest', 'maxPinnedSnapshots'] as const) {
    const value = resolved[name];
    if (!Number.isInteger(value) || value < 1) throw new TypeError(`gateway option ${name} must be a positive integer, got ${String(value)}`);
  }
  for (const name of ['maxBoundTimeoutMs', 'cursorSnapshotTtlMs', 'forwardHedgeMs'] as const) {
    const value = resolved[name];
    if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`gateway option ${name} must be a non-negative integer, got ${String(value)}`);
  }
  if (resolved.defaultPageSize > resolved.maxPageSize) throw new TypeError('gateway option defaultPageSize exceeds maxPageSize');
  return resolved;
}
