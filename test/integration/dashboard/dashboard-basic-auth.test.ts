/**
 * A browser opens the dashboard with an API key as HTTP Basic's password, as the README says
 * (docs/security.md §1). The gateway's 401 names both challenges, Basic first: Chromium reads
 * only the first challenge of the WWW-Authenticate header, so with `Bearer …, Basic …` it never
 * asked for a password and the page stayed a 401 (audit, 2026-12-06). Real Chromium; the browser answers the Basic challenge with
 * the credentials of its context, and only a Basic challenge it recognises makes it do so.
 */
import { get } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispose, instance, type Instance } from '../../unit/graphql/routing-fixture.js';
import { launchChromium } from './dashboard-browser.js';

const KEY = 'operator-key-for-the-dashboard-0001';

let browser: Browser;
let gateway: Instance;

beforeAll(async () => {
  browser = await launchChromium();
  gateway = await instance([0, 1, 2, 3], { auth: { apiKeys: [{ name: 'operator', key: KEY, stores: ['*'] }] } });
});

afterAll(async () => {
  await browser?.close();
  if (gateway !== undefined) await dispose(gateway);
});

describe('the dashboard behind API keys, in a browser', () => {
  it('asks for the key as a Basic password and opens with it; without credentials it stays a 401', async () => {
    const base = gateway.url.replace(/\/graphql$/, '');
    const signedIn = await browser.newContext({ httpCredentials: { username: 'operator', password: KEY } });
    try {
      const page = await signedIn.newPage();
      const response = await page.goto(`${base}/dashboard`);
      expect(response?.status()).toBe(200);
      expect(await page.title()).toMatch(/iqgate/i);
    } finally {
      await signedIn.close();
    }
    // Without credentials (a headless browser cannot be asked): Basic first, then Bearer.
    const raw = await new Promise<string[]>((resolve, reject) => {
      get(`${base}/dashboard`, (res) => {
        res.resume();
        resolve(res.statusCode === 401 ? res.rawHeaders : [`status ${res.statusCode}`]);
      }).on('error', reject);
    });
    const challenges = raw.flatMap((value, i) => (i % 2 === 1 && raw[i - 1]!.toLowerCase() === 'www-authenticate' ? [value] : []));
    expect(challenges).toEqual(['Basic realm="iqgate", charset="UTF-8", Bearer realm="iqgate"']);
  });
});
