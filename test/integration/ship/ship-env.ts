/**
 * Shared by the ship tests: the environment an install or a server outside the repository
 * starts from, and a free port.
 */
import { createServer } from 'node:net';

/**
 * This process's environment without what `npm test` and vitest put in it (npm_* variables,
 * which a nested npm would read as its own configuration, except the cache and registry it
 * should share; NODE_OPTIONS), plus: no native Kafka client download or build (README "Run
 * the tests"; kafkajs serves these tests), and npm preferring its cache (`npm ci` just filled it).
 */
export function shipEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const keep = new Set(['npm_config_cache', 'npm_config_registry', 'npm_config_userconfig']);
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => (!/^npm_/i.test(name) || keep.has(name.toLowerCase())) && name !== 'NODE_OPTIONS' && !name.startsWith('VITEST')));
  return {
    ...env,
    IQGATE_SKIP_NATIVE_KAFKA: '1',
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    ...extra,
  };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
