import { describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import { StreamsBuilder } from '../../../src/processing/stream-builder.js';
import { createRuntime } from '../../../src/runtime/runtime.js';
import { parseRuntimeOptions } from '../../../src/runtime/runtime-options.js';
import { RuntimeStateProvider } from '../../../src/runtime/runtime-state-provider.js';
import { serdes } from '../../../src/store/serdes.js';

const base = { applicationId: 'app', brokers: '127.0.0.1:9' };

function topology() {
  const builder = new StreamsBuilder();
  builder.table('accounts', { store: 'balances', key: serdes.string, value: serdes.json });
  return builder.build();
}

describe('the advertisedUrl runtime option', () => {
  it('is optional and accepts an absolute http(s) URL', () => {
    expect(parseRuntimeOptions(base).advertisedUrl).toBeUndefined();
    expect(parseRuntimeOptions({ ...base, advertisedUrl: 'http://10.0.0.5:4000/graphql' }).advertisedUrl).toBe('http://10.0.0.5:4000/graphql');
  });

  it('rejects a relative or non-http URL with INVALID_CONFIG naming the option', () => {
    for (const advertisedUrl of ['10.0.0.5:4000/graphql', '/graphql', 'ftp://10.0.0.5/graphql', '']) {
      let caught: unknown;
      try {
        parseRuntimeOptions({ ...base, advertisedUrl });
      } catch (error) {
        caught = error;
      }
      expect(isIqgateError(caught, 'INVALID_CONFIG'), advertisedUrl).toBe(true);
      expect((caught as Error).message).toMatch('advertisedUrl');
    }
  });

  it('can be set with advertise() before start, validated the same way, and not after', async () => {
    const runtime = createRuntime({ ...base, topology: topology(), logLevel: 'silent' });
    expect(runtime.advertisedUrl()).toBeUndefined();
    expect(() => runtime.advertise('nope')).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
    runtime.advertise('http://127.0.0.1:4000/graphql');
    expect(runtime.advertisedUrl()).toBe('http://127.0.0.1:4000/graphql');
    // Without a group there are no owners; nothing is remote.
    expect(runtime.partitionOwners()).toEqual([]);
    expect(new RuntimeStateProvider(runtime).remoteOwner('balances', 0)).toBeUndefined();
    await runtime.stop();
    expect(() => runtime.advertise('http://127.0.0.1:4001/graphql')).toThrow(TypeError);
  });
});
