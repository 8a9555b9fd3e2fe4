/**
 * `startBankDemo(options)`: the whole bank demo in one call, as `npm start` runs it — the
 * transfers topic (created if missing), the transfer generator, and the bank on a started
 * runtime. `stop()` stops the runtime (it commits what it processed), then the generator.
 */
import { KafkaAdmin } from '../../src/kafka/kafka-admin.js';
import { createKafka } from '../../src/kafka/kafka-client.js';
import { kafkaSecuritySchema } from '../../src/kafka/kafka-security.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { startBankFeed, type BankFeed, type BankFeedOptions } from './bank-feed.js';
import { runBank, type BankConfig } from './run-bank.js';

export interface BankDemoOptions extends Omit<BankConfig, 'transfersTopic'> {
  /** Default `bank-transfers`. */
  readonly transfersTopic?: string;
  /** Partitions of the transfers topic when it is created. Default 4. */
  readonly partitions?: number;
  /** The generator's settings (rate, shape, seed); false: no generator. Default: 5 transfers a second, 10 % marked to abort. */
  readonly feed?: Pick<BankFeedOptions, 'transfersPerSecond' | 'shape' | 'seed' | 'maxTransfers' | 'onError'> | false;
}

export interface BankDemo {
  readonly runtime: Runtime;
  /** Null with `feed: false`. */
  readonly feed: BankFeed | null;
  readonly transfersTopic: string;
  stop(): Promise<void>;
}

export async function startBankDemo(options: BankDemoOptions): Promise<BankDemo> {
  const { transfersTopic = 'bank-transfers', partitions = 4, feed: feedOptions = {}, ...config } = options;
  const brokers = typeof config.brokers === 'string' ? config.brokers.split(',').map((b) => b.trim()) : [...config.brokers];
  const security = config.kafkaSecurity === undefined ? undefined : kafkaSecuritySchema.parse(config.kafkaSecurity);
  const admin = new KafkaAdmin(createKafka({ brokers, clientId: `${config.applicationId ?? 'bank'}-setup`, ...(security === undefined ? {} : { security }) }));
  try {
    // Created with `partitions` when missing; an existing topic is used with the partitions it has.
    await admin.ensureExternalTopics([{ topic: transfersTopic, partitions, compacted: false }]);
  } finally {
    await admin.close();
  }
  const feed = feedOptions === false ? null : await startBankFeed({ ...feedOptions, brokers, topic: transfersTopic, ...(security === undefined ? {} : { security }) });
  let runtime: Runtime;
  try {
    runtime = await runBank({ ...config, transfersTopic });
  } catch (error) {
    await feed?.stop();
    throw error;
  }
  return {
    runtime,
    feed,
    transfersTopic,
    async stop() {
      try {
        await runtime.stop();
      } finally {
        await feed?.stop();
      }
    },
  };
}
