/**
 * Helpers for integration tests that talk to the real broker: its address, unique names, and
 * a kafkajs client whose clean-up the test owns. Tests may use kafkajs directly to observe
 * the broker (that is what they test); production code reaches Kafka only through src/kafka/.
 */
// The project's kafkajs is the patched one (read_committed filtering, timer loop): load the
// patches before kafkajs, as src/kafka/ does.
import '../../src/kafka/kafkajs-patches.js';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import kafkajs from 'kafkajs';

/** Tests take kafkajs from here, so the patches above are always loaded first. */
export { kafkajs };

export function kafkaBrokers(): string[] {
  return inject('kafkaBrokers').split(',');
}

/** A name no other test (or earlier run) uses: random topics, groups and transactional ids. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

export function testKafka(clientId = uniqueName('test')): kafkajs.Kafka {
  return new kafkajs.Kafka({
    clientId,
    brokers: kafkaBrokers(),
    logLevel: kafkajs.logLevel.NOTHING,
  });
}

export { waitFor } from './wait-for.js';

/**
 * admin.createTopics with waitForLeaders, asked again when the broker answers
 * UNKNOWN_TOPIC_OR_PARTITION for a topic it has just created (its metadata not yet updated);
 * kafkajs does not retry that, and it was seen in CI on a loaded machine.
 */
export async function createTopicsRetrying(admin: kafkajs.Admin, topics: kafkajs.ITopicConfig[]): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await admin.createTopics({ waitForLeaders: true, topics });
      return;
    } catch (error) {
      if ((error as { type?: string }).type !== 'UNKNOWN_TOPIC_OR_PARTITION' || attempt >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
}
