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

export { createTopicsRetrying } from '../../scripts/kafka/create-topics.js';

/** The test broker's SASL_SSL listener; undefined with an external broker (KAFKA_BROKERS). */
export interface SecuredBroker {
  readonly brokers: string;
  readonly caPem: string;
  readonly users: { readonly admin: string; readonly app: string; readonly stranger: string };
}

export function securedBroker(): SecuredBroker | undefined {
  const json = inject('kafkaSecured');
  return json === '' ? undefined : (JSON.parse(json) as SecuredBroker);
}
