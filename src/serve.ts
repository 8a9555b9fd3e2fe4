/**
 * `serve(runtime, options)`: the GraphQL gateway over a running Runtime's stores, listening on
 * HTTP — iqgate as a sidecar or inside a service, in one call. The pieces stay available
 * (RuntimeStateProvider, createGateway, listenGateway) for those who mount the gateway in
 * their own server: it is a fetch handler and a node:http request listener.
 */
import { createGateway, type Gateway } from './graphql/create-gateway.js';
import type { GatewayOptions } from './graphql/gateway-options.js';
import { listenGateway, type ListeningGateway } from './graphql/listen-gateway.js';
import type { Runtime } from './runtime/runtime.js';
import { RuntimeStateProvider } from './runtime/runtime-state-provider.js';

export interface ServeOptions extends Omit<GatewayOptions, 'provider'> {
  /** Default 4000; 0 picks a free port (see the returned `url`). */
  readonly port?: number;
  /** Default 127.0.0.1; 0.0.0.0 to accept other hosts (a container). */
  readonly host?: string;
}

export interface Serving extends ListeningGateway {
  readonly gateway: Gateway;
}

export async function serve(runtime: Runtime, options: ServeOptions = {}): Promise<Serving> {
  const { port = 4000, host = '127.0.0.1', ...gatewayOptions } = options;
  const gateway = createGateway({ ...gatewayOptions, provider: new RuntimeStateProvider(runtime) });
  const listening = await listenGateway(gateway, { port, host });
  return { ...listening, gateway };
}
