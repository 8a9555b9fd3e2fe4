/**
 * The iqgate command as a process (src/cli.ts under tsx; packed-package.test.ts runs the
 * compiled one): help exits 0, bad input stops before anything starts — no local broker —
 * with the option's name, what is wrong, and exit code 2.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

function iqgate(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const environment: NodeJS.ProcessEnv = { ...process.env, PORT: '0', ...env };
  // Unset: a bad value must fail before main() would start a local broker.
  if (env.KAFKA_BROKERS === undefined) delete environment.KAFKA_BROKERS;
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { env: environment, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('the iqgate command', () => {
  it('prints its help and exits 0', () => {
    const result = iqgate(['--help']);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('--brokers, KAFKA_BROKERS');
  });

  it.each([
    [['start', '--prot', '4000'], {}, 'iqgate: INVALID_CONFIG: unknown option --prot'],
    [['start', '--port'], {}, "iqgate: INVALID_CONFIG: Option '--port <value>' argument missing"],
    [['stop'], {}, 'iqgate: INVALID_CONFIG: unknown command "stop"'],
    [['start'], { PORT: 'eighty' }, 'iqgate: INVALID_CONFIG: invalid environment: PORT: Expected number, received nan (got "eighty")'],
    [['start', '--port', '70000'], {}, 'invalid environment: PORT: Number must be less than or equal to 65535 (got "70000")'],
    [['start'], { IQGATE_KAFKA_CLIENT: 'rdkafka' }, 'invalid environment: IQGATE_KAFKA_CLIENT'],
    [['start', '--guarantee', 'twice'], {}, 'invalid environment: IQGATE_GUARANTEE'],
  ] as Array<[string[], Record<string, string>, string]>)('%j with %j exits 2: %s', (args, env, message) => {
    const result = iqgate(args, env);
    expect(result.status, result.stderr).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stdout).not.toContain('starting a local Kafka broker');
  });
});
