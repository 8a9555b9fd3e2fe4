/** Reads a stopped instance's committed word counts straight from its LevelDB state directory. */
import { buildWordcountTopology } from '../../../examples/wordcount/index.js';
import { openLevelStoreEngine } from '../../../src/store/level-engine.js';
import { serdes } from '../../../src/store/serdes.js';
import { taskIdFor } from '../../../src/processing/topic-names.js';

export async function countsOnDisk(stateDir: string, input: string, output: string, partitions: number): Promise<Map<string, number>> {
  const topology = buildWordcountTopology({ inputTopic: input, outputTopic: output });
  const sub = topology.subTopologies.find((s) => s.stores.includes('word-counts'));
  if (sub === undefined) throw new Error('no word-counts sub-topology');
  const engine = await openLevelStoreEngine({ directory: stateDir });
  const counts = new Map<string, number>();
  try {
    for (let p = 0; p < partitions; p += 1) {
      const task = await engine.openTask(taskIdFor(sub.id, p), [{ name: 'word-counts', partition: p }]);
      const view = task.store('word-counts').view({ readCommitted: true });
      try {
        for await (const { key, value } of view.range()) {
          const word = serdes.string.deserialize(key);
          if (counts.has(word)) throw new Error(`word ${word} in two partitions`);
          counts.set(word, Number(serdes.int64.deserialize(value)));
        }
      } finally {
        await view.close();
        await task.close();
      }
    }
  } finally {
    await engine.close();
  }
  return counts;
}
