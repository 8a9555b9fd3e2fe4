/**
 * `iqgate start`'s environment: a secret set as a value (not through its _FILE) stops start-up
 * with INVALID_CONFIG naming the variable to use and never the value; a malformed URL is shown
 * without its user and password.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: root,
      timeout: 30_000,
      env: { ...process.env, KAFKA_BROKERS: '127.0.0.1:1', ...env },
    }, (_error, _stdout, stderr) => resolve({ code: child.exitCode, stderr }));
  });
}

describe('the environment of iqgate start', () => {
  it('refuses a secret set as a value, naming the _FILE variable to use and not the value', async () => {
    const result = await start({ KAFKA_SASL_PASSWORD: 'hunter2-in-env', IQGATE_CLUSTER_SECRET: 'cluster-secret-in-env' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/INVALID_CONFIG: invalid environment: KAFKA_SASL_PASSWORD is read from a file: put it in one and set KAFKA_SASL_PASSWORD_FILE to its path; IQGATE_CLUSTER_SECRET is read from a file/);
    expect(result.stderr).not.toContain('hunter2-in-env');
    expect(result.stderr).not.toContain('cluster-secret-in-env');
  });

  it('shows a malformed URL without its user and password', async () => {
    const result = await start({ IQGATE_ADVERTISED_URL: 'http://svc:pa55word@' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/IQGATE_ADVERTISED_URL: .*\(got "http:\/\/…@"\)/);
    expect(result.stderr).not.toContain('pa55word');
  });
});
