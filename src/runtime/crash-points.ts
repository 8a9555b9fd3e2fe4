/**
 * Test-only crash injection: `IQGATE_CRASH_AT=<commit step>[:<n>[:<task id prefix>]]` kills the
 * process with SIGKILL at the n-th (default first) time a task (whose id starts with the prefix,
 * e.g. `1_` for sub-topology 1) reaches that step of the commit protocol (after-flush,
 * after-send, after-send-offsets, after-kafka-commit, after-store-commit).
 * This is how the crash tests hit the window between the Kafka commit and the store commit.
 */
import { COMMIT_STEPS, type CommitStep } from '../processing/stream-task.js';

export function crashHookFromEnv(env: NodeJS.ProcessEnv = process.env): ((step: CommitStep, taskId: string) => void) | undefined {
  const spec = env.IQGATE_CRASH_AT;
  if (spec === undefined || spec === '') return undefined;
  const [step, count, prefix] = spec.split(':');
  if (!(COMMIT_STEPS as readonly string[]).includes(step ?? '')) {
    throw new TypeError(`IQGATE_CRASH_AT: unknown step "${step ?? ''}" (one of ${COMMIT_STEPS.join(', ')})`);
  }
  let remaining = count === undefined ? 1 : Number(count);
  return (reached, taskId) => {
    if (reached !== step || (prefix !== undefined && !taskId.startsWith(prefix))) return;
    remaining -= 1;
    if (remaining <= 0) process.kill(process.pid, 'SIGKILL');
  };
}
