import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import '../../../src/kafka/kafkajs-patches.js';
import { NO_TOPICS } from '../../../src/kafka/targeted-metadata.js';

const require = createRequire(import.meta.url);
type Encoded = { encode(): Promise<{ buffer: Buffer }> | { buffer: Buffer } };
const metadataV6 = require('kafkajs/src/protocol/requests/metadata/v6/request') as (args: { topics: readonly string[]; allowAutoTopicCreation: boolean }) => Encoded;
const BrokerPool = require('kafkajs/src/cluster/brokerPool') as new (options: unknown) => Record<string, unknown> & { refreshMetadata(topics: string[]): Promise<void> };
const logger = { namespace: () => logger, info() {}, warn() {}, error() {}, debug() {} };

describe('targeted metadata (kafkajs patch 7)', () => {
  it('encodes "no topics" as an empty array, and an empty list as null (all topics) as kafkajs does', async () => {
    const body = async (topics: readonly string[]) => (await metadataV6({ topics, allowAutoTopicCreation: false }).encode()).buffer;
    expect((await body(NO_TOPICS)).subarray(0, 4)).toEqual(Buffer.from([0, 0, 0, 0]));
    expect((await body([])).subarray(0, 4)).toEqual(Buffer.from([0xff, 0xff, 0xff, 0xff]));
    expect((await body(['t'])).subarray(0, 4)).toEqual(Buffer.from([0, 0, 0, 1]));
  });

  it('makes a BrokerPool with no target topics ask for none, and for its targets otherwise', async () => {
    const asked: Array<readonly string[]> = [];
    const pool = new BrokerPool({ logger, connectionPoolBuilder: {}, retry: { retries: 0 } });
    const broker = { metadata: async (topics: readonly string[]) => { asked.push(topics); return { brokers: [], topicMetadata: [], controllerId: 1 }; } };
    Object.assign(pool, { seedBroker: { connectionPool: { host: 'h', port: 1 } }, findConnectedBroker: async () => broker });
    await pool.refreshMetadata([]);
    await pool.refreshMetadata(['in', 'out']);
    expect(asked[0]).toBe(NO_TOPICS);
    expect(asked[1]).toEqual(['in', 'out']);
  });
});
