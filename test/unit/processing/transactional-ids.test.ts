import { describe, expect, it } from 'vitest';
import { StreamsBuilder } from '../../../src/processing/stream-builder.js';
import { serdes } from '../../../src/store/serdes.js';
import { buildWordcountTopology } from '../../../examples/wordcount/index.js';
import { brokerWithTopics, harnessesClosedAfterEach } from './processing-fixture.js';

const harnesses = harnessesClosedAfterEach();

describe('transactional ids', () => {
  it('are <appId>-<topic>-<partition>, without a second app-id prefix for repartition tasks', async () => {
    const broker = brokerWithTopics(['lines', 'app-words-repartition', 'counts']);
    const h = await harnesses.start({ topology: buildWordcountTopology({ inputTopic: 'lines', outputTopic: 'counts' }), partitions: 1, broker });
    h.ports.consumer.assign([{ topic: 'lines', partition: 0 }, { topic: 'app-words-repartition', partition: 0 }]);
    await h.manager.control.idle();
    expect(broker.calls.filter((c) => c.startsWith('init:')).sort()).toEqual(['init:app-lines-0', 'init:app-words-repartition-0']);
  });

  it('stay unique without the prefix: the topology rejects an input topic named like an internal one', () => {
    const b = new StreamsBuilder();
    b.stream('lines', { key: serdes.string, value: serdes.string })
      .groupBy((_k, line) => line, { key: serdes.string, name: 'words' })
      .count({ store: 'c', value: serdes.int32 });
    b.stream('words-repartition', { key: serdes.string, value: serdes.string }).to('copy');
    // Otherwise both tasks of partition p would be `app-words-repartition-<p>` and fence each other.
    expect(() => b.build()).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
  });
});
