/**
 * Start-up against a missing input topic or an unreachable broker: a clear coded error, retried
 * with back-off (never a silent crash loop), and a start that succeeds once the topic appears.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import { buildWordcountTopology } from '../../../examples/wordcount/index.js';
import { createRuntime, type Runtime } from '../../../src/runtime/runtime.js';
import { brokers } from './brokers.js';
import { createTopics, testKafka, uniqueName } from './wordcount-harness.js';

describe('runtime start-up errors', () => {
  const runtimes: Runtime[] = [];
  afterAll(async () => {
    for (const r of runtimes) await r.stop().catch(() => undefined);
  });

  it('reports TOPIC_NOT_FOUND for a missing input topic after its retries', async () => {
    const runtime = createRuntime({
      brokers: brokers(), applicationId: uniqueName('missing'), logLevel: 'silent',
      topology: buildWordcountTopology({ inputTopic: uniqueName('no-such-topic'), outputTopic: uniqueName('out') }),
      startupRetryInitialMs: 50, startupMaxAttempts: 3,
    });
    runtimes.push(runtime);
    const error = await runtime.start().then(() => null, (e: unknown) => e);
    expect(isIqgateError(error, 'TOPIC_NOT_FOUND')).toBe(true);
    expect((error as Error).message).toContain('no-such-topic');
    expect(runtime.state).toBe('FAILED');
  });

  it('reports BROKER_UNAVAILABLE for an unreachable broker', async () => {
    const runtime = createRuntime({
      brokers: '127.0.0.1:1', applicationId: uniqueName('unreachable'), logLevel: 'silent',
      topology: buildWordcountTopology({ inputTopic: 'in', outputTopic: 'out' }),
      startupRetryInitialMs: 50, startupMaxAttempts: 2,
    });
    runtimes.push(runtime);
    const error = await runtime.start().then(() => null, (e: unknown) => e);
    expect(isIqgateError(error, 'BROKER_UNAVAILABLE')).toBe(true);
  });

  it('keeps retrying with back-off and starts once the missing topic is created', async () => {
    const input = uniqueName('late-in');
    const output = uniqueName('late-out');
    const warnings: Array<{ code?: string; attempt?: number; retryInMs?: number }> = [];
    const { pino } = await import('pino');
    const logger = pino({ level: 'warn' }, { write: (line: string) => { warnings.push(JSON.parse(line) as { code?: string }); } });
    const runtime = createRuntime({
      brokers: brokers(), applicationId: uniqueName('late'), logger,
      topology: buildWordcountTopology({ inputTopic: input, outputTopic: output }),
      startupRetryInitialMs: 100, startupRetryMaxMs: 400,
    });
    runtimes.push(runtime);
    const started = runtime.start();
    const deadline = Date.now() + 20_000;
    while (warnings.filter((w) => w.code === 'TOPIC_NOT_FOUND').length < 3) {
      if (Date.now() > deadline) throw new Error('no retries logged');
      await new Promise((r) => setTimeout(r, 50));
    }
    const delays = warnings.filter((w) => w.code === 'TOPIC_NOT_FOUND').map((w) => w.retryInMs);
    expect(delays.slice(0, 3)).toEqual([100, 200, 400]); // exponential, capped
    const admin = testKafka().admin();
    await admin.connect();
    await createTopics(admin, [input, output], 2);
    await admin.disconnect();
    await started;
    expect(runtime.state).toBe('RUNNING');
  });
});
