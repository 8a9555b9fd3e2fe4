/**
 * What `npm start` promises about where state goes and which topics it accepts:
 * - an application module's own `stateDir` is used, unless IQGATE_STATE_DIR is set;
 * - the demo's input and output topics, when they already exist, are used with the partitions
 *   they have (only internal topics — changelog, repartition — must match the topology);
 *   an internal topic with the wrong count is still refused.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { KafkaAdmin } from '../../../src/kafka/kafka-admin.js';
import { createKafka } from '../../../src/kafka/kafka-client.js';
import { postGraphQL } from '../../support/graphql.js';
import { createTopicsRetrying, kafkaBrokers, testKafka, uniqueName, waitFor } from '../../support/kafka.js';
import { startMain, type MainProcess } from './main-process.js';

const root = mkdtempSync(join(tmpdir(), 'iqgate-main-dirs-'));
let main: MainProcess | undefined;
afterEach(() => {
  main?.kill();
  main = undefined;
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function createTopics(topics: Array<{ topic: string; numPartitions: number }>): Promise<void> {
  const admin = testKafka().admin();
  await admin.connect();
  try {
    await createTopicsRetrying(admin, topics);
  } finally {
    await admin.disconnect();
  }
}

describe('npm start: state directory', () => {
  it('uses the module\'s own stateDir without IQGATE_STATE_DIR, and IQGATE_STATE_DIR when set', async () => {
    const app = uniqueName('accounts-dir');
    const topic = `${app}-in`;
    await createTopics([{ topic, numPartitions: 1 }]);
    const moduleDir = join(root, 'module-dir');
    const envDir = join(root, 'env-dir');
    const env = { KAFKA_BROKERS: kafkaBrokers().join(','), IQGATE_APP: 'test/fixtures/apps/accounts-app.ts', ACCOUNTS_APP_ID: app, ACCOUNTS_TOPIC: topic, ACCOUNTS_STATE_DIR: moduleDir, IQGATE_LOG_LEVEL: 'warn' };

    main = startMain(env);
    expect(await main.graphqlUrl(), main.output()).toBeDefined();
    expect(main.output()).toContain(`(state in ${moduleDir})`);
    expect(existsSync(join(moduleDir, 'CURRENT')), 'LevelDB lives in the module\'s directory').toBe(true);
    expect(await main.stop(), main.output()).toBe(0);

    main = startMain({ ...env, IQGATE_STATE_DIR: envDir });
    expect(await main.graphqlUrl(), main.output()).toBeDefined();
    expect(main.output()).toContain(`(state in ${envDir})`);
    expect(existsSync(join(envDir, 'CURRENT'))).toBe(true);
    expect(await main.stop(), main.output()).toBe(0);
  });
});

describe('npm start: existing topics', () => {
  it('runs the demo on an existing 200-partition input topic and a 3-partition output topic', async () => {
    const app = uniqueName('main-topics');
    const input = `${app}-input`;
    const output = `${app}-output`;
    await createTopics([{ topic: input, numPartitions: 200 }, { topic: output, numPartitions: 3 }]);
    main = startMain({
      KAFKA_BROKERS: kafkaBrokers().join(','),
      IQGATE_APP_ID: app,
      IQGATE_DEMO: 'wordcount',
      IQGATE_INPUT_TOPIC: input,
      IQGATE_OUTPUT_TOPIC: output,
      IQGATE_STATE_DIR: join(root, 'demo'),
      IQGATE_DEMO_LINES_PER_SECOND: '200',
      IQGATE_LOG_LEVEL: 'warn',
    });
    const url = await main.graphqlUrl(120_000);
    expect(url, main.output()).toBeDefined();
    expect(main.output()).not.toContain('INVALID_CONFIG');
    const { stores } = await postGraphQL<{ stores: Array<{ name: string; partitions: number }> }>(url!, '{ stores { name partitions } }');
    expect(stores).toEqual([expect.objectContaining({ name: 'word-counts', partitions: 200 })]);
    await waitFor(async () => {
      const answer = await postGraphQL<{ get: { value: string | null } }>(url!, '{ get(store: "word-counts", key: "kafka") { value } }');
      return Number(answer.get.value ?? 0) > 0;
    }, 90_000, 500);
    expect(await main.stop(), main.output()).toBe(0);
  }, 240_000);

  it('still refuses an existing internal topic whose partition count differs from the topology\'s', async () => {
    const changelog = `${uniqueName('internal')}-changelog`;
    await createTopics([{ topic: changelog, numPartitions: 2 }]);
    const admin = new KafkaAdmin(createKafka({ brokers: kafkaBrokers(), clientId: uniqueName('admin') }));
    try {
      await expect(admin.ensureTopics([{ topic: changelog, partitions: 4, compacted: true }])).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
      await expect(admin.ensureExternalTopics([{ topic: changelog, partitions: 4, compacted: false }])).resolves.toBeUndefined();
    } finally {
      await admin.close();
    }
  });
});
