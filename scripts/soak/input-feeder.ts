/**
 * Keeps producing wordcount input lines (examples/wordcount's deterministic generator) at a
 * steady rate while the campaign kills instances, so that every kill lands on an instance with
 * work in flight. An idempotent producer: a retried send is not duplicated. The campaign does
 * not trust the feeder's count for the model anyway: it recounts the input topic at the end.
 */
import { makeLine } from '../../examples/wordcount/index.js';
import type { Kafka } from './soak-kafka.js';

export interface InputFeeder {
  /** Lines sent (acknowledged) so far. */
  produced(): number;
  /** Sends that failed (their lines may or may not be in the topic; the recount decides). */
  errors(): number;
  /** Stops after the batch in flight. */
  stop(): Promise<void>;
}

export async function startInputFeeder(kafka: Kafka, topic: string, seed: number, linesPerSecond: number): Promise<InputFeeder> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const tickMs = 100;
  const perTick = Math.max(1, Math.round((linesPerSecond * tickMs) / 1000));
  let next = 0;
  let acknowledged = 0;
  let failures = 0;
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      const started = Date.now();
      const messages = [];
      for (let i = next; i < next + perTick; i += 1) messages.push({ key: `line-${i}`, value: makeLine(seed, i) });
      try {
        await producer.send({ topic, messages, acks: -1 });
        acknowledged += perTick;
        next += perTick;
      } catch {
        failures += 1;
        next += perTick; // the lines may be in the topic: move on, never resend a line under the same index
      }
      await new Promise((r) => setTimeout(r, Math.max(0, tickMs - (Date.now() - started))));
    }
  })();
  return {
    produced: () => acknowledged,
    errors: () => failures,
    stop: async () => {
      stopping = true;
      await loop;
      await producer.disconnect();
    },
  };
}
