/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
/**
 * A subscription held open over real HTTP (SSE) while the group rebalances under it, on the
 * real broker, on each Kafka client: a second instance of the application joins and takes a
 * partition from the first; the client of the first must receive PARTITION_REVOKED (not
 * silence) within a bounded time, and, resubscribing to the new owner with the `resumeAfter`
 * it was given, see the partition's changes again. Then the first instance stops under an
 * open subscription, which ends with STORE_CLOSED.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime, serdes, serve, StreamsBuilder, type Runtime, type Serving } from '../../../src/index.js';
import { partitionForKey } from '../../../src/murmur2.js';
import { subscribe, type Fetch, type SseSubscription } from '../../unit/graphql/gateway-fixture.js';
import { kafkaBrokers, testKafka, uniqueName, waitFor } from '../../support/kafka.js';
import { createTopics } from '../processing/wordcount-harness.js';

const dirs: string[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The revoked subscription's error must arrive within this long after the second instance starts. */
const REVOKE_BOUND_MS = 60_000;

const CHANGES = `subscription($partitions: [Int!], $after: Position, $initial: Boolean) {
  changes(store: "items", partitions: $partitions, after: $after, initial: $initial) { key value partition initial resumeAfter }
}`;

/** The next event's `changes`, or the coded error the subscription ended with; fails after `timeoutMs`. */
async function nextEvent(sub: SseSubscription<any>, timeoutMs: number): Promise<{ changes?: any; error?: any }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no event within ${timeoutMs} ms: the subscription is silent`)), timeoutMs);
  });
  try {
    return { changes: (await Promise.race([sub.next(), timeout])).changes };
  } catch (error) {
    const errors = (error as { errors?: any[] }).errors;
    if (errors === undefined) throw error;
    return { error: errors[0] };
  } finally {
    clearTimeout(timer);
  }
}

describe.each(['librdkafka', 'kafkajs'] as const)('a subscription across a rebalance on %s', (kafkaClient) => {
  it('ends with PARTITION_REVOKED when a second instance takes its partition, and the new owner serves the resubscription', async () => {
    const topic = uniqueName('sub-items');
    const applicationId = uniqueName('sub-rebalance');
    const kafka = testKafka();
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await createTopics(admin, [topic], 2);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    // One key per partition, written where the store's partitioner puts it.
    const keyOf = [0, 1].map((p) => Array.from({ length: 50 }, (_, i) => `item-${i}`).find((k) => partitionForKey(Buffer.from(k), 2) === p)!);
    const write = (partition: number, n: number) =>
      producer.send({ topic, messages: [{ key: keyOf[partition]!, value: JSON.stringify({ n }), partition }] });
    await write(0, 0);
    await write(1, 0);

    const start = async (i: number): Promise<{ runtime: Runtime; server: Serving }> => {
      const builder = new StreamsBuilder();
      builder.table(topic, { store: 'items', key: serdes.string, value: serdes.json });
      const stateDir = mkdtempSync(join(tmpdir(), `iqgate-sub-rebalance-${i}-`));
      dirs.push(stateDir);
      const runtime = createRuntime({
        applicationId, brokers: kafkaBrokers(), stateDir, topology: builder.build(), kafkaClient,
        logLevel: 'silent', sessionTimeoutMs: 10_000, heartbeatIntervalMs: 500,
      });
      const server = await serve(runtime, { port: 0, logging: false });
      cleanups.push(() => server.close());
      cleanups.push(() => runtime.stop());
      await runtime.start();
      return { runtime, server };
    };
    const running = (runtime: Runtime, partition: number): boolean => runtime.localTasks().some((t) => t.partition === partition && t.state === 'RUNNING');

    const first = await start(0);
    const committed = (runtime: Runtime, partition: number): boolean => runtime.localStore('items', partition)?.store.committedPosition().isEmpty() === false;
    await waitFor(() => committed(first.runtime, 0) && committed(first.runtime, 1), 60_000, 100, 'the first instance committing both partitions');
    const sub = await subscribe<any>(fetch as Fetch, first.server.url, CHANGES, { initial: true });
    cleanups.push(async () => sub.close());
    // The current state, then live changes of both partitions.
    const seen = new Map<string, any>();
    while (seen.size < 2) {
      const { changes } = await nextEvent(sub, 30_000);
      expect(changes.initial).toBe(true);
      seen.set(changes.key, changes);
    }
    await write(0, 1);
    await write(1, 1);
    const live = new Map<string, any>();
    while (live.size < 2) {
      const { changes } = await nextEvent(sub, 30_000);
      expect(changes).toMatchObject({ initial: false, value: { n: 1 } });
      live.set(changes.key, changes);
    }

    const joinedAt = Date.now();
    const second = await start(1);
    const { error } = await nextEvent(sub, REVOKE_BOUND_MS);
    const revokedAfterMs = Date.now() - joinedAt;
    expect(error?.extensions).toMatchObject({ code: 'PARTITION_REVOKED', retriable: true, details: { store: 'items' } });
    const moved: number = error.extensions.details.partition;
    // The last event it saw is where it resumes from.
    const lastSeen = [...live.values()].at(-1);
    expect(error.extensions.details.resumeAfter).toEqual(lastSeen.resumeAfter);
    // The subscription is over, and its instance no longer serves that partition.
    await expect(sub.next()).rejects.toThrow('subscription completed');
    console.info(`[${kafkaClient}] PARTITION_REVOKED reached the client ${revokedAfterMs} ms after the second instance started`);

    await waitFor(() => running(second.runtime, moved), 60_000, 100, 'the second instance running the moved partition');
    expect(running(first.runtime, moved)).toBe(false);
    const stale = await subscribe<any>(fetch as Fetch, first.server.url, CHANGES, { partitions: [moved] });
    expect((await nextEvent(stale, 10_000)).error?.extensions.code).toBe('PARTITION_NOT_FOUND');
    stale.close();

    // Resubscribe to the new owner where the old subscription ended: nothing changed since, so
    // nothing is listed again, and the next change comes through.
    const resumed = await subscribe<any>(fetch as Fetch, second.server.url, CHANGES, {
      partitions: [moved], after: error.extensions.details.resumeAfter, initial: true,
    });
    cleanups.push(async () => resumed.close());
    await write(moved, 2);
    const { changes } = await nextEvent(resumed, 30_000);
    expect(changes).toMatchObject({ key: keyOf[moved], value: { n: 2 }, partition: moved, initial: false });
    resumed.close();

    // The first instance stops under a subscription to the partition it kept: STORE_CLOSED.
    const kept = 1 - moved;
    expect(running(first.runtime, kept)).toBe(true);
    const last = await subscribe<any>(fetch as Fetch, first.server.url, CHANGES, { partitions: [kept] });
    cleanups.push(async () => last.close());
    await waitFor(() => first.runtime.localStore('items', kept)?.store.listenerCount() === 1, 10_000, 20, 'the subscription listening');
    const stopping = first.runtime.stop();
    const ended = await nextEvent(last, 60_000);
    expect(ended.error?.extensions).toMatchObject({ code: 'STORE_CLOSED', retriable: true, details: { store: 'items', partition: kept, shutdown: true } });
    await stopping;
  });
});
