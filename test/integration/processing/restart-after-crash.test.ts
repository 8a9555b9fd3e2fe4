/**
 * A restart after a crash does not wait out the crashed member's session. The wordcount runs in a
 * child process with a 30 s session timeout (the runtime's default) and is SIGKILLed; the next
 * run on the same state directory has every task RUNNING well before that session could expire.
 * On kafkajs it removes the member the crashed run left in the group (group-member-file.ts); on
 * librdkafka it rejoins under the same group.instance.id (static membership, KIP-345), which
 * takes the crashed member's place. Without either the new member's join waits for the old one
 * until its session times out.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { produceLines } from '../../../examples/wordcount/index.js';
import { brokers } from './brokers.js';
import { killAllChildren, spawnWordcount, type WordcountChild } from './wordcount-child.js';
import { createTopics, testKafka, uniqueName } from './wordcount-harness.js';

const PARTITIONS = 3;
const SESSION_TIMEOUT_MS = 30_000;
/** Tasks of both sub-topologies (splitting lines, counting words). */
const TASKS = 2 * PARTITIONS;

afterAll(async () => {
  await killAllChildren();
});

async function allTasksRunning(child: WordcountChild, timeoutMs: number): Promise<void> {
  const seen = new Set<string>();
  await child.waitForLog((log) => {
    if (log.msg === 'task running' && typeof log.taskId === 'string') seen.add(log.taskId);
    return seen.size === TASKS;
  }, timeoutMs);
}

describe('a restart after a crash', () => {
  it('removes the crashed run\'s group member and runs again long before its session would expire', async () => {
    const appId = uniqueName('restart');
    const input = `${appId}-in`;
    const output = `${appId}-out`;
    const stateDir = await mkdtemp(join(tmpdir(), 'iqgate-restart-'));
    try {
      const admin = testKafka().admin();
      await admin.connect();
      await createTopics(admin, [input, output], PARTITIONS);
      await admin.disconnect();
      await produceLines({ brokers: brokers(), topic: input, seed: 7, count: 60 });

      const first = spawnWordcount({ appId, input, output, stateDir, sessionTimeoutMs: SESSION_TIMEOUT_MS });
      await allTasksRunning(first, 60_000);
      first.kill('SIGKILL');
      await first.exited;

      const restartedAt = Date.now();
      const second = spawnWordcount({ appId, input, output, stateDir, sessionTimeoutMs: SESSION_TIMEOUT_MS });
      await allTasksRunning(second, SESSION_TIMEOUT_MS - 5_000);
      const tookMs = Date.now() - restartedAt;
      const client = second.logs.find((log) => typeof log.kafkaClient === 'string')?.kafkaClient;
      if (client === 'librdkafka') {
        const instanceOf = (child: WordcountChild): unknown => child.logs.find((log) => log.groupInstanceId !== undefined)?.groupInstanceId;
        expect(instanceOf(second), second.stderr()).toBeDefined();
        expect(instanceOf(second), 'the restart rejoins as the same static member').toBe(instanceOf(first));
      } else {
        expect(client, second.stderr()).toBe('kafkajs');
        expect(second.logs.some((log) => log.msg === 'removed the member a previous run left in the group'), second.stderr()).toBe(true);
      }
      expect(tookMs).toBeLessThan(SESSION_TIMEOUT_MS / 2);
      second.kill('SIGKILL');
      await second.exited;
    } finally {
      await killAllChildren();
      await rm(stateDir, { recursive: true, force: true });
    }
  });
});
