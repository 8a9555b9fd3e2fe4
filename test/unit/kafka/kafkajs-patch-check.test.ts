import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createKafka } from '../../../src/kafka/kafka-client.js';
import { assertKafkajsPatched } from '../../../src/kafka/kafkajs-patches.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Runs `body` in a fresh Node process (tsx), where module load order is what the script says. */
async function inFreshProcess(body: string): Promise<string> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', body], { cwd: root, timeout: 30_000 });
  return stdout.trim();
}

const tryCreateKafka = `
  const { createKafka } = await import('./src/kafka/kafka-client.ts');
  try {
    createKafka({ brokers: ['127.0.0.1:1'], clientId: 'patch-check' });
    console.log('created');
  } catch (error) {
    console.log(error.code + ' ' + error.message);
  }`;

describe('the kafkajs patch check', () => {
  it('refuses to build a Kafka client when kafkajs was loaded before the patches', async () => {
    const out = await inFreshProcess(`await import('kafkajs');${tryCreateKafka}`);
    expect(out).toMatch(/^INVALID_CONFIG kafkajs was loaded before iqgate's kafkajs patches/);
    expect(out).toContain('saw offsets 10,11,16'); // what unpatched kafkajs 2.2.4 lets through
  }, 40_000);

  it('builds the client when the patches came first', async () => {
    expect(await inFreshProcess(tryCreateKafka)).toBe('created');
    expect(() => createKafka({ brokers: ['127.0.0.1:1'], clientId: 'patch-check' })).not.toThrow();
  }, 40_000);

  it('judges by behaviour: a Batch that leaks aborted records fails the check', () => {
    class LeakyBatch {
      readonly messages: Array<{ offset: string }>;
      constructor(_topic: string, _offset: string, data: { messages: Array<{ offset: string; isControlRecord: boolean }> }) {
        this.messages = data.messages.filter((m) => !m.isControlRecord);
      }
    }
    expect(() => assertKafkajsPatched(() => LeakyBatch)).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
  });
});
