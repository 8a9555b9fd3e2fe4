/**
 * The bank demo's generator: opens every branch, then produces transfers at a steady, modest
 * rate (default 5 a second), a chosen fraction of them marked to abort half-way. It is a plain
 * Kafka producer (idempotent, one request in flight, so each branch's events stay in order),
 * as the application feeding a real iqgate would be.
 */
// Before kafkajs: read_committed must not see aborted records (see the module's comment).
import '../../src/kafka/kafkajs-patches.js';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { kafkajsSecurity, type KafkaSecurity } from '../../src/kafka/kafka-security.js';
import { makeTransfer, openingEvents, resolveBankShape, type BankShape } from './transfer-generator.js';

export interface BankFeedOptions {
  readonly brokers: readonly string[];
  /** TLS and SASL to the brokers, as the runtime's kafkaSecurity (default plaintext). */
  readonly security?: KafkaSecurity;
  readonly topic: string;
  /** Branches, accounts, opening balance and the fraction of transfers marked to abort. */
  readonly shape?: Partial<BankShape>;
  /** Default 5. 0 opens the branches and produces no transfer. */
  readonly transfersPerSecond?: number;
  /** Default: from the clock. Transfer i of a seed is always the same (makeTransfer). */
  readonly seed?: number;
  /** Stop producing after this many transfers. Default: no limit. */
  readonly maxTransfers?: number;
  /** Called with an error the feed could not recover from (it stops then). */
  readonly onError?: (error: unknown) => void;
}

export interface BankFeed {
  readonly seed: number;
  readonly shape: BankShape;
  /** Transfers acknowledged by the broker so far: indices [0, produced()). */
  produced(): number;
  /** Of those, how many were marked to abort. */
  markedToAbort(): number;
  /** Stops producing; resolves once what was handed to the producer is acknowledged. */
  stop(): Promise<void>;
}

/** How often the feed wakes up to produce what is due. */
const TICK_MS = 100;

function toMessage([branch, event]: readonly [string, unknown]): { key: string; value: string } {
  return { key: branch, value: JSON.stringify(event) };
}

export async function startBankFeed(options: BankFeedOptions): Promise<BankFeed> {
  const shape = resolveBankShape(options.shape);
  const rate = options.transfersPerSecond ?? 5;
  if (!(rate >= 0 && rate <= 100_000)) throw new RangeError(`transfersPerSecond must be in [0, 100000], not ${rate}`);
  const seed = options.seed ?? Date.now() % 100_000;
  // Quiet: kafkajs logs retriable start-up errors (coordinator loading) at ERROR; real failures reach onError.
  const kafka = new Kafka({ clientId: 'iqgate-bank-feed', brokers: [...options.brokers], logLevel: logLevel.NOTHING, ...(kafkajsSecurity(options.security) as object) });
  const producer: Producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    await producer.send({ topic: options.topic, messages: openingEvents(shape).map(toMessage), acks: -1 });
  } catch (error) {
    await producer.disconnect();
    throw error;
  }

  const limit = options.maxTransfers ?? Number.POSITIVE_INFINITY;
  const startedAt = Date.now();
  let handed = 0; // transfers handed to the producer
  let acknowledged = 0;
  let marked = 0;
  let inFlight: Promise<void> = Promise.resolve();
  let stopped = false;
  const tick = (): void => {
    if (stopped) return;
    // What is due by now at `rate`, so low rates (below one per tick) keep their pace.
    const due = Math.min(limit, Math.floor(((Date.now() - startedAt) * rate) / 1000));
    if (due <= handed) return;
    const batch = Array.from({ length: due - handed }, (_, i) => makeTransfer(seed, handed + i, shape));
    handed = due;
    inFlight = inFlight
      .then(() => producer.send({ topic: options.topic, messages: batch.map(toMessage), acks: -1 }))
      .then(() => {
        acknowledged += batch.length;
        for (const [, event] of batch) if (event.abort === true) marked += 1;
      }, (error: unknown) => {
        if (stopped) return;
        stopped = true;
        clearInterval(timer);
        options.onError?.(error);
      });
  };
  const timer = setInterval(tick, TICK_MS);
  return {
    seed,
    shape,
    produced: () => acknowledged,
    markedToAbort: () => marked,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await inFlight;
      await producer.disconnect();
    },
  };
}
