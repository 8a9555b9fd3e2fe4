/**
 * `serve(runtime, options)`: the GraphQL gateway over a running Runtime's stores, listening on
 * HTTP — iqgate as a sidecar or inside a service, in one call — with GET /health, GET /ready and
 * GET /metrics (Prometheus) beside /graphql. The pieces stay available
 * (RuntimeStateProvider, createGateway, listenGateway) for those who mount the gateway in
 * their own server: it is a fetch handler and a node:http request listener.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import { createGateway, type Gateway } from './graphql/create-gateway.js';
import type { GatewayOptions } from './graphql/gateway-options.js';
import { listenGateway, type ListeningGateway, type ListenOptions } from './graphql/listen-gateway.js';
import type { Runtime } from './runtime/runtime.js';
import { registerProcessingMetrics } from './runtime/processing-metrics-exporter.js';
import { RuntimeStateProvider } from './runtime/runtime-state-provider.js';

export interface ServeOptions extends Omit<GatewayOptions, 'provider' | 'metrics'> {
  /**
   * GET /metrics (Prometheus): true (default) for a new registry with the runtime's processing
   * metrics (`iqgate_*`) and Node's process metrics; a registry of yours to have them added to
   * it (and serve your own metrics beside them); false for no /metrics.
   */
  readonly metrics?: boolean | Registry;
  /** Default 4000; 0 picks a free port (see the returned `url`). */
  readonly port?: number;
  /**
   * Default 127.0.0.1; 0.0.0.0 to accept other hosts (a container), which needs `auth` (or
   * `auth.anonymous: true` by name).
   */
  readonly host?: string;
  /** HTTPS with this certificate chain and key (PEM). */
  readonly tls?: ListenOptions['tls'];
}

export interface Serving extends ListeningGateway {
  readonly gateway: Gateway;
  /** The registry behind GET /metrics; undefined with `metrics: false`. */
  readonly metrics: Registry | undefined;
}

export async function serve(runtime: Runtime, options: ServeOptions = {}): Promise<Serving> {
  const { port = 4000, host = '127.0.0.1', metrics: metricsOption = true, tls, ...gatewayOptions } = options;
  let metrics: Registry | undefined;
  if (metricsOption !== false) {
    metrics = metricsOption === true ? new Registry() : metricsOption;
    if (metricsOption === true) collectDefaultMetrics({ register: metrics });
    registerProcessingMetrics(metrics, runtime);
  }
  const gateway = createGateway({ ...gatewayOptions, provider: new RuntimeStateProvider(runtime), ...(metrics === undefined ? {} : { metrics }) });
  const listening = await listenGateway(gateway, { port, host, onRequest: () => runtime.requestStarted(), ...(tls === undefined ? {} : { tls }) });
  return { ...listening, gateway, metrics };
}
