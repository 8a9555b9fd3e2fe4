/**
 * `iqgate start`'s security settings from the environment (src/gateway-env.ts): what it refuses
 * before anything starts, that an error never shows a secret, and that TLS serves HTTPS with
 * the files it names (a certificate made here with openssl).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isIqgateError } from '../../src/errors.js';
import { gatewaySecurityFromEnv, type GatewayEnv } from '../../src/gateway-env.js';
import { createGateway } from '../../src/graphql/create-gateway.js';
import { listenGateway } from '../../src/graphql/listen-gateway.js';
import { StaticStateProvider } from '../../src/query/static-state-provider.js';
import { serdes } from '../../src/store/serdes.js';
import type { Serde } from '../../src/store/types.js';

const dir = mkdtempSync(join(tmpdir(), 'iqgate-gateway-env-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function refusal(env: GatewayEnv): Error {
  try {
    gatewaySecurityFromEnv(env);
  } catch (error) {
    expect(isIqgateError(error, 'INVALID_CONFIG')).toBe(true);
    expect((error as { details: { exitCode?: number } }).details.exitCode).toBe(2);
    return error as Error;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

describe('the gateway security settings of iqgate start', () => {
  it('refuses to serve anyone beyond loopback unless anonymous access is chosen, and reads a key file', () => {
    expect(refusal({ HOST: '0.0.0.0' }).message).toContain('IQGATE_ANONYMOUS=true');
    expect(gatewaySecurityFromEnv({ HOST: '127.0.0.1' }).auth).toEqual({});
    expect(gatewaySecurityFromEnv({ HOST: '0.0.0.0', IQGATE_ANONYMOUS: 'true' }).auth).toEqual({ anonymous: true });
    const keys = file('keys.json', JSON.stringify([{ name: 'svc', key: 'a-long-enough-api-key-1', stores: ['*'] }]));
    const security = gatewaySecurityFromEnv({ HOST: '0.0.0.0', IQGATE_API_KEYS_FILE: keys });
    expect((security.auth?.apiKeys as { size: number }).size).toBe(1);
    expect(refusal({ HOST: '127.0.0.1', IQGATE_ANONYMOUS: 'false' }).message).toContain('no one could call');
  });

  it('names the variable and never the secret: a bad key file, a short cluster secret, a missing file, half a TLS pair', () => {
    const badKeys = file('bad-keys.json', JSON.stringify([{ name: 'svc', key: 'tiny-key', stores: ['*'] }]));
    const bad = refusal({ HOST: '127.0.0.1', IQGATE_API_KEYS_FILE: badKeys });
    expect(bad.message).toContain('IQGATE_API_KEYS_FILE');
    expect(bad.message).not.toContain('tiny-key');
    const secret = file('secret', 'short-secret\n');
    const short = refusal({ HOST: '127.0.0.1', IQGATE_CLUSTER_SECRET_FILE: secret });
    expect(short.message).toContain('32 characters');
    expect(short.message).not.toContain('short-secret');
    expect(refusal({ HOST: '127.0.0.1', IQGATE_JWT_PUBLIC_KEY_FILE: join(dir, 'absent.pem') }).message).toContain('ENOENT');
    expect(refusal({ HOST: '127.0.0.1', IQGATE_JWT_PUBLIC_KEY_FILE: file('not-a-key.pem', 'hello') }).message).toContain('IQGATE_JWT_PUBLIC_KEY_FILE');
    expect(refusal({ HOST: '127.0.0.1', IQGATE_JWT_ISSUER: 'https://idp.example' }).message).toContain('IQGATE_JWT_JWKS_URL');
    expect(refusal({ HOST: '127.0.0.1', IQGATE_TLS_CERT_FILE: file('c.pem', 'x') }).message).toContain('IQGATE_TLS_KEY_FILE');
  });

  it('refuses routing with authentication but no cluster secret: the owners could not tell forwards from clients', () => {
    const keys = file('keys2.json', JSON.stringify([{ name: 'svc', key: 'a-long-enough-api-key-2', stores: ['*'] }]));
    const env = { HOST: '0.0.0.0', IQGATE_API_KEYS_FILE: keys, IQGATE_ADVERTISED_URL: 'http://10.0.0.5:4000/graphql' };
    expect(refusal(env).message).toContain('IQGATE_CLUSTER_SECRET_FILE');
    const secret = file('secret2', `${'s'.repeat(40)}\n`);
    expect(gatewaySecurityFromEnv({ ...env, IQGATE_CLUSTER_SECRET_FILE: secret }).auth?.clusterSecret).toBe('s'.repeat(40));
  });

  it('serves HTTPS with IQGATE_TLS_CERT_FILE and IQGATE_TLS_KEY_FILE', async () => {
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    const security = gatewaySecurityFromEnv({ HOST: '127.0.0.1', IQGATE_TLS_CERT_FILE: cert, IQGATE_TLS_KEY_FILE: key });
    const provider = new StaticStateProvider({ stores: [{ name: 'words', keySerde: serdes.string as Serde<unknown>, valueSerde: serdes.json, partitions: 1 }] });
    const listening = await listenGateway(createGateway({ provider, logging: false }), { port: 0, host: '127.0.0.1', tls: security.tls! });
    try {
      expect(listening.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/graphql$/);
      const body = JSON.stringify({ query: '{ stores { name } }' });
      const answer = await new Promise<string>((resolve, reject) => {
        const req = httpsRequest(listening.url, { method: 'POST', ca: readFileSync(cert), headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve(text));
        });
        req.on('error', reject);
        req.end(body);
      });
      expect(JSON.parse(answer)).toEqual({ data: { stores: [{ name: 'words' }] } });
    } finally {
      await listening.close();
    }
  });
});
