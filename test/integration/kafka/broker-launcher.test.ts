/**
 * The broker launcher fails with a clear, coded message instead of hanging or leaving a JVM
 * behind: no java, no mvn, jars that cannot be fetched, a port that is taken.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BrokerError, startBroker } from '../../../scripts/kafka/broker.js';

const tempDirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'iqgate-launcher-'));
  tempDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

function which(command: string): string {
  return spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).stdout.trim();
}

/** Runs `npm run kafka -- <args>` as a user would, with a chosen PATH and cache. */
function runCli(args: string[], env: Record<string, string>): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/kafka/cli.ts', ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 120_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('npm run kafka', () => {
  it('says that java is missing when it is not on PATH', () => {
    const { status, output } = runCli(['start'], { PATH: tempDir() });
    expect(status).toBe(1);
    expect(output).toContain('JAVA_MISSING');
    expect(output).toMatch(/java is not on PATH/);
  });

  it('says that mvn is missing when the jars are not cached and mvn is not on PATH', () => {
    const bin = tempDir();
    symlinkSync(which('java'), join(bin, 'java'));
    const { status, output } = runCli(['start'], { PATH: bin, IQGATE_CACHE_DIR: tempDir() });
    expect(status).toBe(1);
    expect(output).toContain('MVN_MISSING');
  });

  it('reports a fetch failure when Maven cannot resolve the broker jars', () => {
    const { status, output } = runCli(['fetch'], { IQGATE_CACHE_DIR: tempDir(), IQGATE_KAFKA_VERSION: '0.0.0-no-such-version' });
    expect(status).toBe(1);
    expect(output).toContain('FETCH_FAILED');
    expect(output).toContain('0.0.0-no-such-version');
  });

  it('reports BIND_FAILED, and leaves no JVM behind, when the broker port is taken', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const address = blocker.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const failure = await startBroker({ ports: { broker: port, controller: port + 1 } }).then(
        async (broker) => {
          await broker.stop();
          return undefined;
        },
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(BrokerError);
      expect(`${(failure as BrokerError).code}: ${(failure as BrokerError).message}`).toMatch(/^BIND_FAILED: /);
      const jvms = spawnSync('pgrep', ['-f', `PLAINTEXT://127.0.0.1:${port}`], { encoding: 'utf8' }).stdout.trim();
      expect(jvms).toBe('');
    } finally {
      blocker.close();
    }
  });
});
