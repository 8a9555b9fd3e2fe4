import { describe, expect, it } from 'vitest';
import { resolveGatewayOptions } from '../../../src/graphql/gateway-options.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';

const provider = new StaticStateProvider({ stores: [] });

describe('gateway options', () => {
  it('fills in documented defaults, with the cost limit scaled to the page size', () => {
    const options = resolveGatewayOptions({ provider });
    expect(options).toMatchObject({ maxPageSize: 1000, defaultPageSize: 100, maxDepth: 8, maxCost: 100_000, graphiql: true, graphqlEndpoint: '/graphql' });
    expect(resolveGatewayOptions({ provider, maxPageSize: 50, defaultPageSize: 10 }).maxCost).toBe(5000);
    expect(options).toMatchObject({ cursorSnapshotTtlMs: 30_000, maxPinnedSnapshots: 1000 });
    expect(resolveGatewayOptions({ provider, cursorSnapshotTtlMs: 0 }).cursorSnapshotTtlMs).toBe(0);
  });

  it('rejects nonsense at start-up with a message naming the option', () => {
    expect(() => resolveGatewayOptions({ provider, maxPageSize: 0 })).toThrow(/maxPageSize/);
    expect(() => resolveGatewayOptions({ provider, maxDepth: 2.5 })).toThrow(/maxDepth/);
    expect(() => resolveGatewayOptions({ provider, maxPageSize: 10 })).toThrow(/defaultPageSize/);
    expect(() => resolveGatewayOptions({ provider, maxBoundTimeoutMs: -1 })).toThrow(/maxBoundTimeoutMs/);
    expect(() => resolveGatewayOptions({ provider, cursorSnapshotTtlMs: -1 })).toThrow(/cursorSnapshotTtlMs/);
    expect(() => resolveGatewayOptions({ provider, maxPinnedSnapshots: 0 })).toThrow(/maxPinnedSnapshots/);
  });
});
