/**
 * The gateway's hot path on node:http: a POST of a query yoga has already validated (a known
 * operation, known-operations.ts) is executed by yoga's own executor (@graphql-tools/executor,
 * which also resolves the same copy of graphql as the schema: under a bundler or vitest, our
 * `import 'graphql'` may load the other build, whose execute rejects the schema) straight from
 * the node request
 * and answered straight to the node response — no fetch Request/Response objects, body
 * streams, abort controllers or plugin chain per request, which cost more than the query
 * itself (a CPU profile of bench:query had yoga's HTTP layer at ~60% of a single-key request).
 *
 * What a client sees does not change: errors are masked by the same maskError (and logged by
 * yoga's logger when masked, as yoga does), the status, content type and body come from yoga's
 * own result processor (`processRegularResult`) for the media type yoga would have chosen, and
 * the request duration and error codes go to the same GatewayMetrics. Limits hold because a
 * document is known only after it passed every validation rule, armor's included.
 *
 * Everything else goes to yoga untouched: other methods and paths, GraphiQL, SSE and multipart
 * accepts, CORS requests (an Origin header), compressed or chunked bodies, bodies over 256 KiB,
 * and — once the body is read — bodies that are not a plain {query, variables, operationName},
 * unknown query texts, subscriptions. Those get the body already read as `request.body`, the
 * way body parsers leave it, which yoga's server adapter reads instead of the stream.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { execute } from '@graphql-tools/executor';
import { getOperationAST, type DocumentNode, type ExecutionResult, type GraphQLError, type GraphQLSchema } from 'graphql';
import { processRegularResult, type FetchAPI, type YogaServerInstance } from 'graphql-yoga';
import { IqgateError } from '../errors.js';
import type { Principal } from './gate/principal.js';
import { gateRejection, rejectionBody, type GateRequest, type RequestGate } from './gate/request-gate.js';
import { admitNodeRequest } from './gate/use-request-gate.js';
import type { GatewayContext } from './gateway-context.js';
import type { GatewayMetrics } from './gateway-metrics.js';
import type { KnownOperations } from './known-operations.js';
import { maskError } from './mask-error.js';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';

type Gateway = YogaServerInstance<object, GatewayContext>;

/** Larger bodies (a getMany of 1000 long keys is ~50 KiB) are rare: yoga reads them. */
const MAX_BODY_BYTES = 256 * 1024;

export interface FastPathOptions {
  readonly schema: GraphQLSchema;
  readonly graphqlEndpoint: string;
  readonly known: KnownOperations;
  /** The gateway's context factory (one set of key loaders per request). */
  readonly context: (principal: Principal) => GatewayContext;
  readonly metrics: GatewayMetrics | undefined;
  /** The request gate yoga's first plugin runs too: a fast-path answer passes it first. */
  readonly gate: RequestGate;
}

/** How many requests the fast path answered and handed to yoga; for tests and benchmarks. */
export interface FastPathStats {
  answered: number;
  handedToYoga: number;
}

export const FAST_PATH_STATS = Symbol('iqgate.fastPathStats');
const REQUEST_GATE = Symbol('iqgate.requestGate');

/** The request gate of a gateway built by createGateway (listenGateway asks it before listening). */
export function requestGateOf(gateway: object): RequestGate | undefined {
  return (gateway as { [REQUEST_GATE]?: RequestGate })[REQUEST_GATE];
}

/** Reads the stats of a gateway built by createGateway (undefined for any other handler). */
export function fastPathStats(gateway: object): FastPathStats | undefined {
  return (gateway as { [FAST_PATH_STATS]?: FastPathStats })[FAST_PATH_STATS];
}

/**
 * A body already read, in the form whatwg-node's server adapter takes instead of the request
 * stream: an async iterable with an own key (it checks `Object.keys(body).length`, which on a
 * Buffer lists every byte: 70 ms for 256 KiB).
 */
class ReadBody implements AsyncIterable<Buffer> {
  constructor(readonly bytes: Buffer) {}

  async *[Symbol.asyncIterator](): AsyncIterator<Buffer> {
    yield this.bytes;
  }
}

/** processRegularResult builds `new fetchAPI.Response(body, init)`: this one only keeps them. */
class CapturedResponse {
  constructor(
    readonly body: string,
    readonly init: { readonly status: number; readonly headers: Record<string, string> },
  ) {}
}
const CAPTURE = { Response: CapturedResponse } as unknown as FetchAPI;

const REGULAR_MEDIA_TYPES = ['application/graphql-response+json', 'application/json'] as const;

/**
 * The media type yoga's result processors pick for a non-streamed result, or undefined when
 * that is not a regular JSON response (406, SSE, multipart). Yoga reads the Accept list from
 * its end and lets the last match win, its regular (JSON) processor after the streaming ones.
 */
function regularMediaType(accept: string | undefined): string | undefined {
  const requested = (accept || '*/*').replace(/\s/g, '').toLowerCase().split(',');
  let chosen: string | undefined;
  for (let i = requested.length - 1; i >= 0; i--) {
    const [mediaType, ...params] = requested[i]!.split(';');
    const charset = params.find((param) => param.includes('charset=')) ?? 'charset=utf-8';
    if (mediaType === undefined || charset !== 'charset=utf-8') continue;
    const [pre, suf] = mediaType.split('/');
    for (const candidate of REGULAR_MEDIA_TYPES) {
      const [candidatePre, candidateSuf] = candidate.split('/');
      if ((pre === '*' || pre === candidatePre) && (suf === '*' || suf === candidateSuf)) chosen = candidate;
    }
  }
  return chosen;
}

/** Accept headers repeat (one per client library): the choice is remembered for a few of them. */
const mediaTypes = new Map<string | undefined, string | null>();
function mediaTypeFor(accept: string | undefined): string | undefined {
  let chosen = mediaTypes.get(accept);
  if (chosen === undefined) {
    chosen = regularMediaType(accept) ?? null;
    if (mediaTypes.size < 64) mediaTypes.set(accept, chosen);
  }
  return chosen ?? undefined;
}

/** Yoga's POST JSON parser takes the first content type listed, with or without parameters. */
function isJsonContentType(contentType: string | undefined): boolean {
  const first = contentType?.split(',')[0];
  return first === 'application/json' || first?.startsWith('application/json;') === true;
}

/** The media type to answer with, when the fast path may read this request; else undefined. */
function eligible(request: IncomingMessage, graphqlEndpoint: string): string | undefined {
  if (request.method !== 'POST' || request.url !== graphqlEndpoint) return undefined;
  const headers = request.headers;
  if (!isJsonContentType(headers['content-type'])) return undefined;
  if (headers.origin !== undefined || headers['content-encoding'] !== undefined || headers['transfer-encoding'] !== undefined) return undefined;
  const length = headers['content-length'];
  if (length === undefined || !/^\d+$/.test(length) || Number(length) > MAX_BODY_BYTES) return undefined;
  return mediaTypeFor(headers.accept);
}

interface FastParams {
  readonly query: string;
  readonly variables: Record<string, unknown> | null | undefined;
  readonly operationName: string | null | undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A body of exactly the common shape; anything else (extensions, extra keys) is yoga's. */
function fastParams(body: unknown): FastParams | undefined {
  if (!isPlainObject(body)) return undefined;
  for (const key in body) {
    if (key !== 'query' && key !== 'variables' && key !== 'operationName') return undefined;
  }
  const { query, variables, operationName } = body;
  if (typeof query !== 'string') return undefined;
  if (variables != null && !isPlainObject(variables)) return undefined;
  if (operationName != null && typeof operationName !== 'string') return undefined;
  return { query, variables, operationName };
}

/**
 * What resolvers read of `context.request`: the headers (forwarded requests are marked) and a
 * signal that aborts when the client goes away before its answer is sent.
 */
class NodeRequestView {
  private controller: AbortController | undefined;

  constructor(
    private readonly request: IncomingMessage,
    private readonly response: ServerResponse,
  ) {}

  /** Read when keys are forwarded (is this request itself a forward?): made on first use. */
  get headers(): { get(name: string): string | null } {
    const headers = this.request.headers;
    return {
      get(name) {
        const value = headers[name.toLowerCase()];
        return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
      },
    };
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const controller = (this.controller = new AbortController());
      const response = this.response;
      // Made on first use (a wait for a bound, a forward): the client may be gone already.
      if (response.destroyed) controller.abort();
      else {
        response.once('close', () => {
          if (!response.writableFinished) controller.abort();
        });
      }
    }
    return this.controller.signal;
  }
}

/** The gate's view of a node request whose body has been read. */
function nodeGateRequest(request: IncomingMessage, path: string, body: Buffer): GateRequest {
  const headers = request.headers;
  return {
    method: request.method ?? 'GET',
    path,
    getOperation: false,
    header(name) {
      const value = headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    remoteAddress: request.socket.remoteAddress,
    body: () => body,
  };
}

/** Reads a body sent without a length (chunked), up to `max` bytes; undefined past that. */
function readCapped(request: IncomingMessage, max: number, done: (body: Buffer | undefined) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  request.on('data', (chunk: Buffer) => {
    if (over) return;
    size += chunk.length;
    if (size > max) {
      over = true;
      chunks.length = 0;
      done(undefined);
      return;
    }
    chunks.push(chunk);
  });
  request.once('end', () => {
    if (!over) done(Buffer.concat(chunks));
  });
}

function isPromiseLike<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown }).then === 'function';
}

/**
 * The gateway with the fast path in front: the same yoga instance (fetch, dispose, properties
 * all pass through), whose node:http entry first offers each request to the fast path.
 */
export function withNodeFastPath(yoga: Gateway, options: FastPathOptions): Gateway {
  const { schema, graphqlEndpoint, known, context, metrics, gate } = options;
  const stats: FastPathStats = { answered: 0, handedToYoga: 0 };

  const toYoga = (request: IncomingMessage, response: ServerResponse, body: Buffer): void => {
    stats.handedToYoga++;
    // As a body parser leaves it: the server adapter builds its Request from this, not the stream.
    (request as IncomingMessage & { body?: ReadBody }).body = new ReadBody(body);
    void yoga(request, response);
  };

  const respond = (response: ServerResponse, result: ExecutionResult, mediaType: string, startedAt: number): void => {
    if (response.destroyed || response.writableEnded) return;
    let answer = result;
    if (result.errors !== undefined) {
      const errors = result.errors.map((error) => {
        const masked = maskError(error) as GraphQLError;
        // Yoga's masking logs every error it replaces (silent when logging is off).
        if (masked !== error) yoga.logger.error(error);
        return masked;
      });
      answer = { ...result, errors };
      metrics?.countErrors(errors);
    }
    let status = 200;
    let body: string;
    if (answer.errors === undefined && answer.extensions === undefined) {
      // What yoga's result processor answers for a result without errors, without its objects.
      body = JSON.stringify(answer);
      response.writeHead(200, ['content-type', `${mediaType}; charset=utf-8`, 'content-length', String(Buffer.byteLength(body))]);
    } else {
      const captured = processRegularResult(answer, CAPTURE, mediaType) as unknown as CapturedResponse;
      body = captured.body;
      status = captured.init.status;
      response.writeHead(status, { ...captured.init.headers, 'content-length': Buffer.byteLength(body) });
    }
    response.end(body);
    stats.answered++;
    metrics?.observeRequest(status, startedAt);
  };

  /** The gate's refusal, answered here as yoga's plugin would (status, challenge, coded body). */
  const refuse = (response: ServerResponse, error: IqgateError, startedAt: number | undefined): void => {
    if (response.destroyed || response.writableEnded) return;
    const { status, headers } = gateRejection(error);
    const body = rejectionBody(error);
    response.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) });
    response.end(body);
    stats.answered++;
    metrics?.countErrors([error]);
    if (startedAt !== undefined) metrics?.observeRequest(status, startedAt);
  };

  /** Runs the gate; an admitted request runs (or goes to yoga, already admitted), a refused one is answered. */
  const admit = (request: IncomingMessage, response: ServerResponse, body: Buffer, mediaType: string, startedAt: number): void => {
    const admitted = (principal: Principal): void => {
      admitNodeRequest(request, principal);
      run(request, response, body, mediaType, startedAt, principal);
    };
    const refused = (error: unknown): void => {
      // Not the gate's own refusal (a key source that failed oddly): yoga's plugin decides.
      if (error instanceof IqgateError) refuse(response, error, startedAt);
      else toYoga(request, response, body);
    };
    let principal: Principal | Promise<Principal>;
    try {
      principal = gate.check(nodeGateRequest(request, graphqlEndpoint, body));
    } catch (error) {
      refused(error);
      return;
    }
    if (isPromiseLike(principal)) principal.then(admitted, refused);
    else admitted(principal);
  };

  const run = (request: IncomingMessage, response: ServerResponse, body: Buffer, mediaType: string, startedAt: number, principal: Principal): void => {
    let params: FastParams | undefined;
    try {
      // A byte-order mark is something whatwg's decoder drops and JSON.parse refuses: yoga's.
      params = body[0] === 0xef ? undefined : fastParams(JSON.parse(body.toString('utf8')));
    } catch {
      params = undefined;
    }
    const document: DocumentNode | undefined = params === undefined ? undefined : known.get(params.query);
    if (params === undefined || document === undefined || getOperationAST(document, params.operationName)?.operation !== 'query') {
      toYoga(request, response, body);
      return;
    }
    const contextValue: GatewayContext = Object.assign(context(principal), { request: new NodeRequestView(request, response) });
    let result: ExecutionResult | Promise<ExecutionResult>;
    try {
      // A query without @defer/@stream (which the schema does not declare) has a single result.
      result = execute({ schema, document, variableValues: params.variables, operationName: params.operationName, contextValue }) as ExecutionResult | Promise<ExecutionResult>;
    } catch {
      // The executor throws only on arguments it considers a programmer's error: yoga decides.
      toYoga(request, response, body);
      return;
    }
    // Should answering fail (a result JSON.stringify refuses), yoga runs the query again and
    // answers that failure its own way, as it would have the first time.
    const answer = (value: ExecutionResult): void => {
      try {
        respond(response, value, mediaType, startedAt);
      } catch {
        if (!response.headersSent) toYoga(request, response, body);
      }
    };
    if (isPromiseLike(result)) result.then(answer, () => toYoga(request, response, body));
    else answer(result);
  };

  const handle = (request: IncomingMessage, response: ServerResponse): boolean => {
    const mediaType = eligible(request, graphqlEndpoint);
    if (mediaType === undefined) {
      // A body without a declared length escapes the gate's length check: read it here, capped.
      if (request.headers['transfer-encoding'] === undefined || request.headers['content-length'] !== undefined) return false;
      readCapped(request, gate.options.maxBodyBytes, (body) => {
        if (body !== undefined) toYoga(request, response, body);
        else {
          refuse(response, new IqgateError('BODY_TOO_LARGE', `The request body is larger than ${gate.options.maxBodyBytes} bytes.`), undefined);
          request.destroy();
        }
      });
      request.once('error', () => response.destroy());
      return true;
    }
    const startedAt = performance.now();
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.once('end', () => admit(request, response, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), mediaType, startedAt));
    // A client gone mid-body leaves no one to answer.
    request.once('error', () => response.destroy());
    return true;
  };

  return new Proxy(yoga, {
    apply(target, thisArg, args: unknown[]) {
      const [request, response] = args;
      if (request instanceof IncomingMessage && response instanceof ServerResponse && handle(request, response)) return Promise.resolve();
      return Reflect.apply(target, thisArg, args) as unknown;
    },
    get(target, property) {
      if (property === FAST_PATH_STATS) return stats;
      if (property === REQUEST_GATE) return gate;
      // EventEmitter calls a listener as `listener.apply(emitter, args)`, and yoga's own proxy
      // answers `apply`/`call`/`bind` bound to its inner handler: they must stay ours.
      if (property === 'apply' || property === 'call' || property === 'bind') return Reflect.get(Function.prototype, property) as unknown;
      return Reflect.get(target, property) as unknown;
    },
  });
}
