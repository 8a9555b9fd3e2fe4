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
  stop(): Promise<void>;
}

export async function benchBroker(): Promise<BenchBroker> {
  if (process.env.KAFKA_BROKERS) return { brokers: process.env.KAFKA_BROKERS.split(','), local: false, stop: async () => {} };
  const { startBroker } = await import('../scripts/kafka/broker.js');
  const broker = await startBroker();
  return { brokers: broker.brokers.split(','), local: true, startupMs: broker.startupMs, stop: () => broker.stop() };
}
