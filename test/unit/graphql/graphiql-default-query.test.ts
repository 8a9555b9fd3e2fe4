/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
/**
 * GraphiQL opens on an example derived from the application's own stores: the query names
 * them, picks a key a local partition holds, and runs as it stands, committed and uncommitted
 * side by side — for string, int64 and bytes keys, and with no data or no store at all.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { graphiqlDefaultQuery } from '../../../src/graphql/graphiql-default-query.js';
import { createInMemoryStoreEngine } from '../../../src/store/in-memory-engine.js';
import { serdes } from '../../../src/store/serdes.js';
import type { Serde } from '../../../src/store/types.js';
import { createFixture, gql, type Fetch, type Fixture, type StoreSpec } from './gateway-fixture.js';

const URL_ = 'http://gateway.test/graphql';
const fixtures: Fixture[] = [];
afterEach(async () => {
  for (const f of fixtures.splice(0)) await f.close();
});

async function fixture(stores: readonly StoreSpec[]): Promise<Fixture> {
  const f = await createFixture(createInMemoryStoreEngine(), { partitions: 3, stores });
  fixtures.push(f);
  return f;
}

const store = (name: string, keySerde: Serde<any>, valueSerde: Serde<any> = serdes.json): StoreSpec => ({ name, keySerde, valueSerde });

async function run(f: Fixture, query: string): Promise<any> {
  const result = await gql<any>(f.gateway.fetch as Fetch, URL_, query);
  expect(result.errors).toBeUndefined();
  return result.data;
}

describe('the GraphiQL default query', () => {
  it('reads a key of the first store committed and uncommitted side by side, and both ranges', async () => {
    const f = await fixture([store('balances', serdes.string), store('audit', serdes.string)]);
    f.put('balances', 'branch-01', { total: 100 });
    await f.commit();
    f.put('balances', 'branch-01', { total: 90 }); // processed, not committed

    const query = await graphiqlDefaultQuery(f.provider);
    expect(query).toContain('"balances", "audit"');
    const data = await run(f, query);
    expect(data.committed.value).toEqual({ total: 100 });
    expect(data.uncommitted.value).toEqual({ total: 90 });
    expect(data.committedRange.edges).toEqual([{ node: { key: 'branch-01', value: { total: 100 } } }]);
    expect(data.uncommittedRange.edges).toEqual([{ node: { key: 'branch-01', value: { total: 90 } } }]);
  });

  it('finds a key that only the uncommitted view holds yet', async () => {
    const f = await fixture([store('counts', serdes.string)]);
    f.put('counts', 'fresh', 1);
    const data = await run(f, await graphiqlDefaultQuery(f.provider));
    expect(data.committed.value).toBeNull();
    expect(data.uncommitted.value).toBe(1);
  });

  it.each([
    ['int64', serdes.int64 as Serde<any>, 42n, '"42"'],
    ['bytes', serdes.bytes as Serde<any>, Buffer.from([1, 2, 255]), '"AQL/"'],
    ['float64', serdes.float64 as Serde<any>, 1.5, '1.5'],
  ])('writes a %s key in the form the Key argument takes', async (_name, keySerde, key, literal) => {
    const f = await fixture([store('s', keySerde)]);
    f.put('s', key, 'v');
    await f.commit();
    const query = await graphiqlDefaultQuery(f.provider);
    expect(query).toContain(`key: ${literal}`);
    const data = await run(f, query);
    expect(data.committed.value).toBe('v');
  });

  it('falls back to the ranges when the stores are empty, and to the instance when there is no store', async () => {
    const empty = await fixture([store('balances', serdes.string)]);
    const query = await graphiqlDefaultQuery(empty.provider);
    expect(query).not.toContain('get(');
    expect((await run(empty, query)).committedRange.edges).toEqual([]);

    const none = await fixture([]);
    expect((await run(none, await graphiqlDefaultQuery(none.provider))).stores).toEqual([]);
  });

  it('is what the GraphiQL page opens with', async () => {
    const f = await fixture([store('balances', serdes.string)]);
    f.put('balances', 'branch-07', { total: 1 });
    const response = await f.gateway.fetch(URL_, { headers: { accept: 'text/html' } });
    const page = await response.text();
    expect(response.headers.get('content-type')).toContain('text/html');
    expect(page).toContain('uncommitted: get(store: \\"balances\\", key: \\"branch-07\\", readCommitted: false)');
  });

  it('never closes the page\'s script: a key holding </script> travels escaped, and the query still reads that key', async () => {
    const f = await fixture([store('balances', serdes.string)]);
    const hostile = '!</script><script>window.stolen=1</script><!--';
    f.put('balances', hostile, { total: 1 });
    const query = await graphiqlDefaultQuery(f.provider);
    expect(query).not.toContain('<');
    const data = await run(f, query);
    expect(data.uncommitted.value).toEqual({ total: 1 });
    const page = await (await f.gateway.fetch(URL_, { headers: { accept: 'text/html' } })).text();
    expect(page.match(/<\/script>/gi)?.length, 'the page\'s one script is closed by its own tag only').toBe(1);
    expect(page).not.toContain('window.stolen=1</script>');
  });
});
