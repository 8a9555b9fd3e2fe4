/**
 * Runs examples/wordcount/main.ts in a child process (node --import tsx) and follows its JSON
 * logs, so tests can crash it (SIGKILL), freeze it (SIGSTOP) and read what it reported.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { brokers } from './brokers.js';

const MAIN = fileURLToPath(new URL('../../../examples/wordcount/main.ts', import.meta.url));

export interface ChildLog {
  readonly msg?: string;
  readonly taskId?: string;
  readonly replayed?: Record<string, number>;
  readonly [field: string]: unknown;
}

export interface WordcountChild {
  readonly process: ChildProcess;
  readonly logs: ChildLog[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitForLog(predicate: (log: ChildLog) => boolean, timeoutMs?: number): Promise<ChildLog>;
  kill(signal: NodeJS.Signals): void;
  stderr(): string;
}

export interface WordcountChildOptions {
  readonly appId: string;
  readonly input: string;
  readonly output: string;
  readonly stateDir: string;
  readonly crashAt?: string;
  readonly sessionTimeoutMs?: number;
  readonly extraEnv?: Record<string, string>;
  /**
   * A command the child runs under, e.g. `['ip', 'netns', 'exec', name]` (network-namespace.ts):
   * it must exec node in its own process, so signals sent to the child reach node itself.
   */
  readonly prefix?: readonly string[];
}

export const liveChildren = new Set<ChildProcess>();

export function spawnWordcount(options: WordcountChildOptions): WordcountChild {
  const env: Record<string, string> = {
    ...process.env as Record<string, string>,
    KAFKA_BROKERS: brokers().join(','),
    WORDCOUNT_APP_ID: options.appId,
    WORDCOUNT_INPUT: options.input,
    WORDCOUNT_OUTPUT: options.output,
    IQGATE_STATE_DIR: options.stateDir,
    IQGATE_SESSION_TIMEOUT_MS: String(options.sessionTimeoutMs ?? 6000),
    IQGATE_CACHE_MAX_BYTES: '0',
    IQGATE_LOG_LEVEL: 'info',
    KAFKAJS_NO_PARTITIONER_WARNING: '1',
    ...options.extraEnv,
  };
  delete env.IQGATE_CRASH_AT;
  if (options.crashAt !== undefined) env.IQGATE_CRASH_AT = options.crashAt;
  const argv = [...(options.prefix ?? []), process.execPath, '--import', 'tsx', MAIN];
  const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  liveChildren.add(child);
  const logs: ChildLog[] = [];
  const waiters: Array<{ predicate: (log: ChildLog) => boolean; resolve: (log: ChildLog) => void }> = [];
  let buffer = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      let log: ChildLog;
      try {
        log = JSON.parse(line) as ChildLog;
      } catch {
        continue;
      }
      logs.push(log);
      for (const w of [...waiters]) {
        if (w.predicate(log)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(log);
        }
      }
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-20_000);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      liveChildren.delete(child);
      resolve({ code, signal });
    });
  });
  return {
    process: child,
    logs,
    exited,
    stderr: () => stderr,
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
    waitForLog: (predicate, timeoutMs = 60_000) => {
      const found = logs.find(predicate);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise<ChildLog>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`child log not seen within ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}`)), timeoutMs);
        const waiter = { predicate, resolve: (log: ChildLog) => { clearTimeout(timer); resolve(log); } };
        waiters.push(waiter);
        void exited.then(() => {
          if (waiters.includes(waiter)) {
            waiters.splice(waiters.indexOf(waiter), 1);
            clearTimeout(timer);
            reject(new Error(`child exited before the log appeared; stderr: ${stderr.slice(-2000)}`));
          }
        });
      });
    },
  };
}

/** For afterAll: SIGKILL whatever is still running (a SIGSTOPped child is continued first). */
export async function killAllChildren(): Promise<void> {
  const waits: Array<Promise<void>> = [];
  for (const child of liveChildren) {
    waits.push(new Promise((resolve) => child.once('exit', () => resolve())));
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
  await Promise.all(waits);
}
