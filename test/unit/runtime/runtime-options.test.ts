/**
 * Runtime options are validated strictly: a misspelt or unknown option, at the top or inside
 * kafkaSecurity or clientProperties, is INVALID_CONFIG naming it, not silently dropped. librdkafka
 * properties pass through to the client (a value librdkafka refuses shows it reached it), and
 * kafkajs, which takes none, refuses them.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { buildWordcountTopology } from '../../../examples/wordcount/wordcount-topology.js';
import { isIqgateError } from '../../../src/errors.js';
import { loadLibrdkafka } from '../../../src/kafka/librdkafka/native.js';
import { createRuntimePorts } from '../../../src/runtime/kafka-wiring.js';
import { parseRuntimeOptions, type RuntimeOptionsInput } from '../../../src/runtime/runtime-options.js';

const base = { applicationId: 'opts', brokers: '127.0.0.1:1' };

function refusal(input: Record<string, unknown>): string {
  try {
    parseRuntimeOptions(input as unknown as RuntimeOptionsInput);
  } catch (error) {
    expect(isIqgateError(error, 'INVALID_CONFIG')).toBe(true);
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(input)}`);
}

describe('runtime options', () => {
  it('refuse an unknown option anywhere, naming it', () => {
    expect(refusal({ ...base, sessionTimeot: 1000 })).toContain('sessionTimeot');
    expect(refusal({ ...base, kafkaSecurity: { protocol: 'SSL', ssl: { truststore: 'x' } } })).toContain('truststore');
    expect(refusal({ ...base, clientProperties: { admin: { 'retries': 1 } } })).toContain('admin');
    // The runtime config's own keys are not options.
    expect(parseRuntimeOptions({ ...base, topology: {}, logger: {} } as unknown as RuntimeOptionsInput).applicationId).toBe('opts');
  });

  const topology = buildWordcountTopology({ inputTopic: 'in', outputTopic: 'out' });
  const wiring = (input: Record<string, unknown>) => ({ options: parseRuntimeOptions({ ...base, ...input } as RuntimeOptionsInput), topology, advertisedUrl: undefined, logger: pino({ level: 'silent' }) });

  it('refuse clientProperties on kafkajs, which takes none', () => {
    const kafkajs = (() => {
      try {
        createRuntimePorts(wiring({ kafkaClient: 'kafkajs', clientProperties: { consumer: { 'fetch.min.bytes': 1 } } }));
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(isIqgateError(kafkajs, 'INVALID_CONFIG')).toBe(true);
    expect(String((kafkajs as Error).message)).toContain('kafkajs');
  });

  it.skipIf(!loadLibrdkafka().ok)('pass clientProperties to librdkafka, which then judges them', () => {
    // A property librdkafka does not know reaches it and is refused by it, by name.
    expect(() => createRuntimePorts(wiring({ kafkaClient: 'librdkafka', clientProperties: { consumer: { 'no.such.property': 1 } } }))).toThrow(/no\.such\.property/);
    const ports = createRuntimePorts(wiring({ kafkaClient: 'librdkafka', clientProperties: { consumer: { 'fetch.min.bytes': 1 }, producer: { 'linger.ms': 2 } } }));
    expect(ports.client).toBe('librdkafka');
    void ports.close();
  });
});
