import { describe, expect, it } from 'vitest';
import { produceLines, runWordcount } from '../../../examples/wordcount/index.js';
import { brokers } from './brokers.js';
import { convergedCounts, expectedCounts, outputProblems, readOutput, uniqueName, wordcountSuite } from './wordcount-harness.js';

const LINES = 3000;
const SEED = 7;

// On each adapter: librdkafka (one transaction per instance, processing through commits) and
// kafkajs (a transaction per task). The crash, zombie, outage and restart tests run on the default.
describe.each(['librdkafka', 'kafkajs'] as const)('wordcount under exactly-once against the real broker on %s', (kafkaClient) => {
  const { kafka, runtimes, createTopics, stateDir } = wordcountSuite();

  it('commits store counts equal to the counts of the input, and an output with every update exactly once', async () => {
    const input = uniqueName('wc-in');
    const output = uniqueName('wc-out');
    await createTopics([input, output], 4);
    await produceLines({ brokers: brokers(), topic: input, seed: SEED, count: LINES });
    const dir = await stateDir('iqgate-wc-');

    const runtime = await runWordcount({
      brokers: brokers(), inputTopic: input, outputTopic: output, applicationId: uniqueName('wc'),
      stateDir: dir, cacheMaxBytes: 0, logLevel: 'warn', kafkaClient,
    });
    runtimes.push(runtime);
    const expected = expectedCounts(SEED, LINES);

    const committed = await convergedCounts(runtimes, expected);
    expect(committed).toEqual(expected);

    const updates = await readOutput(kafka, output);
    expect(outputProblems(updates, expected, true)).toEqual([]);
    expect(runtime.metricsSnapshot().commits).toBeGreaterThan(0);

    // What the query layer reads: store definitions with serdes and partitions, local partitions with task state.
    const [definition] = runtime.storeDefinitions();
    expect(definition).toMatchObject({ storeName: 'word-counts', partitions: 4 });
    expect(definition?.keySerde.name).toBe('string');
    expect(definition?.valueSerde.name).toBe('int64');
    const locals = runtime.localStores();
    expect(locals.map((l) => l.partition).sort()).toEqual([0, 1, 2, 3]);
    expect(locals.every((l) => l.taskState === 'RUNNING' && l.storeName === 'word-counts')).toBe(true);
  });
});
