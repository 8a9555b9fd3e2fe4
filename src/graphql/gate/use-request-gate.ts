/**
 * The request gate (request-gate.ts) as yoga's first plugin: every request yoga answers —
 * GraphQL over POST and GET, SSE subscriptions, GraphiQL, /dashboard, /metrics — passes it
 * before any other plugin sees it. The principal goes to the operation's context through
 * `principalOf(request)`.
 */
import type { Plugin } from 'graphql-yoga';
import { isCoded } from '../mask-error.js';
import { gateRejection, rejectionBody, type RequestGate } from './request-gate.js';
import type { Principal } from './principal.js';

const principals = new WeakMap<Request, Principal>();
/** Node requests the fast path already admitted before handing them to yoga (checked once: one rate-limit token). */
const admittedNode = new WeakMap<object, Principal>();

/** Records that the node:http fast path admitted `request` as `principal`. */
export function admitNodeRequest(request: object, principal: Principal): void {
  admittedNode.set(request, principal);
}

/** The principal the gate admitted `request` as; undefined for a request it never saw. */
export function principalOf(request: Request | undefined): Principal | undefined {
  return request === undefined ? undefined : principals.get(request);
}

/** The fetch Request's view for the gate; the node adapter's socket gives the address. */
function gateRequest(request: Request, url: URL, socket: { remoteAddress?: string } | undefined) {
  return {
    method: request.method,
    path: url.pathname,
    search: url.search,
    getOperation: request.method === 'GET' && url.searchParams.has('query'),
    header: (name: string) => request.headers.get(name) ?? undefined,
    remoteAddress: socket?.remoteAddress,
    body: async () => new Uint8Array(await request.clone().arrayBuffer()),
  };
}

type ServerContext = { req?: { socket?: { remoteAddress?: string } } } | undefined;

/**
 * The principal of `request`: one recorded already (admitted for GraphiQL, or by the node:http
 * fast path before it handed the request on — checked once, one rate-limit token), else the
 * gate's answer, recorded. Throws the gate's coded refusal.
 */
async function admit(gate: RequestGate, request: Request, url: URL, serverContext: unknown): Promise<Principal> {
  const req = (serverContext as ServerContext)?.req;
  const known = principals.get(request) ?? (req === undefined ? undefined : admittedNode.get(req));
  const principal = known ?? (await gate.check(gateRequest(request, url, req?.socket)));
  principals.set(request, principal);
  return principal;
}

/**
 * The gate's check of a fetch Request outside the plugin chain, for yoga's built-in GraphiQL
 * plugin, which answers before any plugin of ours runs: the principal when admitted, else
 * undefined — the request then goes on down the chain to the plugin, which answers the refusal.
 */
export async function admitFetchRequest(gate: RequestGate, request: Request, serverContext: unknown): Promise<Principal | undefined> {
  try {
    return await admit(gate, request, new URL(request.url), serverContext);
  } catch (error) {
    if (!isCoded(error)) throw error;
    return undefined;
  }
}

/**
 * True for a URL yoga would run as a GraphQL request (its unhandled-route rule: the whole URL,
 * query string and all, ending in the endpoint, or the endpoint with a trailing slash) at a path
 * other than the endpoint itself: `/health?/graphql`, `/anything?x=/graphql`, `/graphql/`.
 * Refused with 404, so that what the gate decides by path (the open probes, the CSRF check)
 * is what yoga serves.
 */
export function strayGraphQLUrl(requestUrl: string, url: URL, endpoint: string): boolean {
  if (url.pathname === endpoint) return false;
  return requestUrl.endsWith(endpoint) || requestUrl.endsWith(`${endpoint}/`) || url.pathname === `${endpoint}/`;
}

/** `onRefused` sees each refusal (the gateway counts them in its error metric). */
export function useRequestGate(gate: RequestGate, onRefused?: (error: unknown) => void): Plugin {
  return {
    async onRequest({ request, url, serverContext, endResponse, fetchAPI }) {
      if (strayGraphQLUrl(request.url, url, gate.options.graphqlEndpoint)) {
        endResponse(new fetchAPI.Response('', { status: 404, statusText: 'Not Found' }));
        return;
      }
      try {
        await admit(gate, request, url, serverContext);
      } catch (error) {
        if (!isCoded(error)) throw error;
        onRefused?.(error);
        const { status, headers } = gateRejection(error);
        endResponse(new fetchAPI.Response(rejectionBody(error), { status, headers }));
      }
    },
  };
}
