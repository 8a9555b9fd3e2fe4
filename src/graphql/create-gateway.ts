/**
 * The GraphQL gateway as a value: a graphql-yoga server over the query engine, built without
 * listening (main.ts, tests and benchmarks hand it to node:http, or call `yoga.fetch`).
 * Every request passes the request gate first (gate/); GraphiQL is on unless `production`; graphql-armor bounds depth, cost, aliases, directives and tokens; each of
 * its rejections gets a stable code; other errors are masked (mask-error.ts). Besides the
 * GraphQL endpoint: GET /health (liveness), GET /ready (200 while the instance serves, else
 * 503) and, given a registry, GET /metrics.
 */
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { GraphQLError, type ASTVisitor, type FieldNode, type ValidationContext } from 'graphql';
import { createSchema, createYoga, useReadinessCheck, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { useDashboard } from '../dashboard/dashboard-route.js';
import type { ErrorCode } from '../errors.js';
import { QueryEngine } from '../query/query-engine.js';
import { isServing } from '../query/state-provider.js';
import type { GatewayContext } from './gateway-context.js';
import { resolveGatewayOptions, type GatewayOptions, type ResolvedGatewayOptions } from './gateway-options.js';
import { NOBODY, type Principal } from './gate/principal.js';
import { admitFetchRequest, principalOf, useRequestGate } from './gate/use-request-gate.js';
import { graphiqlDefaultQuery } from './graphiql-default-query.js';
import { loadSchemaText } from './load-schema.js';
import { gatewayLogger } from './gateway-logger.js';
import { maskError } from './mask-error.js';
import { withNodeFastPath } from './node-fast-path.js';
import { GatewayMetrics, useGatewayMetrics } from './gateway-metrics.js';
import { KnownOperations, useKnownOperations } from './known-operations.js';
import { useMetricsEndpoint } from './metrics-endpoint.js';
import { monitorResolvers } from './monitor-resolvers.js';
import { queryResolvers } from './query-resolvers.js';
import { useRequestErrorCodes } from './request-error-codes.js';
import { JSONScalar, KeyScalar, PositionScalar } from './scalars.js';
import { subscriptionResolvers } from './subscription-resolvers.js';

export type Gateway = YogaServerInstance<object, GatewayContext>;

/** Tags an armor rejection with our code; armor's errors carry none. */
function coded(code: ErrorCode) {
  return [(_: unknown, error: GraphQLError) => {
    (error.extensions as Record<string, unknown>).code = code;
  }];
}

/** The executable schema: schema.graphql plus the resolvers (a plain graphql-js schema). */
export function createGatewaySchema(schemaPath?: string) {
  return createSchema<GatewayContext>({
    typeDefs: loadSchemaText(schemaPath),
    resolvers: [{ JSON: JSONScalar, Key: KeyScalar, Position: PositionScalar }, queryResolvers, subscriptionResolvers, monitorResolvers],
  });
}

/**
 * A fresh context per operation, for the principal the request gate admitted: the key loaders
 * and the entries budget must not outlive one request.
 */
export function createContextFactory(options: ResolvedGatewayOptions, engine = createQueryEngine(options)): (principal: Principal) => GatewayContext {
  return (principal) => ({ engine, provider: options.provider, options, keyLoaders: new Map(), principal, budget: { entries: 0 } });
}

/** The gateway's query engine: one per gateway, so one set of pinned listing snapshots. */
export function createQueryEngine(options: ResolvedGatewayOptions): QueryEngine {
  return new QueryEngine(options.provider, {
    onPartitionError: options.onPartitionError,
    cursorSnapshotTtlMs: options.cursorSnapshotTtlMs,
    maxPinnedSnapshots: options.maxPinnedSnapshots,
  });
}

/** gateway.dispose() releases the listing snapshots the engine still pins. */
function useEngineDisposal(engine: QueryEngine): Plugin {
  return { onDispose: () => engine.close() };
}

/**
 * Introspection off (production): __schema and __type fail validation (__typename stays).
 * Our own rule, not graphql's NoSchemaIntrospectionCustomRule: that one compares types with
 * instanceof, which fails when a bundler or vitest loads the other build of graphql.
 */
function noIntrospection(context: ValidationContext): ASTVisitor {
  return {
    Field(node: FieldNode) {
      if (node.name.value === '__schema' || node.name.value === '__type') {
        context.reportError(new GraphQLError(`Schema introspection is turned off on this gateway (${node.name.value}).`, { nodes: node }));
      }
    },
  };
}

function useNoIntrospection(): Plugin {
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(noIntrospection);
    },
  };
}

export function createGateway(gatewayOptions: GatewayOptions): Gateway {
  const options = resolveGatewayOptions(gatewayOptions);
  const schema = createGatewaySchema(options.schemaPath);
  const engine = createQueryEngine(options);
  const context = createContextFactory(options, engine);
  const metrics = options.metrics === undefined ? undefined : new GatewayMetrics(options.metrics, options.graphqlEndpoint, { pinnedSnapshots: () => engine.pinnedSnapshots() });
  // Queries yoga validated once are then served by the node:http fast path (node-fast-path.ts).
  const known = new KnownOperations();
  const yoga = createYoga<object, GatewayContext>({
    schema,
    graphqlEndpoint: options.graphqlEndpoint,
    // GraphiQL opens on an example over the application's own stores, derived per page load.
    // Yoga's GraphiQL plugin answers before ours: the page is rendered only for a request the
    // gate admits (else it goes on to the gate's plugin, which refuses it).
    graphiql: options.graphiql && (async (request, serverContext) =>
      (await admitFetchRequest(options.gate, request, serverContext)) === undefined ? false : { defaultQuery: await graphiqlDefaultQuery(options.provider) }),
    // Yoga's default GraphiQL page loads its scripts from a CDN; a sidecar behind a firewall or
    // an offline dashboard would show a blank page. render-graphiql inlines them — 30 MB of
    // source held in memory once loaded, so it is loaded by the first GraphiQL request only.
    renderGraphiQL: async (graphiqlOptions) => (await import('@graphql-yoga/render-graphiql')).renderGraphiQL(graphiqlOptions),
    // Yoga's logger, but an error answering a client's request is not a server error.
    logging: options.logging ? gatewayLogger() : false,
    landingPage: false,
    maskedErrors: { maskError: (error) => maskError(error) },
    // Exact origins only, with credentials; none by default (yoga's default grants any origin).
    // Per request, so an origin not listed gets no CORS header at all (yoga's own list form
    // would answer it `null`, which a sandboxed page's origin matches).
    cors: options.corsOrigins.length === 0 ? false : (request) => {
      const origin = request.headers.get('origin');
      return origin !== null && options.corsOrigins.includes(origin) ? { origin: [origin], credentials: true } : false;
    },
    // A request the gate never saw cannot happen (its plugin is first); if it did, it reads nothing.
    context: ({ request }) => context(principalOf(request) ?? NOBODY),
    plugins: [
      // First: nothing below (GraphiQL, SSE, /dashboard, /metrics) answers before the gate.
      useRequestGate(options.gate, metrics === undefined ? undefined : (error) => metrics.countErrors([error])),
      useRequestErrorCodes(),
      // GET /dashboard: the operator's page over this endpoint (src/dashboard/).
      useDashboard({ graphqlEndpoint: options.graphqlEndpoint }),
      // GET /health (yoga's own) answers while the process lives; GET /ready only while the
      // instance serves queries, for load balancers and Kubernetes: the provider's ready() (the
      // runtime's: every assigned task RUNNING), else RUNNING or REBALANCING.
      useReadinessCheck({ endpoint: '/ready', check: () => options.provider.ready?.() ?? isServing(options.provider.instanceState()) }),
      ...(options.metrics === undefined || metrics === undefined ? [] : [useMetricsEndpoint(options.metrics), useGatewayMetrics(metrics, options.graphqlEndpoint)]),
      EnvelopArmorPlugin({
        maxDepth: { n: options.maxDepth, onReject: coded('QUERY_TOO_DEEP') },
        costLimit: { maxCost: options.maxCost, onReject: coded('QUERY_TOO_COSTLY') },
        maxAliases: { n: options.maxAliases, onReject: coded('TOO_MANY_ALIASES') },
        maxDirectives: { n: options.maxDirectives, onReject: coded('TOO_MANY_DIRECTIVES') },
        maxTokens: { n: options.maxTokens, onReject: coded('TOO_MANY_TOKENS') },
        blockFieldSuggestion: { enabled: true },
      }),
      ...(options.introspection ? [] : [useNoIntrospection()]),
      useKnownOperations(known),
      useEngineDisposal(engine),
    ],
  });
  return withNodeFastPath(yoga, { schema, graphqlEndpoint: options.graphqlEndpoint, known, context, metrics, gate: options.gate });
}
