/**
 * Puts a gateway (built without listening by createGateway) on a node:http server. The one
 * place that listens, used by src/main.ts and by embedders who want a sidecar-style server.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Gateway } from './create-gateway.js';

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
}

export async function listenGateway(gateway: Gateway, options: ListenOptions): Promise<ListeningGateway> {
  const onRequest = options.onRequest;
  const server = onRequest === undefined ? createServer(gateway) : createServer((request, response) => {
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
  });
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
    url: `http://${host}:${port}${gateway.graphqlEndpoint}`,
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
