/**
 * `npm start` as a user runs it (src/main.ts in a child process, against the test broker):
 * it prints the GraphiQL URL, serves the live wordcount store over HTTP in both isolation
 * modes, and stops cleanly on SIGTERM.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { postGraphQL } from '../../support/graphql.js';
import { kafkaBrokers, uniqueName, waitFor } from '../../support/kafka.js';
import { startMain, type MainProcess } from './main-process.js';

const stateDir = mkdtempSync(join(tmpdir(), 'iqgate-main-'));
let main: MainProcess | undefined;
afterAll(() => {
  main?.kill();
  rmSync(stateDir, { recursive: true, force: true });
});

interface GetResult {
  /** The count: an int64, so a decimal String in GraphQL. */
  value: string | null;
  position: Record<string, Record<string, number>> | null;
}


function offsetsOf(position: GetResult['position']): number {
  let total = 0;
  for (const partitions of Object.values(position ?? {})) for (const offset of Object.values(partitions)) total += offset;
  return total;
}

describe('npm start', () => {
  it('serves the live wordcount store over GraphQL and stops on SIGTERM', async () => {
    const app = uniqueName('main');
    main = startMain({
      KAFKA_BROKERS: kafkaBrokers().join(','),
      IQGATE_APP_ID: app,
      IQGATE_DEMO: 'wordcount',
      IQGATE_INPUT_TOPIC: `${app}-input`,
      IQGATE_OUTPUT_TOPIC: `${app}-output`,
      IQGATE_STATE_DIR: stateDir,
      IQGATE_DEMO_LINES_PER_SECOND: '50',
      IQGATE_LOG_LEVEL: 'warn',
    });
    const url = await main.graphqlUrl();
    expect(url, main.output()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/graphql$/);

    // The generator's words are counted and committed: "kafka" is the most frequent word.
    const query = `{ committed: get(store: "word-counts", key: "kafka") { value position }
                     live: get(store: "word-counts", key: "kafka", readCommitted: false) { value position } }`;
    let result: { committed: GetResult; live: GetResult } | undefined;
    await waitFor(async () => {
      const latest = await postGraphQL<{ committed: GetResult; live: GetResult }>(url!, query);
      result = latest;
      return Number(latest.committed.value ?? 0) > 0;
    }, 60_000, 200);
    // The live view is never behind the committed view taken right before it.
    expect(result!.committed.value).toMatch(/^\d+$/);
    expect(Number(result!.live.value ?? 0)).toBeGreaterThanOrEqual(Number(result!.committed.value));
    expect(offsetsOf(result!.live.position)).toBeGreaterThanOrEqual(offsetsOf(result!.committed.position));

    const stores = await postGraphQL<{ stores: Array<{ name: string; partitions: number }> }>(url!, '{ stores { name partitions } }');
    expect(stores.stores).toEqual([expect.objectContaining({ name: 'word-counts', partitions: 4 })]);

    expect(await main.stop(), main.output()).toBe(0);
  });
});
