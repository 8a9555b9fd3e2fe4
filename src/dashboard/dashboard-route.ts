/**
 * GET /dashboard: the operator's page (src/dashboard/assets/), served by the gateway itself as
 * static files — plain HTML, JavaScript modules and CSS, no build step — so that any iqgate
 * application has it on the port that serves its GraphQL. The page talks to the gateway's
 * GraphQL endpoint only (queries by POST, the `changes` subscriptions over SSE).
 *
 * The assets are found next to this module (import.meta.url), so the same code serves them from
 * `src/dashboard/assets/` under tsx and from a compiled `dist/src/dashboard/assets/` tree where
 * they are copied alongside. Only the files in that directory are served, by exact name: a
 * request for anything else (`..`, subdirectories, encoded slashes) is a 404.
 */
import { readdir, readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type { Plugin } from 'graphql-yoga';
import { TextDecoder, TextEncoder } from 'node:util';

export const DASHBOARD_PATH = '/dashboard';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

interface Asset {
  readonly body: Uint8Array<ArrayBuffer>;
  readonly contentType: string;
}

export interface DashboardOptions {
  /** The gateway's GraphQL endpoint, written into the page. */
  readonly graphqlEndpoint: string;
  /** Where the assets are; default `./assets/` next to this module. */
  readonly assetsDir?: URL;
}

/** Reads every servable file of the assets directory once; the page is a few small files. */
async function loadAssets(dir: URL, graphqlEndpoint: string): Promise<Map<string, Asset>> {
  const assets = new Map<string, Asset>();
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const contentType = CONTENT_TYPES[extname(entry.name)];
    if (!entry.isFile() || contentType === undefined) continue;
    let body = new Uint8Array(await readFile(new URL(entry.name, dir)));
    if (entry.name === 'index.html') {
      // The page learns the endpoint from a meta tag, so a gateway on another graphqlEndpoint works too.
      const html = new TextDecoder().decode(body).replace('%GRAPHQL_ENDPOINT%', () => escapeAttribute(graphqlEndpoint)); // (a function: `$&` in an endpoint is no pattern)
      body = new TextEncoder().encode(html) as Uint8Array<ArrayBuffer>;
    }
    assets.set(entry.name, { body, contentType });
  }
  return assets;
}

/**
 * The page loads its own script, style and GraphQL endpoint only (no inline script or style, no
 * other origin: keys and values are rendered as text, but a policy makes a slip harmless), and
 * no other site may frame it (clickjacking) or learn its URL from a referrer.
 */
const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
} as const;

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function useDashboard(options: DashboardOptions): Plugin {
  const dir = options.assetsDir ?? new URL('./assets/', import.meta.url);
  let assets: Promise<Map<string, Asset>> | null = null;
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      const path = url.pathname;
      if (path !== DASHBOARD_PATH && !path.startsWith(`${DASHBOARD_PATH}/`)) return;
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        endResponse(new fetchAPI.Response(null, { status: 405, headers: { allow: 'GET, HEAD' } }));
        return;
      }
      const name = path === DASHBOARD_PATH || path === `${DASHBOARD_PATH}/` ? 'index.html' : path.slice(DASHBOARD_PATH.length + 1);
      if (assets === null) {
        assets = loadAssets(dir, options.graphqlEndpoint);
        assets.catch(() => {
          assets = null; // a missing directory is retried on the next request
        });
      }
      const asset = (await assets.catch(() => new Map<string, Asset>())).get(name);
      if (asset === undefined) {
        endResponse(new fetchAPI.Response('Not found\n', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } }));
        return;
      }
      endResponse(
        new fetchAPI.Response(request.method === 'HEAD' ? null : asset.body, {
          status: 200,
          headers: { 'content-type': asset.contentType, 'cache-control': 'no-cache', ...SECURITY_HEADERS },
        }),
      );
    },
  };
}
