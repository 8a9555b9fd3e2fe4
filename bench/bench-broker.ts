import type { SecuredListener } from '../scripts/kafka/secured-listener.js';

/**
 * The broker a benchmark runs against: KAFKA_BROKERS if set, else a local broker started for
 * the run (scripts/kafka/broker.ts) and stopped by `stop()`. Shared by every bench that needs Kafka.
 */
export interface BenchBroker {
  readonly brokers: string[];
  /** Started for this run (and so stopped by stop()). */
  readonly local: boolean;
  /** For a local broker: how long it took to start (ms). */
  readonly startupMs?: number;
  /** Its SASL_SSL listener, when asked for. */
  readonly secured?: SecuredListener;
  stop(): Promise<void>;
}

/** `secured`: the local broker opens its SASL_SSL listener too (scripts/kafka/secured-listener.ts). */
export async function benchBroker(options: { secured?: boolean } = {}): Promise<BenchBroker> {
  if (process.env.KAFKA_BROKERS) return { brokers: process.env.KAFKA_BROKERS.split(','), local: false, stop: async () => {} };
  const { startBroker } = await import('../scripts/kafka/broker.js');
  const broker = await startBroker({ secured: options.secured === true });
  return { brokers: broker.brokers.split(','), local: true, startupMs: broker.startupMs, ...(broker.secured === undefined ? {} : { secured: broker.secured }), stop: () => broker.stop() };
}
