/**
 * The gateway served by a real node:http server on 127.0.0.1 (ephemeral port) over the
 * LevelDB store engine in a temporary directory: the same scenarios as the yoga.fetch unit
 * tests, now through sockets, HTTP framing and real SSE streaming.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLevelStoreEngine } from '../../../src/store/level-engine.js';
import { createFixture, gql, type Fetch, type Fixture } from '../../unit/graphql/gateway-fixture.js';
import {
  checkBadInput,
  checkBounds,
  checkIsolation,
  checkKeyTyping,
  checkPagination,
  checkInitialSubscriptions,
  checkSubscriptions,
  seedIsolation,
  waitUntil,
  type Client,
} from '../../unit/graphql/gateway-scenarios.js';

let directory: string;
let f: Fixture;
let server: Server;
let client: Client;

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'iqgate-gateway-'));
  f = await createFixture(await openLevelStoreEngine({ directory }), { partitions: 3 });
  server = createServer(f.gateway);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  client = { fetch: fetch as Fetch, url: `http://127.0.0.1:${port}/graphql` };
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await f.close();
  await rm(directory, { recursive: true, force: true });
});

describe('the GraphQL gateway over node:http and LevelDB', () => {
  it('answers every query type in both isolation modes, never showing aborted data', async () => {
    await seedIsolation(f);
    await checkIsolation(client);
  });

  it('takes and returns keys in the natural GraphQL form of each serde', async () => {
    await checkKeyTyping(f, client);
  });

  it('pages over 3 partitions returning every key exactly once in order, forward and backward', async () => {
    await checkPagination(f, client, 200);
  });

  it('serves, fails or waits on position bounds', async () => {
    await checkBounds(f, client);
  });

  it('streams committed changes over SSE in order and resumes after a position', async () => {
    await checkSubscriptions(f, client);
  });

  it('starts a subscription with the current state, then live changes, and lists a partition again when resumed in its middle', async () => {
    await checkInitialSubscriptions(f, client);
  });

  it('stops waiting for a position bound when the client disconnects', async () => {
    f.put('words', 'bounded', 1);
    await f.commit();
    const partition = f.partitionOf('words', 'bounded');
    const store = f.tasks[partition]!.store('words');
    const controller = new AbortController();
    const request = fetch(client.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: 'query($b: Position) { get(store: "words", key: "bounded", positionBound: $b, boundTimeoutMs: 30000) { value } }',
        variables: { b: { input: { [partition]: f.nextOffsets()[partition]! + 5 } } },
      }),
      signal: controller.signal,
    });
    void request.catch(() => undefined);
    await waitUntil(() => store.listenerCount() > 0);
    controller.abort();
    await waitUntil(() => store.listenerCount() === 0, 5_000);
  });

  it('rejects bad input with coded errors, keeps the process up and keeps serving', async () => {
    await checkBadInput(f, client);
    const health = await gql<{ instance: { serving: boolean } }>(client.fetch, client.url, '{ instance { serving } }');
    expect(health.data?.instance.serving).toBe(true);
  });
});
