/**
 * GET /dashboard through the gateway's fetch handler: the page and its modules are served as
 * static files with their content types, the page names the gateway's GraphQL endpoint, every
 * module the page imports is served, and nothing outside the assets directory is.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { useDashboard } from '../../../src/dashboard/dashboard-route.js';
import { createGateway } from '../../../src/graphql/create-gateway.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';
import { createYoga, createSchema } from 'graphql-yoga';

const gateway = createGateway({ provider: new StaticStateProvider({ stores: [] }), logging: false });
const get = (path: string, init?: RequestInit) => gateway.fetch(new URL(path, 'http://localhost'), init ?? {});

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('GET /dashboard', () => {
  it('serves the page with the GraphQL endpoint written into it', async () => {
    for (const path of ['/dashboard', '/dashboard/']) {
      const response = await get(path);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await response.text();
      expect(html).toContain('<meta name="iqgate-graphql" content="/graphql">');
      expect(html).not.toContain('%GRAPHQL_ENDPOINT%');
    }
  });

  it('forbids inline and foreign scripts, framing by other sites and referrers (the browser tests run the page under this policy)', async () => {
    for (const path of ['/dashboard', '/dashboard/app.js']) {
      const headers = (await get(path)).headers;
      expect(headers.get('content-security-policy'), path).toBe("default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
      expect(headers.get('x-frame-options'), path).toBe('DENY');
      expect(headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(headers.get('referrer-policy'), path).toBe('no-referrer');
    }
  });

  it('serves every module and stylesheet the page loads, and every module those import', async () => {
    const html = await (await get('/dashboard')).text();
    const pending = [...html.matchAll(/(?:src|href)="(\/dashboard\/[^"]+)"/g)].map((m) => m[1]!);
    expect(pending).toEqual(expect.arrayContaining(['/dashboard/app.js', '/dashboard/dashboard.css']));
    const seen = new Set<string>();
    while (pending.length > 0) {
      const path = pending.pop()!;
      if (seen.has(path)) continue;
      seen.add(path);
      const response = await get(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type')).toMatch(path.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      if (path.endsWith('.js')) {
        for (const m of (await response.text()).matchAll(/from '\.\/([^']+)'/g)) pending.push(`/dashboard/${m[1]!}`);
      }
    }
    expect(seen.size).toBeGreaterThanOrEqual(5);
  });

  it('answers 404 for anything that is not one of its files, and 405 for other methods', async () => {
    for (const path of ['/dashboard/nope.js', '/dashboard/%2e%2e%2fdashboard-route.ts', '/dashboard/..%2Fdashboard-route.ts', '/dashboard/assets/app.js', '/dashboard/dashboard-route.ts']) {
      expect((await get(path)).status, path).toBe(404);
    }
    const post = await get('/dashboard', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    const head = await get('/dashboard/app.js', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('follows a gateway mounted on another GraphQL endpoint', async () => {
    const other = createGateway({ provider: new StaticStateProvider({ stores: [] }), logging: false, graphqlEndpoint: '/api/graphql' });
    const html = await (await other.fetch('http://localhost/dashboard')).text();
    expect(html).toContain('<meta name="iqgate-graphql" content="/api/graphql">');
  });

  it('serves the assets from another directory, as a compiled dist/ tree with the files copied alongside does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iqgate-dashboard-'));
    dirs.push(dir);
    cpSync(new URL('../../../src/dashboard/assets/', import.meta.url), dir, { recursive: true });
    const yoga = createYoga({
      schema: createSchema({ typeDefs: 'type Query { ok: Boolean }' }),
      logging: false,
      plugins: [useDashboard({ graphqlEndpoint: '/graphql', assetsDir: pathToFileURL(`${dir}/`) })],
    });
    const response = await yoga.fetch('http://localhost/dashboard/chart.js');
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('export function renderChart');
  });
});
