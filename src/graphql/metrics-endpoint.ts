/**
 * GET /metrics: a prom-client registry in the Prometheus text format, answered by the gateway
 * itself so that a sidecar needs one port for queries, health, readiness and metrics.
 */
import type { Plugin } from 'graphql-yoga';
import type { Registry } from 'prom-client';

export const METRICS_ENDPOINT = '/metrics';

export function useMetricsEndpoint(registry: Registry): Plugin {
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      if (url.pathname !== METRICS_ENDPOINT) return;
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        endResponse(new fetchAPI.Response(null, { status: 405, headers: { allow: 'GET, HEAD' } }));
        return;
      }
      const body = await registry.metrics();
      endResponse(new fetchAPI.Response(request.method === 'HEAD' ? null : body, { status: 200, headers: { 'content-type': registry.contentType } }));
    },
  };
}
