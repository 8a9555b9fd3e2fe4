/**
 * Global setup of the `integration` project: one real Kafka broker for all integration test
 * files, started by the project's own launcher unless KAFKA_BROKERS points to a running one.
 * Tests read the address with `inject('kafkaBrokers')` (see test/support/kafka.ts). The
 * broker is always stopped in teardown, whatever the tests did, and a watchdog stops it if
 * the runner itself is killed.
 */
import type { TestProject } from 'vitest/node';
import { startBroker, type RunningBroker } from '../../scripts/kafka/broker.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    /** The broker's SASL_SSL listener (scripts/kafka/secured-listener.ts) as JSON; '' with an external broker. */
    kafkaSecured: string;
  }
}

let broker: RunningBroker | undefined;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.KAFKA_BROKERS;
  if (external !== undefined && external !== '') {
    project.provide('kafkaBrokers', external);
    project.provide('kafkaSecured', '');
    return async () => undefined;
  }
  // With a SASL_SSL listener beside the plaintext one, for test/integration/kafka/secured-kafka.test.ts.
  broker = await startBroker({ secured: true });
  console.log(`[integration] Kafka broker ready at ${broker.brokers} (SASL_SSL at ${broker.secured!.brokers}) in ${broker.startupMs} ms`);
  project.provide('kafkaBrokers', broker.brokers);
  const { brokers, caPem, users } = broker.secured!;
  project.provide('kafkaSecured', JSON.stringify({ brokers, caPem, users }));
  return async () => {
    await broker?.stop();
    broker = undefined;
  };
}
