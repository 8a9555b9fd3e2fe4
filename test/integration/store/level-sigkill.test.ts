/**
 * A child process commits in a loop on the LevelDB engine and is SIGKILLed at a random
 * moment, several times over the same directory. After each kill, reopening shows exactly
 * one commit's state, never a mix: the last acknowledged commit, or the one whose ack was
 * still on its way when the kill landed, with the matching changelog offset and Position,
 * and none of the writes made after it.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLevelStoreEngine } from '../../../src/store/index.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/commit-loop.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Runs the child until it acknowledged at least `acks` more commits, then SIGKILLs it. */
function runAndKill(directory: string, acks: number): Promise<{ start: number; lastAck: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, directory], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let start = -1;
    let lastAck = -1;
    let buffered = '';
    let stderr = '';
    let killed = false;
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const [word, value] = line.split(' ');
        if (word === 'start') start = Number(value);
        if (word === 'ack') lastAck = Number(value);
      }
      if (!killed && start >= 0 && lastAck >= start + acks) {
        killed = true;
        child.kill('SIGKILL');
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve({ start, lastAck });
      else reject(new Error(`child exited with ${String(code)} before the kill: ${stderr}`));
    });
  });
}

async function collect(iterator: AsyncIterableIterator<{ key: Buffer; value: Buffer }>): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for await (const { key, value } of iterator) out.set(key.toString(), value);
  return out;
}

describe('LevelDB engine under SIGKILL', () => {
  let directory: string;
  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'iqgate-sigkill-'));
  });
  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('reopening after each kill shows exactly the last acknowledged commit (or the one in flight), never a mix', async () => {
    let previous = 0;
    for (let round = 0; round < 5; round++) {
      const { start, lastAck } = await runAndKill(directory, 20 + Math.floor(Math.random() * 150));
      expect(start).toBe(previous);

      const engine = await openLevelStoreEngine({ directory });
      try {
        const task = await engine.openTask('task-0', [{ name: 's', partition: 0 }]);
        const m = task.changelogOffsets().s ?? 0;
        expect(m === lastAck || m === lastAck + 1, `reopened at commit ${m}, last ack ${lastAck}`).toBe(true);
        const store = task.store('s');
        expect(store.committedPosition().toJSON()).toEqual({ in: { '0': m } });
        const view = store.view({ readCommitted: true });
        try {
          expect(view.position.toJSON()).toEqual({ in: { '0': m } });
          const entries = await collect(view.range());
          const expected = new Set<string>(['counter']);
          for (let j = 1; j <= m; j++) for (let i = 0; i < 20; i++) if (!(i === 0 && j <= m - 5)) expected.add(`k${j}-${i}`);
          // zz-uncommitted-<j> is written after commit j, so commit j+1 carries it; the one
          // written after commit m was never committed.
          expect(entries.has(`zz-uncommitted-${m}`)).toBe(false);
          const dataKeys = [...entries.keys()].filter((key) => !key.startsWith('zz-'));
          expect(dataKeys.length).toBe(expected.size);
          for (const key of expected) expect(entries.has(key), `missing ${key}`).toBe(true);
          expect(entries.get('counter')?.toString()).toBe(String(m));
          expect(entries.get(`k${m}-19`)?.equals(Buffer.alloc(200, m % 256))).toBe(true);
        } finally {
          await view.close();
        }
        // A freshly opened engine holds nothing uncommitted: both isolation levels agree.
        const committedAgain = store.view({ readCommitted: true });
        const uncommitted = store.view({ readCommitted: false });
        expect([...(await collect(uncommitted.range())).keys()]).toEqual([...(await collect(committedAgain.range())).keys()]);
        expect(store.get(Buffer.from('counter'))?.toString()).toBe(String(m));
        await Promise.all([uncommitted.close(), committedAgain.close()]);
        previous = m;
      } finally {
        await engine.close();
      }
    }
  });
});
