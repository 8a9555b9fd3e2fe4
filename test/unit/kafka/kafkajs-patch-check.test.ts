import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createKafka } from '../../../src/kafka/kafka-client.js';
import { KAFKAJS_PATCHES } from '../../../src/kafka/kafkajs-patches.js';
import { assertFiltersAbortedTransactions } from '../../../src/kafka/kafkajs-patches/aborted-transaction-filter.js';

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

/**
 * Imports every patch module of src/kafka/kafkajs-patches/ by itself (not the entry module, which
 * installs them all): `patches` holds each exported KafkajsPatch, `outcome(patch)` says what its
 * check() does ('ok', or the error's code and the patch it names).
 */
const loadPatches = `
  const { readdirSync } = await import('node:fs');
  const patches = [];
  for (const file of readdirSync('src/kafka/kafkajs-patches').sort()) {
    for (const value of Object.values(await import('./src/kafka/kafkajs-patches/' + file))) {
      if (typeof value?.install === 'function' && typeof value.check === 'function') patches.push(value);
    }
  }
  const outcome = (patch) => {
    try {
      patch.check();
      return 'ok';
    } catch (error) {
      return error.code + ' ' + error.details?.patch;
    }
  };
  const outcomes = () => Object.fromEntries(patches.map((patch) => [patch.name, outcome(patch)]));`;

/** The kafkajs internals the patches replace, as identities (install() twice must leave them all as they were). */
const kafkajsInternals = `
  const { createRequire } = await import('node:module');
  const require = createRequire(process.cwd() + '/src/kafka/');
  const internals = () => {
    const file = (id) => require.cache[require.resolve(id)]?.exports;
    const metadata = Object.getOwnPropertyDescriptor(require('kafkajs/src/cluster/brokerPool').prototype, 'metadata');
    return [
      file('kafkajs/src/consumer/filterAbortedMessages.js'),
      file('kafkajs/src/producer/groupMessagesPerPartition.js'),
      file('kafkajs/src/protocol/recordBatch/record/v0/index.js'),
      require('kafkajs/src/network/requestQueue').prototype.scheduleCheckPendingRequests,
      require('kafkajs/src/cluster').prototype.findGroupCoordinator,
      require('kafkajs/src/cluster').prototype.refreshMetadata,
      metadata?.get,
      metadata?.set,
      require('kafkajs/src/cluster/brokerPool').prototype.refreshMetadata,
      require('kafkajs/src/protocol/encoder').prototype.writeNullableArray,
      require('kafkajs/src/cluster').prototype.findLeaderForPartitions,
      require('kafkajs/src/consumer/consumerGroup').prototype.heartbeat,
      require('kafkajs/src/consumer/consumerGroup').prototype.joinAndSync,
      require('kafkajs/src/consumer/consumerGroup').prototype.fetch,
      Object.getOwnPropertyDescriptor(require('kafkajs/src/cluster').prototype, 'retry')?.get,
    ];
  };`;

const names = KAFKAJS_PATCHES.map((patch) => patch.name);

describe('the kafkajs patch check', () => {
  it('refuses to build a Kafka client when kafkajs was loaded before the patches', async () => {
    const out = await inFreshProcess(`await import('kafkajs');${tryCreateKafka}`);
    expect(out).toMatch(/^INVALID_CONFIG kafkajs was loaded before iqgate's kafkajs patches/);
    expect(out).toContain('saw offsets 10,11,16'); // what unpatched kafkajs 2.2.4 lets through
  }, 40_000);

  it('names in its errors only imports that the package exports', async () => {
    // Both kinds of message: the aborted-transaction filter's own, and every other patch's (patchNotInPlace).
    const out = await inFreshProcess(`await import('kafkajs');${tryCreateKafka}
      const { patchNotInPlace } = await import('./src/kafka/kafkajs-patches/kafkajs-patch.ts');
      console.log(patchNotInPlace('x', 'y').message);`);
    const specifiers = [...out.matchAll(/'(iqgate[^']*)'/g)].map((m) => m[1]!);
    expect(specifiers.length).toBeGreaterThanOrEqual(2);
    const resolved = JSON.parse(await inFreshProcess(`
      const out = {};
      for (const specifier of ${JSON.stringify(specifiers)}) {
        try { import.meta.resolve(specifier); out[specifier] = 'ok'; } catch (error) { out[specifier] = error.code; }
      }
      console.log(JSON.stringify(out));`)) as Record<string, string>;
    expect(resolved).toEqual(Object.fromEntries(specifiers.map((s) => [s, 'ok'])));
  }, 40_000);

  it('builds the client when the patches came first', async () => {
    expect(await inFreshProcess(tryCreateKafka)).toBe('created');
    expect(() => createKafka({ brokers: ['127.0.0.1:1'], clientId: 'patch-check' })).not.toThrow();
  }, 40_000);

  // "Before" and "after" run in two fresh processes, not one: the aborted-transaction filter's
  // check() loads kafkajs' Batch, which requires the original filter, and then install() is too late.
  it('fails every patch\'s check() before its install(), naming the patch; the entry module lists every patch', async () => {
    const outcomes = JSON.parse(await inFreshProcess(`${loadPatches} console.log(JSON.stringify(outcomes()));`)) as Record<string, string>;
    expect(Object.keys(outcomes).sort()).toEqual([...names].sort());
    expect(names).toHaveLength(11);
    for (const name of names) expect(outcomes[name]).toBe(`INVALID_CONFIG ${name}`);
  }, 40_000);

  it('passes every patch\'s check() after its install(), in the entry\'s order, and a second install() changes nothing', async () => {
    const out = await inFreshProcess(`${loadPatches}${kafkajsInternals}
      const order = ${JSON.stringify(names)};
      patches.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
      const installed = {};
      for (const patch of patches) {
        patch.install();
        installed[patch.name] = outcome(patch);
      }
      const before = internals();
      for (const patch of patches) patch.install();
      const after = internals();
      console.log(JSON.stringify({
        installed,
        again: outcomes(),
        changed: before.flatMap((value, i) => (value === undefined ? ['missing ' + i] : value === after[i] ? [] : ['changed ' + i])),
      }));`);
    const { installed, again, changed } = JSON.parse(out) as { installed: Record<string, string>; again: Record<string, string>; changed: string[] };
    const allOk = Object.fromEntries(names.map((name) => [name, 'ok']));
    expect(installed).toEqual(allOk);
    expect(again).toEqual(allOk);
    expect(changed).toEqual([]);
  }, 40_000);

  it('with kafkajs loaded first, fails the patches whose kafkajs file it had loaded (records are encoded by a file it loads on first produce)', async () => {
    const out = await inFreshProcess(`await import('kafkajs');
      await import('./src/kafka/kafkajs-patches.ts');
      ${loadPatches} console.log(JSON.stringify(outcomes()));`);
    expect(JSON.parse(out)).toEqual({
      'aborted-transaction-filter': 'INVALID_CONFIG aborted-transaction-filter',
      'group-messages-per-partition': 'INVALID_CONFIG group-messages-per-partition',
      'request-queue-timer': 'ok',
      'coordinator-cache': 'ok',
      'record-encoder': 'ok',
      'shared-metadata': 'ok',
      'targeted-metadata': 'ok',
      'partition-leader-lookup': 'ok',
      'rebalance-heartbeat': 'ok',
      'fetch-size': 'ok',
      'transaction-retry': 'ok',
    });
  }, 40_000);

  it('judges by behaviour: a Batch that leaks aborted records fails the check', () => {
    class LeakyBatch {
      readonly messages: Array<{ offset: string }>;
      constructor(_topic: string, _offset: string, data: { messages: Array<{ offset: string; isControlRecord?: boolean }> }) {
        this.messages = data.messages.filter((m) => !m.isControlRecord);
      }
    }
    expect(() => assertFiltersAbortedTransactions(LeakyBatch)).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', details: expect.objectContaining({ patch: 'aborted-transaction-filter' }) }));
  });
});
