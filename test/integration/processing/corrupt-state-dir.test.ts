/**
 * The wordcount on the real broker, whose state directory is damaged between two runs (bytes
 * overwritten in LevelDB's MANIFEST): the second instance starts anyway, says why in one warn
 * line, wipes LevelDB's files, restores its stores from their changelogs, and serves exactly the
 * counts of the input — no crash loop, no manual clean-up.
 */
import { openSync, readdirSync, statSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { produceLines, runWordcount } from '../../../examples/wordcount/index.js';
import { brokers } from './brokers.js';
import { capturingLogger, convergedCounts, expectedCounts, uniqueName, wordcountSuite } from './wordcount-harness.js';

const LINES = 800;
const SEED = 5;

describe('a damaged state directory on the real broker', () => {
  const { runtimes, createTopics, stateDir } = wordcountSuite();

  it('starts, wipes and restores from the changelogs, and serves the right counts', async () => {
    const input = uniqueName('corrupt-in');
    const output = uniqueName('corrupt-out');
    await createTopics([input, output], 2);
    await produceLines({ brokers: brokers(), topic: input, seed: SEED, count: LINES });
    const dir = await stateDir('iqgate-corrupt-');
    const applicationId = uniqueName('corrupt-wc');
    const options = { brokers: brokers(), inputTopic: input, outputTopic: output, applicationId, stateDir: dir, cacheMaxBytes: 0, kafkaClient: 'kafkajs' as const };
    const expected = expectedCounts(SEED, LINES);

    const first = await runWordcount({ ...options, logLevel: 'warn' });
    runtimes.push(first);
    await convergedCounts([first], expected);
    await first.stop();
    runtimes.splice(runtimes.indexOf(first), 1);

    const manifest = readdirSync(dir).find((name) => name.startsWith('MANIFEST-'))!;
    const fd = openSync(join(dir, manifest), 'r+');
    writeSync(fd, Buffer.alloc(64, 0xff), 0, 64, Math.floor(statSync(join(dir, manifest)).size / 2));
    closeSync(fd);

    const { logger, lines } = capturingLogger('warn');
    const second = await runWordcount({ ...options, logger });
    runtimes.push(second);
    expect(await convergedCounts([second], expected)).toEqual(expected);
    const warned = lines().map((line) => JSON.parse(line) as { msg: string; reason: string }).filter((line) => line.msg.includes('state directory is damaged'));
    expect(warned).toHaveLength(1);
    expect(warned[0]!.reason).toMatch(/Corruption/);
  });
});
