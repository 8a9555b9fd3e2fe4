/**
 * `npm start` as a user runs it: src/main.ts in a child process with the given environment, its
 * output collected, the GraphiQL URL it prints, and a SIGTERM stop that reports the exit code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { waitFor } from '../../support/kafka.js';

export interface MainProcess {
  readonly child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Waits for "GraphiQL: <url>" (or the process's end) and returns the URL, undefined if it ended first. */
  graphqlUrl(timeoutMs?: number): Promise<string | undefined>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL if still running (for afterAll). */
  kill(): void;
}

export function startMain(env: Record<string, string>): MainProcess {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: { ...process.env, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const urlOf = (): string | undefined => /GraphiQL: (\S+)/.exec(output)?.[1];
  return {
    child,
    output: () => output,
    async graphqlUrl(timeoutMs = 90_000) {
      await waitFor(() => urlOf() !== undefined || child.exitCode !== null, timeoutMs);
      return urlOf();
    },
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      return exited;
    },
    kill() {
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
