import { describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import { describeLibrdkafka, nativeRemedy, type NativeLoad, type RdkafkaModule } from '../../../src/kafka/librdkafka/native.js';
import { selectKafkaClient } from '../../../src/kafka/select-kafka-client.js';
import { parseRuntimeOptions } from '../../../src/runtime/runtime-options.js';

const loads = (): NativeLoad => ({ ok: true, module: {} as RdkafkaModule, version: '2.15.1' });
const fails = (): NativeLoad => ({ ok: false, reason: 'Could not locate the bindings file' });
const plain = { routing: false, coPartitioned: false };

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('choosing the Kafka client', () => {
  it('auto takes librdkafka when its native module loads, and says so', () => {
    const selected = selectKafkaClient('auto', plain, loads);
    expect(selected.client).toBe('librdkafka');
    expect(selected.reason).toContain('2.15.1');
  });

  it('auto falls back to kafkajs with the reason when the native module does not load', () => {
    const selected = selectKafkaClient('auto', plain, fails);
    expect(selected).toEqual({ client: 'kafkajs', reason: expect.stringContaining('Could not locate the bindings file') });
    expect(selected.reason).toContain('fix: npm run postinstall');
  });

  it('names why librdkafka is missing and the one command that fixes it, in a checkout and in a service', () => {
    const inService = 'file:///srv/app/node_modules/iqgate/dist/src/kafka/librdkafka/native.js';
    const inCheckout = 'file:///work/iqgate/src/kafka/librdkafka/native.ts';
    expect(nativeRemedy('Could not locate the bindings file. Tried: ...', inService)).toMatch(/install script was skipped.*fix: npm explore iqgate -- npm run postinstall$/);
    expect(nativeRemedy('Could not locate the bindings file. Tried: ...', inCheckout)).toMatch(/fix: npm run postinstall$/);
    expect(nativeRemedy("The module '/x.node' was compiled against a different Node.js version using NODE_MODULE_VERSION 115", inService))
      .toBe('its native binary was built for another Node version; fix: npm explore iqgate -- npm run postinstall');
    expect(nativeRemedy("Cannot find module '@confluentinc/kafka-javascript'", inService)).toMatch(/not installed.*fix: npm install --include=optional$/);
    expect(describeLibrdkafka(fails)).toMatch(/^librdkafka does not load \(Could not locate the bindings file\): .*fix: /);
    expect(describeLibrdkafka(loads)).toBe('librdkafka 2.15.1 loads (kafkaClient auto uses it)');
  });

  it('auto takes librdkafka for every application: routed, and co-partitioned (on its range assignor, said in the reason)', () => {
    expect(selectKafkaClient('auto', { routing: true, coPartitioned: false }, loads).client).toBe('librdkafka');
    const coPartitioned = selectKafkaClient('auto', { routing: false, coPartitioned: true }, loads);
    expect(coPartitioned.client).toBe('librdkafka');
    expect(coPartitioned.reason).toContain('range assignor');
  });

  it('an explicit librdkafka that cannot load is INVALID_CONFIG, never a silent fallback; one that can runs any application', () => {
    const unloadable = thrown(() => selectKafkaClient('librdkafka', plain, fails));
    expect(isIqgateError(unloadable, 'INVALID_CONFIG')).toBe(true);
    expect(String((unloadable as Error).message)).toContain('does not load');
    expect(selectKafkaClient('librdkafka', { routing: true, coPartitioned: true }, loads).client).toBe('librdkafka');
  });

  it('an explicit kafkajs never loads the native module', () => {
    let loaded = false;
    const selected = selectKafkaClient('kafkajs', plain, () => { loaded = true; return loads(); });
    expect(selected.client).toBe('kafkajs');
    expect(loaded).toBe(false);
  });

  it('reads IQGATE_KAFKA_CLIENT when the option is absent, and rejects a value it does not know', () => {
    const base = { applicationId: 'app', brokers: 'localhost:9092' };
    const saved = process.env.IQGATE_KAFKA_CLIENT;
    try {
      process.env.IQGATE_KAFKA_CLIENT = 'kafkajs';
      expect(parseRuntimeOptions(base).kafkaClient).toBe('kafkajs');
      expect(parseRuntimeOptions({ ...base, kafkaClient: 'librdkafka' }).kafkaClient).toBe('librdkafka');
      process.env.IQGATE_KAFKA_CLIENT = 'rdkafka';
      const error = thrown(() => parseRuntimeOptions(base));
      expect(isIqgateError(error, 'INVALID_CONFIG')).toBe(true);
      expect(String((error as Error).message)).toContain('IQGATE_KAFKA_CLIENT');
    } finally {
      if (saved === undefined) delete process.env.IQGATE_KAFKA_CLIENT;
      else process.env.IQGATE_KAFKA_CLIENT = saved;
    }
  });
});
