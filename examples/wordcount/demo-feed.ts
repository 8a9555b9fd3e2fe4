/**
 * The demo's data generator: a steady trickle of deterministic lines (makeLine) into the
 * input topic, so the wordcount store changes while you query and subscribe to it. It is a
 * plain Kafka producer, as the application feeding a real iqgate would be.
 */
import '../../src/kafka/kafkajs-patches.js';
import { Kafka, logLevel } from 'kafkajs';
import { kafkajsSecurity, type KafkaSecurity } from '../../src/kafka/kafka-security.js';
import { makeLine } from './line-generator.js';

export interface DemoFeedOptions {
  readonly brokers: readonly string[];
  /** TLS and SASL to the brokers, as the runtime's kafkaSecurity (default plaintext). */
  readonly security?: KafkaSecurity;
  readonly topic: string;
  readonly linesPerSecond: number;
  readonly seed?: number;
  /** Called with an error the feed could not recover from (it stops then). */
  readonly onError?: (error: unknown) => void;
}

export interface DemoFeed {
  /** Lines produced so far. */
  produced(): number;
  stop(): Promise<void>;
}

export async function startDemoFeed(options: DemoFeedOptions): Promise<DemoFeed> {
  // Quiet: kafkajs logs retriable start-up errors (coordinator loading) at ERROR; real failures reach onError.
  const kafka = new Kafka({ clientId: 'iqgate-demo-feed', brokers: [...options.brokers], logLevel: logLevel.NOTHING, ...(kafkajsSecurity(options.security) as object) });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const seed = options.seed ?? Date.now() % 100_000;
  // Ten ticks a second; each tick produces the lines due by then.
  const perTick = Math.max(1, Math.round(options.linesPerSecond / 10));
  let next = 0;
  let inFlight: Promise<void> = Promise.resolve();
  let stopped = false;
  const timer = setInterval(() => {
    if (stopped) return;
    const from = next;
    next += perTick;
    const messages = Array.from({ length: perTick }, (_, i) => ({ key: `line-${from + i}`, value: makeLine(seed, from + i) }));
    inFlight = inFlight
      .then(() => producer.send({ topic: options.topic, messages }))
      .then(() => undefined, (error: unknown) => {
        stopped = true;
        clearInterval(timer);
        options.onError?.(error);
      });
  }, 100);
  return {
    produced: () => next,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await inFlight;
      await producer.disconnect();
    },
  };
}
