/**
 * The operator's GraphQL fields on a gateway whose StateProvider reports no monitor (an
 * embedder's StaticStateProvider): null, an empty history, and a coded error for a history
 * window out of bounds.
 */
import { describe, expect, it } from 'vitest';
import { createGateway } from '../../../src/graphql/create-gateway.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';

const gateway = createGateway({ provider: new StaticStateProvider({ stores: [] }), logging: false });

async function post(query: string): Promise<{ data?: Record<string, unknown>; errors?: Array<{ extensions?: { code?: string } }> }> {
  const response = await gateway.fetch('http://localhost/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  return (await response.json()) as { data?: Record<string, unknown> };
}

describe('the operator fields without a monitor', () => {
  it('are null, with an empty history', async () => {
    const result = await post('{ instance { applicationId kafkaClient processingGuarantee commitIntervalMs commits commitLatencyP50Ms lastCommitAt history { start } } }');
    expect(result.errors).toBeUndefined();
    expect(result.data).toEqual({
      instance: { applicationId: null, kafkaClient: null, processingGuarantee: null, commitIntervalMs: null, commits: null, commitLatencyP50Ms: null, lastCommitAt: null, history: [] },
    });
  });

  it('refuse a history window outside 1 to 10 minutes with INVALID_ARGUMENT', async () => {
    for (const minutes of [0, 11, -1]) {
      const result = await post(`{ instance { history(minutes: ${minutes}) { start } } }`);
      expect(result.errors?.[0]?.extensions?.code, String(minutes)).toBe('INVALID_ARGUMENT');
    }
  });
});
