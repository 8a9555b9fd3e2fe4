/**
 * Warm joins on the real broker (src/processing/join-warmup.ts), on each Kafka client: the first
 * instance of an application joins its empty group at once; a second one, started while the
 * first runs, first tails every task's changelog into its own state directory, joins only then,
 * and the tasks the group moves to it open on those warm stores — replaying nothing of the
 * changelog, where a cold open replays all of it — with the right values; the warm copies of
 * the tasks it was not given are let go (no standby replicas asked for).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime, serdes, StreamsBuilder, type Runtime } from '../../../src/index.js';
import { partitionForKey } from '../../../src/murmur2.js';
import { kafkaBrokers, testKafka, uniqueName, waitFor } from '../../support/kafka.js';
import { createTopics } from './wordcount-harness.js';

const PARTITIONS = 4;
const KEYS_PER_PARTITION = 40;

const dirs: string[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

type LogLine = Record<string, unknown> & { msg: string };

describe.each(['librdkafka', 'kafkajs'] as const)('a second instance joining a running application on %s', (kafkaClient) => {
  it('warms every task up before it joins, so the tasks it is given replay nothing', async () => {
    const topic = uniqueName('warm-items');
    const applicationId = uniqueName('warm-join');
    const kafka = testKafka();
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await createTopics(admin, [topic], PARTITIONS);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    // KEYS_PER_PARTITION keys on each partition, each written once: as many changelog records.
    const keys = Array.from({ length: PARTITIONS * KEYS_PER_PARTITION * 3 }, (_, i) => `item-${i}`);
    const byPartition = Array.from({ length: PARTITIONS }, (_, p) => keys.filter((k) => partitionForKey(Buffer.from(k), PARTITIONS) === p).slice(0, KEYS_PER_PARTITION));
    expect(byPartition.every((ks) => ks.length === KEYS_PER_PARTITION)).toBe(true);
    await producer.send({ topic, messages: byPartition.flatMap((ks, partition) => ks.map((key) => ({ key, value: JSON.stringify({ key }), partition }))) });

    const start = async (i: number): Promise<{ runtime: Runtime; logs: LogLine[] }> => {
      const logs: LogLine[] = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
      const builder = new StreamsBuilder();
      builder.table(topic, { store: 'items', key: serdes.string, value: serdes.json });
      const stateDir = mkdtempSync(join(tmpdir(), `iqgate-warm-join-${i}-`));
      dirs.push(stateDir);
      const runtime = createRuntime({
        applicationId, brokers: kafkaBrokers(), stateDir, topology: builder.build(), kafkaClient, logger,
        sessionTimeoutMs: 10_000, cacheMaxBytes: 0,
      });
      cleanups.push(() => runtime.stop({ leaveGroup: true }));
      await runtime.start();
      return { runtime, logs };
    };
    const committedAll = (runtime: Runtime, partition: number): boolean => {
      const local = runtime.localStore('items', partition);
      return local !== undefined && local.store.committedPosition().isEmpty() === false;
    };

    const first = await start(0);
    expect(first.logs.find((l) => l.msg === 'joining the group without a warm-up')).toMatchObject({ reason: expect.stringMatching(/^the group has no members/) });
    await waitFor(() => [0, 1, 2, 3].every((p) => committedAll(first.runtime, p)), 60_000, 100, 'the first instance committing every partition');

    const second = await start(1);
    // start() resolved after the warm-up and the subscription: every task was warm before the join.
    const warmed = second.logs.find((l) => l.msg === 'warm-up done; joining the group');
    expect(warmed).toMatchObject({ tasks: PARTITIONS, ready: PARTITIONS, behind: 0 });
    const warmedAt = second.logs.indexOf(warmed!);
    expect(second.logs.findIndex((l) => l.msg === 'runtime running')).toBeGreaterThan(warmedAt);
    // The group moves tasks to it; they open on the warm stores.
    await waitFor(() => second.runtime.localTasks().some((t) => t.state === 'RUNNING'), 60_000, 100, 'a task RUNNING on the second instance');
    await waitFor(() => second.runtime.localTasks().every((t) => t.state === 'RUNNING'), 60_000, 100, 'every task of the second instance RUNNING');
    const opened = second.logs.filter((l) => l.msg === 'task running');
    expect(opened.length).toBeGreaterThan(0);
    for (const line of opened) expect(line.replayed).toEqual({ items: 0 });
    // The values are there, as the first instance committed them.
    for (const task of second.runtime.localTasks()) {
      const store = second.runtime.localStore('items', task.partition)!.store;
      const view = store.view({ readCommitted: true });
      let count = 0;
      for await (const { key } of view.range()) {
        expect(byPartition[task.partition]).toContain(serdes.string.deserialize(key));
        count += 1;
      }
      await view.close();
      expect(count).toBe(KEYS_PER_PARTITION);
    }
    // No standby replicas asked for: the warm copies of the tasks it did not get are let go.
    await waitFor(() => second.runtime.standbyTasks().length === 0, 30_000, 100, 'the unneeded warm copies released');
  });
});
