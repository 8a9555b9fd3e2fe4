import { describe, expect, it } from 'vitest';
import { GraphQLError } from 'graphql';
import type { YogaLogger } from 'graphql-yoga';
import { IqgateError } from '../../../src/errors.js';
import { gatewayLogger } from '../../../src/graphql/gateway-logger.js';
import { createInMemoryDatabase, createInMemoryStoreEngine } from '../../../src/store/index.js';
import { createFixture } from './gateway-fixture.js';

function recordingLogger(): YogaLogger & { readonly lines: Array<[string, unknown]> } {
  const lines: Array<[string, unknown]> = [];
  const at = (level: string) => (...args: unknown[]) => void lines.push([level, args[0]]);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

describe('gatewayLogger: client errors are not server errors', () => {
  it('logs a coded client error (bare or wrapped by graphql) at debug and a server failure at error', () => {
    const base = recordingLogger();
    const logger = gatewayLogger(base);
    logger.error(new IqgateError('STORE_NOT_FOUND', 'No store named "nope".'));
    logger.error(new GraphQLError('bad key', { originalError: new IqgateError('INVALID_KEY', 'bad key') }));
    logger.error(new IqgateError('STORE_EXCEPTION', 'IO error: disk full'));
    logger.error(new Error('a bug'));
    logger.warn('careful');
    expect(base.lines.map(([level]) => level)).toEqual(['debug', 'debug', 'error', 'error', 'warn']);
  });

  it('is what the gateway logs through: a query on an unknown store reaches the client coded and the log at debug', async () => {
    const printed: Array<[string, string]> = [];
    const original = { error: console.error, debug: console.debug };
    console.error = (...args: unknown[]) => void printed.push(['error', args.map(String).join(' ')]);
    console.debug = (...args: unknown[]) => void printed.push(['debug', args.map(String).join(' ')]);
    try {
      const f = await createFixture(createInMemoryStoreEngine({ database: createInMemoryDatabase() }), { gateway: { logging: true } });
      const response = await f.gateway.fetch('http://localhost/graphql', {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ get(store: "nope", key: "a") { value } }' }),
      });
      const body = (await response.json()) as { errors: Array<{ extensions: { code: string } }> };
      expect(body.errors[0]!.extensions.code).toBe('STORE_NOT_FOUND');
      expect(printed.filter(([level, line]) => level === 'error' && line.includes('nope'))).toEqual([]);
    } finally {
      Object.assign(console, original);
    }
  });
});
