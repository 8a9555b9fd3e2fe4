/**
 * iqgate embedded as a library, through the public API only (src/index.ts): a topic
 * materialized as a table, a runtime on the real broker with LevelDB state, and serve() on
 * HTTP. Queries see the latest value per key, deletes (tombstones) as absent, and ranges in
 * key order across partitions.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime, serdes, serve, StreamsBuilder, type Runtime, type Serving } from '../../../src/index.js';
import { postGraphQL } from '../../support/graphql.js';
import { createTopicsRetrying, kafkaBrokers, testKafka, uniqueName, waitFor } from '../../support/kafka.js';

const stateDir = mkdtempSync(join(tmpdir(), 'iqgate-embed-'));
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  rmSync(stateDir, { recursive: true, force: true });
});


describe('iqgate embedded through its public API', () => {
  it('materializes a topic as a table and serves it over GraphQL, tombstones included', async () => {
    const topic = uniqueName('accounts');
    const kafka = testKafka();
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await createTopicsRetrying(admin, [{ topic, numPartitions: 3 }]);

    // Three versions of 30 accounts, then delete every fifth one.
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    for (let version = 1; version <= 3; version++) {
      await producer.send({
        topic,
        messages: Array.from({ length: 30 }, (_, i) => ({ key: `acct-${String(i).padStart(2, '0')}`, value: JSON.stringify({ balance: i * 10 + version }) })),
      });
    }
    const deleted = Array.from({ length: 6 }, (_, i) => `acct-${String(i * 5).padStart(2, '0')}`);
    await producer.send({ topic, messages: deleted.map((key) => ({ key, value: null })) });

    const builder = new StreamsBuilder();
    builder.table(topic, { store: 'balances', key: serdes.string, value: serdes.json });
    const runtime: Runtime = createRuntime({
      applicationId: uniqueName('bank'),
      brokers: kafkaBrokers(),
      stateDir,
      topology: builder.build(),
      logLevel: 'silent',
    });
    await runtime.start();
    cleanups.push(() => runtime.stop());
    const server: Serving = await serve(runtime, { port: 0 });
    cleanups.push(() => server.close());

    type Page = { range: { edges: Array<{ node: { key: string; value: { balance: number } } }> } };
    let page: Page | undefined;
    await waitFor(async () => {
      page = await postGraphQL<Page>(server.url, '{ range(store: "balances", first: 100) { edges { node { key value } } } }');
      return page.range.edges.length === 24 && page.range.edges.every((e) => e.node.value.balance % 10 === 3);
    }, 60_000, 100);

    const expectedKeys = Array.from({ length: 30 }, (_, i) => `acct-${String(i).padStart(2, '0')}`).filter((k) => !deleted.includes(k));
    expect(page!.range.edges.map((e) => e.node.key)).toEqual(expectedKeys);
    for (const edge of page!.range.edges) expect(edge.node.value.balance).toBe(Number(edge.node.key.slice(5)) * 10 + 3);

    const lookups = await postGraphQL<{ gone: { value: unknown }; kept: { value: { balance: number } } }>(
      server.url,
      '{ gone: get(store: "balances", key: "acct-05") { value } kept: get(store: "balances", key: "acct-07") { value } }',
    );
    expect(lookups.gone.value).toBeNull();
    expect(lookups.kept.value).toEqual({ balance: 73 });
  });
});
