/**
 * The one gate every request passes, whichever way it came in: the node:http fast path
 * (node-fast-path.ts) and yoga's plugin chain (use-request-gate.ts, first of the plugins, so
 * GraphiQL, SSE subscriptions, /dashboard and /metrics are behind it too) call the same
 * `check`. In order:
 *
 *  1. /health and /ready stay open to a plain GET or HEAD (probes carry no credentials and
 *     learn nothing). Not with a query string: yoga takes any URL that ends in the GraphQL
 *     endpoint for a GraphQL request, so `/health?/graphql` would have run an operation
 *     unauthenticated (use-request-gate.ts refuses such URLs before this too).
 *  2. A declared body larger than maxBodyBytes: BODY_TOO_LARGE (413).
 *  3. CSRF prevention, as yoga's CSRF plugin and the GraphQL-over-HTTP spec suggest: a GET
 *     carrying an operation, or a POST that is not JSON (a form can send those cross-site
 *     without a preflight), must carry a header a browser sends only after a CORS preflight.
 *  4. Who it is: a forwarded request must carry a valid instance signature (peer-signature.ts);
 *     else a bearer JWT, an API key (bearer, x-api-key, or HTTP Basic's password), or nothing
 *     at all in anonymous mode. Credentials that are presented and wrong are refused even in
 *     anonymous mode: a client with a broken token should hear so, not read as someone else.
 *  5. The client's rate limit (429 with Retry-After).
 *
 * What a principal may read is decided per store where the store is named
 * (gateway-context.ts's readableStore).
 */
import { Buffer } from 'node:buffer';
import { IqgateError } from '../../errors.js';
import { ApiKeys } from './api-keys.js';
import { JwtVerifier, looksLikeJwt } from './jwt-verifier.js';
import { verifyForward } from './peer-signature.js';
import { anonymous, PEER, type Principal } from './principal.js';
import { RateLimiter } from './rate-limiter.js';

/** Marks a request another instance forwarded (its value: the signature, peer-signature.ts). */
export const FORWARDED_HEADER = 'x-iqgate-forwarded';

/** Headers a cross-site form or image cannot send; yoga's plugin and Apollo's use these. */
export const CSRF_HEADERS = ['x-graphql-yoga-csrf', 'graphql-require-preflight', 'apollo-require-preflight'] as const;

const OPEN_PATHS = new Set(['/health', '/ready']);
const JSON_TYPES = ['application/json', 'application/graphql-response+json'];

/** What the gate reads of a request; built from a node request or a fetch Request. */
export interface GateRequest {
  readonly method: string;
  readonly path: string;
  /** The URL's query string ('?…', or '' or absent without one). */
  readonly search?: string;
  /** True for a GET whose query string carries an operation (`query=`). */
  readonly getOperation: boolean;
  header(name: string): string | undefined;
  readonly remoteAddress: string | undefined;
  /** The body, read only to verify a forwarded request's signature. */
  body(): Uint8Array | Promise<Uint8Array>;
}

export interface GateOptions {
  readonly graphqlEndpoint: string;
  /** Requests without credentials pass as `anonymous` (every store). */
  readonly anonymous: boolean;
  /** Anonymous because nothing was configured (not chosen by name): listening beyond loopback refuses it. */
  readonly anonymousByDefault: boolean;
  readonly jwt: JwtVerifier | undefined;
  readonly apiKeys: ApiKeys | undefined;
  readonly clusterSecret: string | undefined;
  readonly maxBodyBytes: number;
  readonly rateLimit: RateLimiter | undefined;
  readonly maxSubscriptionsPerClient: number;
}

/** An IqgateError the gate answers with, and its HTTP status and headers (the body is rejectionBody's JSON). */
export function gateRejection(error: IqgateError): { status: number; headers: Record<string, string> } {
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  let status = 400;
  switch (error.code) {
    case 'UNAUTHENTICATED':
      status = 401;
      headers['www-authenticate'] = String(error.details.challenge ?? 'Bearer realm="iqgate"');
      break;
    case 'FORBIDDEN':
    case 'CSRF_CHECK_FAILED':
      status = 403;
      break;
    case 'RATE_LIMITED':
      status = 429;
      headers['retry-after'] = String(error.details.retryAfterSeconds ?? 1);
      break;
    case 'BODY_TOO_LARGE':
      status = 413;
      break;
  }
  return { status, headers };
}

/** The JSON body of a rejection, shaped as a GraphQL response with one coded error. */
export function rejectionBody(error: IqgateError): string {
  return JSON.stringify({ errors: [{ message: error.message, extensions: { code: error.code } }] });
}

export class RequestGate {
  private readonly subscriptions = new Map<string, number>();
  private readonly challenge: string;

  constructor(readonly options: GateOptions) {
    // A browser asks for a user and password on a Basic challenge: with API keys, the dashboard
    // and GraphiQL open in a browser with the key as the password. Basic first: Chromium reads
    // only the first challenge of the header, and with Bearer first it never asked (audit,
    // 2026-12-06). One header, not one per challenge: yoga's responses are fetch Responses, whose
    // headers hold one value per name.
    this.challenge = options.apiKeys === undefined ? 'Bearer realm="iqgate"' : 'Basic realm="iqgate", charset="UTF-8", Bearer realm="iqgate"';
  }

  /** Whether listening beyond loopback must be refused (no authentication chosen). */
  get openByDefault(): boolean {
    return this.options.anonymousByDefault;
  }

  /** The request's principal, or an IqgateError to answer with (see gateRejection). */
  check(request: GateRequest): Principal | Promise<Principal> {
    if (OPEN_PATHS.has(request.path) && (request.method === 'GET' || request.method === 'HEAD') && (request.search ?? '') === '') return anonymous(request.remoteAddress);
    const length = request.header('content-length');
    if (length !== undefined && Number(length) > this.options.maxBodyBytes) {
      throw new IqgateError('BODY_TOO_LARGE', `The request body is larger than ${this.options.maxBodyBytes} bytes.`);
    }
    if (request.path === this.options.graphqlEndpoint && this.csrfExposed(request) && !CSRF_HEADERS.some((name) => request.header(name) !== undefined)) {
      throw new IqgateError('CSRF_CHECK_FAILED', `A GET or non-JSON POST operation needs one of the headers ${CSRF_HEADERS.join(', ')}.`);
    }
    const principal = this.authenticate(request);
    return principal instanceof Promise ? principal.then((p) => this.limit(p)) : this.limit(principal);
  }

  /**
   * Takes a subscription slot for `principal`'s client; call the returned function when the
   * subscription ends (any number of times). TOO_MANY_SUBSCRIPTIONS when the client holds its maximum.
   */
  openSubscription(principal: Principal): () => void {
    const client = principal.client;
    const open = this.subscriptions.get(client) ?? 0;
    if (open >= this.options.maxSubscriptionsPerClient) {
      throw new IqgateError('TOO_MANY_SUBSCRIPTIONS', `At most ${this.options.maxSubscriptionsPerClient} open subscriptions per client.`);
    }
    this.subscriptions.set(client, open + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.subscriptions.get(client) ?? 1) - 1;
      if (now <= 0) this.subscriptions.delete(client);
      else this.subscriptions.set(client, now);
    };
  }

  private csrfExposed(request: GateRequest): boolean {
    if (request.method === 'GET') return request.getOperation;
    if (request.method !== 'POST') return false;
    const type = request.header('content-type')?.split(';')[0]?.trim().toLowerCase();
    return type === undefined || !JSON_TYPES.includes(type);
  }

  private unauthenticated(message: string): IqgateError {
    return new IqgateError('UNAUTHENTICATED', message, { details: { challenge: this.challenge } });
  }

  private authenticate(request: GateRequest): Principal | Promise<Principal> {
    const marker = request.header(FORWARDED_HEADER);
    if (marker !== undefined) return this.peer(request, marker);
    const authorization = request.header('authorization');
    const apiKey = request.header('x-api-key');
    if (authorization === undefined && apiKey === undefined) {
      if (this.options.anonymous) return anonymous(request.remoteAddress);
      throw this.unauthenticated('Authentication required: send a bearer token or an API key.');
    }
    if (apiKey !== undefined) return this.byKey(apiKey);
    const space = authorization!.indexOf(' ');
    const scheme = space < 0 ? authorization! : authorization!.slice(0, space);
    const credentials = space < 0 ? '' : authorization!.slice(space + 1).trim();
    if (/^bearer$/i.test(scheme) && credentials.length > 0) {
      if (this.options.jwt !== undefined && looksLikeJwt(credentials)) return this.options.jwt.cached(credentials) ?? this.options.jwt.verify(credentials);
      return this.byKey(credentials);
    }
    if (/^basic$/i.test(scheme)) {
      const decoded = Buffer.from(credentials, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon >= 0) return this.byKey(decoded.slice(colon + 1));
    }
    throw this.unauthenticated('Unsupported or malformed Authorization header.');
  }

  private byKey(key: string): Principal {
    const principal = this.options.apiKeys?.find(key);
    if (principal === undefined) throw this.unauthenticated('Invalid API key.');
    return principal;
  }

  /** A forward: verified against the cluster secret; unverifiable ones only in anonymous mode. */
  private peer(request: GateRequest, marker: string): Principal | Promise<Principal> {
    const secret = this.options.clusterSecret;
    if (secret === undefined) {
      // Anonymous mode without a secret: the marker grants nothing anyone lacks (it only stops
      // the request from being forwarded again).
      if (this.options.anonymous) return anonymous(request.remoteAddress, true);
      throw this.unauthenticated('A forwarded request needs an instance signature, and no cluster secret is configured.');
    }
    const verify = (body: Uint8Array): Principal => {
      if (!verifyForward(secret, marker, request.method, request.path, body)) throw this.unauthenticated('Invalid instance signature.');
      return PEER;
    };
    const body = request.body();
    return body instanceof Promise ? body.then(verify) : verify(body);
  }

  private limit(principal: Principal): Principal {
    // Verified forwards are limited where the client sent them. A merely marked one (anonymous
    // gateway, no cluster secret) is not exempt: any client could set the marker.
    if (this.options.rateLimit === undefined || principal.via === 'peer') return principal;
    const wait = this.options.rateLimit.take(principal.client);
    if (wait > 0) throw new IqgateError('RATE_LIMITED', `Rate limit exceeded; retry in ${wait} s.`, { details: { retryAfterSeconds: wait } });
    return principal;
  }
}
