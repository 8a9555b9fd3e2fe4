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
   * Called as each request starts; the function it returns when the response is done. serve()
   * tells the runtime, which processes in shorter slices while requests wait (item 6 of the
   * engine issue: queries stay fast while processing runs flat out).
   */
  readonly onRequest?: () => () => void;
}

export async function listenGateway(gateway: Gateway, options: ListenOptions): Promise<ListeningGateway> {
  const onRequest = options.onRequest;
  const server = onRequest === undefined ? createServer(gateway) : createServer((request, response) => {
    const done = onRequest();
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
