/**
 * Routing across instances on the real broker, through the public API: two runtimes of one
 * application (one group, separate state directories), each served on port 0 and advertising
 * that URL, materialize a 4-partition topic. Once the group has spread the partitions over
 * both, a key lookup on either instance answers every key — its own partitions locally, the
 * other's forwarded to the owner it learned from the group metadata.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime, serdes, serve, StreamsBuilder, type Runtime, type Serving } from '../../../src/index.js';
import { postGraphQL } from '../../support/graphql.js';
import { createTopicsRetrying, kafkaBrokers, testKafka, uniqueName, waitFor } from '../../support/kafka.js';

const dirs: string[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Entry {
  key: string;
  value: { n: number } | null;
  found: boolean;
  partition: number;
  failure: { reason: string; owner: string | null } | null;
}

async function getMany(url: string, keys: readonly string[]): Promise<Entry[]> {
  const query = 'query ($keys: [Key!]!) { getMany(store: "items", keys: $keys) { entries { key value found partition failure { reason owner } } } }';
  return (await postGraphQL<{ getMany: { entries: Entry[] } }>(url, query, { keys })).getMany.entries;
}

interface RangePage {
  edges: Array<{ cursor: string; node: { key: string; value: { n: number } } }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  partitions: Array<{ partition: number; failure: { reason: string } | null }>;
}

/** Pages through the whole store 7 entries at a time; every page scatter-gathers to the other owner. */
async function rangeAll(url: string): Promise<RangePage['edges']> {
  const edges: RangePage['edges'] = [];
  let after: string | null = null;
  for (let pages = 0; pages < 20; pages++) {
    const query = 'query ($after: String) { range(store: "items", first: 7, after: $after) { edges { cursor node { key value } } pageInfo { hasNextPage endCursor } partitions { partition failure { reason } } } }';
    const page: RangePage = (await postGraphQL<{ range: RangePage }>(url, query, { after })).range;
    expect(page.partitions.filter((p) => p.failure !== null)).toEqual([]);
    edges.push(...page.edges);
    if (!page.pageInfo.hasNextPage) return edges;
    after = page.pageInfo.endCursor;
  }
  throw new Error('more than 20 pages');
}

// On each client: librdkafka members advertise their URL in their client id, kafkajs members in
// their assignor's metadata; both read the group's description back.
describe.each(['librdkafka', 'kafkajs'] as const)('routing queries between two instances of one application on %s', (kafkaClient) => {
  it('answers every key and pages every range on either instance once both own partitions', async () => {
    const topic = uniqueName('items');
    const applicationId = uniqueName('routing');
    const kafka = testKafka();
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await createTopicsRetrying(admin, [{ topic, numPartitions: 4 }]);

    const keys = Array.from({ length: 40 }, (_, i) => `item-${String(i).padStart(2, '0')}`);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    await producer.send({ topic, messages: keys.map((key, i) => ({ key, value: JSON.stringify({ n: i }) })) });

    const instances: Array<{ runtime: Runtime; server: Serving }> = [];
    for (let i = 0; i < 2; i++) {
      const builder = new StreamsBuilder();
      builder.table(topic, { store: 'items', key: serdes.string, value: serdes.json });
      const stateDir = mkdtempSync(join(tmpdir(), `iqgate-routing-${i}-`));
      dirs.push(stateDir);
      const runtime = createRuntime({
        applicationId,
        brokers: kafkaBrokers(),
        stateDir,
        topology: builder.build(),
        logLevel: 'silent',
        sessionTimeoutMs: 10_000,
        heartbeatIntervalMs: 500,
        kafkaClient,
      });
      // Serve first (port 0), then advertise the URL it got, then start: the group learns it at the first join.
      const server = await serve(runtime, { port: 0, logging: false });
      runtime.advertise(server.url);
      cleanups.push(() => server.close());
      cleanups.push(() => runtime.stop());
      instances.push({ runtime, server });
    }
    // The first instance takes every partition and learns it owns them all; the second one's
    // join then rebalances the group, and both learn the new owners.
    const [first, second] = instances as [(typeof instances)[0], (typeof instances)[0]];
    await first.runtime.start();
    expect(first.runtime.monitor.kafkaClient()).toBe(kafkaClient);
    await waitFor(() => first.runtime.localTasks().length === 4 && first.runtime.partitionOwners().length === 4, 60_000, 100);
    expect(new Set(first.runtime.partitionOwners().map((o) => o.url))).toEqual(new Set([first.server.url]));
    await second.runtime.start();

    // Both own partitions and both know who owns each of the four.
    await waitFor(
      () =>
        instances.every(({ runtime }) => runtime.localTasks().length > 0) &&
        instances.every(({ runtime }) => runtime.partitionOwners().length === 4 && new Set(runtime.partitionOwners().map((o) => o.url)).size === 2),
      90_000,
      100,
    );
    const owners = instances[0]!.runtime.partitionOwners();
    expect(owners.map((o) => o.partition)).toEqual([0, 1, 2, 3]);
    expect(new Set(owners.map((o) => o.url))).toEqual(new Set(instances.map(({ server }) => server.url)));

    for (const { server, runtime } of instances) {
      // Not all partitions are local: some answers must have been forwarded.
      const local = new Set(runtime.localTasks().map((t) => t.partition));
      expect(local.size).toBeGreaterThan(0);
      expect(local.size).toBeLessThan(4);
      let entries: Entry[] = [];
      await waitFor(async () => {
        entries = await getMany(server.url, keys);
        return entries.every((e) => e.found);
      }, 60_000, 200);
      expect(entries.map((e) => e.key)).toEqual(keys);
      entries.forEach((e, i) => expect(e).toMatchObject({ value: { n: i }, found: true, failure: null }));
      // Both instances answered: keys of every partition are in the result.
      expect(new Set(entries.map((e) => e.partition))).toEqual(new Set([0, 1, 2, 3]));

      // A paged range merges both instances' partitions: every key once, in key order.
      const ranged = await rangeAll(server.url);
      expect(ranged.map((e) => e.node.key)).toEqual(keys);
      ranged.forEach((e, i) => expect(e.node.value).toEqual({ n: i }));
    }
  });
});
