/**
 * Repartition topics on the real broker, as Kafka Streams keeps them: created with unlimited
 * retention (a long lag or old timestamps never delete unprocessed records), and purged up to
 * the committed offsets while the application runs (DeleteRecords), on both clients.
 */
import { describe, expect, it } from 'vitest';
import { produceLines, runWordcount } from '../../../examples/wordcount/index.js';
import { brokers } from './brokers.js';
import { convergedCounts, expectedCounts, uniqueName, until, wordcountSuite } from './wordcount-harness.js';

const LINES = 1000;
const SEED = 3;

describe.each(['librdkafka', 'kafkajs'] as const)('repartition topics on %s', (kafkaClient) => {
  const { kafka, runtimes, createTopics, stateDir } = wordcountSuite();

  it('are created with unlimited retention and purged up to the committed offsets', async () => {
    const input = uniqueName('purge-in');
    const output = uniqueName('purge-out');
    await createTopics([input, output], 2);
    await produceLines({ brokers: brokers(), topic: input, seed: SEED, count: LINES });
    const applicationId = uniqueName('purge-wc');
    const runtime = await runWordcount({
      brokers: brokers(), inputTopic: input, outputTopic: output, applicationId, kafkaClient,
      stateDir: await stateDir('iqgate-purge-'), cacheMaxBytes: 0, logLevel: 'warn', repartitionPurgeIntervalMs: 300,
    });
    runtimes.push(runtime);
    const expected = expectedCounts(SEED, LINES);
    await convergedCounts([runtime], expected);

    const repartition = `${applicationId}-words-repartition`;
    const admin = kafka.admin();
    await admin.connect();
    try {
      const configs = await admin.describeConfigs({ resources: [{ type: 2, name: repartition, configNames: ['retention.ms'] }], includeSynonyms: false });
      expect(configs.resources[0]!.configEntries.find((e) => e.configName === 'retention.ms')?.configValue).toBe('-1');
      // Every partition's records before the group's committed offset are gone (its low watermark reached it).
      const committed = new Map<number, number>();
      await until('the records before the committed offsets are deleted', async () => {
        const [group] = await admin.fetchOffsets({ groupId: applicationId, topics: [repartition] });
        for (const p of group!.partitions) committed.set(p.partition, Number(p.offset));
        const low = await admin.fetchTopicOffsets(repartition);
        return low.every((p) => Number(p.low) > 0 && Number(p.low) === committed.get(p.partition));
      }, 30_000, 200);
      expect([...committed.values()].every((offset) => offset > 0)).toBe(true);
    } finally {
      await admin.disconnect();
    }
  });
});
