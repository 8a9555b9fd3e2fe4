/**
 * Zombie fencing: instance A is frozen with SIGSTOP (mid-transaction) past its session timeout,
 * its partitions move to instance B, then A is thawed with SIGCONT. A's transactions must be
 * fenced (kafkajs, one transactionalId per task: B's InitProducerId bumped the epoch and aborted
 * A's open transaction; librdkafka, KIP-447: A's offsets carry a stale generation, or its
 * partitions come back lost), A must roll back instead of committing, and nothing may be
 * duplicated or lost.
 * Finally a fresh instance restores every store from the changelogs alone and must match the model.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { produceLines } from '../../../examples/wordcount/index.js';
import { brokers } from './brokers.js';
import { countsOnDisk } from './committed-store-on-disk.js';
import { killAllChildren, spawnWordcount, type ChildLog, type WordcountChild } from './wordcount-child.js';
import { createTopics, expectedCounts, mapsEqual, outputProblems, readOutput, testKafka, uniqueName, until } from './wordcount-harness.js';

const PARTITIONS = 3;
const SEED = 57;
const TASKS = 2 * PARTITIONS;

function runningTasks(child: WordcountChild): Set<string> {
  return new Set(child.logs.filter((l) => l.msg === 'task running').map((l) => String(l.taskId)));
}


/**
 * kafkajs (a producer per task): the new owner's InitProducerId fences the zombie's producers.
 * librdkafka (exactly-once v2, KIP-447): the group fences the zombie — its offset commit carries
 * a stale generation (PRODUCER_FENCED), or, when its consumer notices first, its partitions come
 * back as lost and their uncommitted work is dropped.
 */
function mentionsFencing(log: ChildLog): boolean {
  return JSON.stringify(log).includes('PRODUCER_FENCED') || (log.msg?.startsWith('partitions lost') === true && log.fenced === true);
}

describe('a frozen instance that comes back (zombie)', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    await killAllChildren();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('is fenced after SIGCONT and nothing it did while frozen is duplicated', async () => {
    const kafka = testKafka();
    const admin = kafka.admin();
    await admin.connect();
    const input = uniqueName('zb-in');
    const output = uniqueName('zb-out');
    const appId = uniqueName('zb');
    await createTopics(admin, [input, output], PARTITIONS);
    await admin.disconnect();
    const dir = async (): Promise<string> => {
      const d = await mkdtemp(join(tmpdir(), 'iqgate-zb-'));
      dirs.push(d);
      return d;
    };
    let produced = 0;
    const produce = async (count: number): Promise<void> => {
      const from = produced;
      produced += count;
      await produceLines({ brokers: brokers(), topic: input, seed: SEED, from, count });
    };
    const outputComplete = async (): Promise<boolean> => {
      const expected = expectedCounts(SEED, produced);
      const updates = await readOutput(kafka, output);
      return [...expected].every(([w, n]) => updates.get(w)?.at(-1) === n);
    };

    await produce(300);
    const a = spawnWordcount({ appId, input, output, stateDir: await dir(), sessionTimeoutMs: 6000 });
    await until('A running all tasks', () => runningTasks(a).size === TASKS);
    await until('A caught up', outputComplete);

    // Freeze A in the middle of work: new lines, a moment to start processing them, SIGSTOP.
    await produce(300);
    // The freeze point is deliberately arbitrary (within A's first few commit intervals of the new lines).
    await new Promise((r) => setTimeout(r, 50 + Math.floor(Math.random() * 250)));
    a.kill('SIGSTOP');

    const b = spawnWordcount({ appId, input, output, stateDir: await dir(), sessionTimeoutMs: 6000 });
    await until('B running all tasks (A evicted after its session timeout)', () => runningTasks(b).size === TASKS, 90_000);
    await produce(300);
    await until('B caught up', outputComplete, 60_000);

    // Thaw the zombie: it still believes it owns every task.
    a.kill('SIGCONT');
    await until('A noticing it was fenced', () => a.logs.some(mentionsFencing), 60_000);
    await produce(300);
    await until('the group caught up after A rejoined', outputComplete, 90_000);

    a.kill('SIGTERM');
    b.kill('SIGTERM');
    expect((await a.exited).code).toBe(0);
    expect((await b.exited).code).toBe(0);

    const expected = expectedCounts(SEED, produced);
    expect(outputProblems(await readOutput(kafka, output), expected, true)).toEqual([]);

    // A fresh instance rebuilds every store from the changelogs alone.
    const freshDir = await dir();
    const c = spawnWordcount({ appId, input, output, stateDir: freshDir, sessionTimeoutMs: 6000 });
    await until('C restored and running all tasks', () => runningTasks(c).size === TASKS, 90_000);
    c.kill('SIGTERM');
    expect((await c.exited).code).toBe(0);
    expect(mapsEqual(await countsOnDisk(freshDir, input, output, PARTITIONS), expected)).toBe(true);
  }, 240_000);
});
