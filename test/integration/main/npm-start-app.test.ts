/**
 * `IQGATE_APP=./my-app.ts npm start`, the sidecar mode: src/main.ts in a child process runs the
 * user's application module (test/fixtures/apps/accounts-app.ts, a table materialized into the
 * store `balances`) instead of the demo, serves its store with /ready, /health and /metrics
 * beside it, and stops cleanly on SIGTERM. A module
 * that does not load stops start-up with INVALID_CONFIG before anything else starts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { postGraphQL } from '../../support/graphql.js';
import { createTopicsRetrying, kafkaBrokers, testKafka, uniqueName } from '../../support/kafka.js';
import { startMain, type MainProcess } from './main-process.js';
import { balancesAt, sendAccounts } from '../../fixtures/apps/accounts-data.js';

const stateDir = mkdtempSync(join(tmpdir(), 'iqgate-main-app-'));
let main: MainProcess | undefined;
afterAll(() => {
  main?.kill();
  rmSync(stateDir, { recursive: true, force: true });
});

describe('npm start with IQGATE_APP', () => {
  it('runs the application module and serves its stores over GraphQL', async () => {
    const app = uniqueName('accounts');
    const topic = `${app}-in`;
    const kafka = testKafka();
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsRetrying(admin, [{ topic, numPartitions: 3 }]);
    await admin.disconnect();

    main = startMain({
      KAFKA_BROKERS: kafkaBrokers().join(','),
      IQGATE_APP: 'test/fixtures/apps/accounts-app.ts',
      ACCOUNTS_APP_ID: app,
      ACCOUNTS_TOPIC: topic,
      IQGATE_STATE_DIR: stateDir,
      IQGATE_LOG_LEVEL: 'warn',
    });
    const url = await main.graphqlUrl();
    expect(url, main.output()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/graphql$/);
    expect(main.output()).toContain(`iqgate is serving ${app}: stores "balances"`);

    await sendAccounts(kafka, topic);
    const answer = await balancesAt(url!);
    expect(answer).toEqual({ alice: { value: { balance: 12 } }, bob: { value: { balance: 5 } } });
    const stores = await postGraphQL<{ stores: Array<{ name: string; partitions: number }> }>(url!, '{ stores { name partitions } }');
    expect(stores.stores).toEqual([expect.objectContaining({ name: 'balances', partitions: 3 })]);

    // Beside /graphql: readiness, liveness and Prometheus metrics of the running application.
    const base = url!.replace(/\/graphql$/, '');
    expect((await fetch(`${base}/ready`)).status).toBe(200);
    expect((await fetch(`${base}/health`)).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(Number(/^iqgate_commits_total (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    expect(metrics).toMatch(/^iqgate_tasks\{state="RUNNING"\} 3$/m);
    expect(metrics).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(metrics).toMatch(/^iqgate_uncommitted_bytes \d+$/m);
    // Consumer lag per store partition: every record was processed (the balances above are final).
    expect(metrics.match(/^iqgate_input_lag\{store="balances",partition="[0-2]"\} 0$/gm)).toHaveLength(3);

    expect(await main.stop(), main.output()).toBe(0);
  });

  it('stops with INVALID_CONFIG, before starting a broker, when the module does not load', () => {
    const environment: NodeJS.ProcessEnv = { ...process.env, IQGATE_APP: 'test/fixtures/apps/no-such-app.ts', PORT: '0' };
    delete environment.KAFKA_BROKERS;
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: environment, encoding: 'utf8', timeout: 60_000 });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('iqgate: INVALID_CONFIG: IQGATE_APP=test/fixtures/apps/no-such-app.ts: no such module');
    expect(result.stdout).not.toContain('starting a local Kafka broker');
  });
});
