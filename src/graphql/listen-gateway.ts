/**
 * Puts a gateway (built without listening by createGateway) on a node:http server. The one
 * place that listens, used by src/main.ts and by embedders who want a sidecar-style server.
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { isIP, type AddressInfo } from 'node:net';
import { IqgateError } from '../errors.js';
import type { Gateway } from './create-gateway.js';
import { requestGateOf } from './node-fast-path.js';

export interface ListeningGateway {
  /** e.g. http://127.0.0.1:4000/graphql (GraphiQL opens there in a browser). */
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  /** Stops accepting, ends open SSE streams, resolves when the server is closed. */
  close(): Promise<void>;
}

export interface ListenOptions {
  readonly port: number;
  readonly host: string;
  /**
   * Called as each request starts; the function it returns once the request no longer waits:
   * when its response head is written (explicitly or by the first write) or the connection
   * closes, whichever comes first (called once). A streamed response (SSE) stops waiting when
   * it starts streaming. serve() tells the runtime, which lends the event loop to waiting
   * requests (src/runtime/query-share.ts).
   */
  readonly onRequest?: () => () => void;
  /** Serve HTTPS with this certificate chain and key (PEM); the URL then says https. */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /** Time to receive a request's headers, and the whole request. Defaults 10 s and 30 s (a slow client holds no socket for long). */
  readonly headersTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
}

/** 127.0.0.0/8, ::1 and localhost: addresses only this machine reaches. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost' || bare === '::1') return true;
  return isIP(bare) === 4 && bare.startsWith('127.');
}

/**
 * Listens on `options.host`. A gateway that is anonymous because no authentication was chosen
 * (gateway-options.ts's AuthOptions) listens on loopback only: anywhere else, INVALID_CONFIG.
 */
export async function listenGateway(gateway: Gateway, options: ListenOptions): Promise<ListeningGateway> {
  if (requestGateOf(gateway)?.openByDefault === true && !isLoopback(options.host)) {
    throw new IqgateError(
      'INVALID_CONFIG',
      `the gateway has no authentication configured and would serve anyone on ${options.host}: configure API keys or JWTs (auth.apiKeys, auth.jwt; IQGATE_API_KEYS_FILE, IQGATE_JWT_JWKS_URL), or choose anonymous access (auth.anonymous; IQGATE_ANONYMOUS=true), or listen on 127.0.0.1`,
    );
  }
  const onRequest = options.onRequest;
  const listener: RequestListener = onRequest === undefined ? gateway : (request, response) => {
    const finished = onRequest();
    let waiting = true;
    const done = (): void => {
      if (!waiting) return;
      waiting = false;
      finished();
    };
    const writeHead = response.writeHead;
    response.writeHead = function (this: typeof response, ...args: Parameters<typeof writeHead>) {
      done();
      return writeHead.apply(this, args);
    } as typeof writeHead;
    response.once('close', done);
    void gateway(request, response);
  };
  const timeouts = { headersTimeout: options.headersTimeoutMs ?? 10_000, requestTimeout: options.requestTimeoutMs ?? 30_000 };
  const server: Server = options.tls === undefined
    ? createServer(timeouts, listener)
    : (createTlsServer({ ...timeouts, cert: options.tls.cert, key: options.tls.key }, listener) as unknown as Server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `${options.tls === undefined ? 'http' : 'https'}://${host}:${port}${gateway.graphqlEndpoint}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        // SSE subscriptions keep connections open: close them, or close() never returns.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
