/**
 * A transaction the broker refuses, through the whole engine on librdkafka (one transaction per
 * instance): one record of it is too large for its topic (max.message.bytes 512), so the commit
 * fails, the committer confirms the abort, and the tasks rewind from memory — the aborted cut's
 * records, and those processed while it was committing, go back to their inboxes and are
 * processed again (the oversized record is emitted only the first time). Then every count update
 * must be in the output exactly once, nothing of the aborted transaction may show, and the
 * committed store must equal the input's counts.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadLibrdkafka } from '../../../src/kafka/librdkafka/native.js';
import { StreamsBuilder } from '../../../src/processing/stream-builder.js';
import { createRuntime } from '../../../src/runtime/runtime.js';
import { serdes } from '../../../src/store/serdes.js';
import { brokers } from './brokers.js';
import { committedCounts, mapsEqual, outputProblems, readOutput, uniqueName, wordcountSuite } from './wordcount-harness.js';

const KEYS = 5;
const RECORDS = 400;

describe.skipIf(!loadLibrdkafka().ok)('a refused transaction on librdkafka', () => {
  const { kafka, runtimes, createTopics } = wordcountSuite();

  it('rewinds its tasks from memory and counts every record once', async () => {
    const [input, output, doomed] = [uniqueName('rw-in'), uniqueName('rw-out'), uniqueName('rw-doomed')];
    await createTopics([input, output], 2);
    await createTopics([doomed], 1, [{ name: 'max.message.bytes', value: '512' }]);

    let oversizedSent = false;
    const b = new StreamsBuilder();
    const lines = b.stream(input, { key: serdes.string, value: serdes.string });
    // The 200th record, the first time it is processed only: a 4 KB value the topic refuses.
    lines.filter((_key, value) => {
      if (value !== 'v200' || oversizedSent) return false;
      oversizedSent = true;
      return true;
    }).mapValues(() => 'x'.repeat(4_096), serdes.string).to(doomed);
    lines.groupByKey().count({ store: 'word-counts', value: serdes.int64 }).toStream().to(output);

    const logLines: string[] = [];
    const sink = new Writable({ write(chunk: Buffer, _encoding, done) { logLines.push(chunk.toString()); done(); } });
    const runtime = createRuntime({
      brokers: brokers(), applicationId: uniqueName('rw'), topology: b.build(), kafkaClient: 'librdkafka',
      logger: pino({ level: 'info' }, sink), commitIntervalMs: 100, cacheMaxBytes: 0,
    });
    runtimes.push(runtime);
    await runtime.start();

    const producer = kafka.producer();
    await producer.connect();
    // In four sends, so that records arrive while the failing transaction commits.
    for (let part = 0; part < 4; part += 1) {
      await producer.send({
        topic: input,
        messages: Array.from({ length: RECORDS / 4 }, (_, j) => {
          const i = part * (RECORDS / 4) + j;
          return { key: `k${i % KEYS}`, value: `v${i}` };
        }),
      });
      await new Promise((r) => setTimeout(r, 150));
    }
    await producer.disconnect();

    const expected = new Map(Array.from({ length: KEYS }, (_, k) => [`k${k}`, RECORDS / KEYS]));
    const deadline = Date.now() + 60_000;
    let counts = new Map<string, number>();
    while (!mapsEqual(counts, expected)) {
      if (Date.now() > deadline) throw new Error(`store did not converge: ${JSON.stringify([...counts])}\n${logLines.slice(-5).join('')}`);
      await new Promise((r) => setTimeout(r, 200));
      counts = await committedCounts(runtimes);
    }
    expect(oversizedSent).toBe(true);
    const rewound = logLines.filter((l) => l.includes('its tasks rewind to their last commit'));
    expect(rewound.length, 'the refused transaction was aborted and its tasks rewound in memory').toBeGreaterThanOrEqual(1);
    expect(logLines.filter((l) => l.includes('rolled back and re-opened')), 'no task was re-opened').toEqual([]);
    expect(outputProblems(await readOutput(kafka, output), expected, true)).toEqual([]);
  }, 120_000);
});
