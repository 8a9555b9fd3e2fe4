/**
 * Watches a wordcount's output topic as a user would: a read_committed consumer keeps each word's
 * latest count (8-byte big-endian, as both iqgate's int64 serde and Kafka Streams' Long serde
 * write it). Counts only grow and each commit forwards a word's latest count, so the sum of the
 * latest counts is the number of words counted in committed transactions. Done when every word
 * has its expected count; a count above it (a duplicate), a word nobody wrote or a value that is
 * not a count fails the watch — before `done` by rejecting it, after it through check(). A count
 * below the latest is an older one read again and is skipped.
 *
 * Shared by bench:processing's runs (iqgate on each adapter, Kafka Streams): each run's output is
 * checked, and each run ends when its watch does.
 */
import '../src/kafka/kafkajs-patches.js';
import { performance } from 'node:perf_hooks';
import { Kafka, logLevel, type Consumer } from 'kafkajs';

/** How long the watcher's consumer may take to join its group. */
const JOIN_TIMEOUT_MS = 30_000;

export class CountWatcher {
  /** performance.now() when every word had its expected count (0: not yet). */
  doneAt = 0;
  /** Resolves when every word has its expected count; rejects on a wrong count before that. */
  readonly done: Promise<void>;
  private readonly latest = new Map<string, number>();
  private readonly totalWords: number;
  private matched = 0;
  private counted = 0;
  private failure: Error | null = null;
  private settle!: (error?: Error) => void;

  private constructor(
    private readonly consumer: Consumer,
    private readonly expected: ReadonlyMap<string, number>,
  ) {
    let total = 0;
    for (const count of expected.values()) total += count;
    this.totalWords = total;
    this.done = new Promise<void>((resolve, reject) => {
      this.settle = (error) => (error === undefined ? resolve() : reject(error));
    });
    this.done.catch(() => undefined);
  }

  /** Joined and reading the topic from its start when this resolves. */
  static async start(brokers: readonly string[], topic: string, groupId: string, expected: ReadonlyMap<string, number>): Promise<CountWatcher> {
    const kafka = new Kafka({ clientId: 'bench-count-watcher', brokers: [...brokers], logLevel: logLevel.ERROR });
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100, sessionTimeout: 10_000, heartbeatInterval: 1_000 });
    const watcher = new CountWatcher(consumer, expected);
    let timer: NodeJS.Timeout | undefined;
    try {
      const joined = new Promise<void>((resolve, reject) => {
        consumer.on(consumer.events.GROUP_JOIN, () => resolve());
        consumer.on(consumer.events.CRASH, (event) => reject(new Error(`the count watcher's consumer crashed: ${String(event.payload.error)}`)));
        timer = setTimeout(() => reject(new Error(`the count watcher's consumer did not join its group within ${String(JOIN_TIMEOUT_MS)} ms`)), JOIN_TIMEOUT_MS);
      });
      await consumer.connect();
      await consumer.subscribe({ topics: [topic], fromBeginning: true });
      await consumer.run({ eachBatch: async ({ batch }) => watcher.take(batch.messages) });
      await joined;
      return watcher;
    } catch (error) {
      await consumer.disconnect().catch(() => undefined);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Throws the first wrong count seen so far, after `done` too. */
  check(): void {
    if (this.failure !== null) throw this.failure;
  }

  /** How many words have their expected count, of how many. */
  progress(): string {
    return `${String(this.matched)} of ${String(this.expected.size)} words at their count, ${String(this.counted)} of ${String(this.totalWords)} words counted`;
  }

  async stop(): Promise<void> {
    await this.consumer.disconnect();
  }

  private fail(error: Error): void {
    this.failure ??= error;
    this.settle(error);
  }

  private take(messages: ReadonlyArray<{ key: Buffer | null; value: Buffer | null }>): void {
    for (const message of messages) {
      if (message.key === null || message.value === null) continue;
      const word = message.key.toString();
      if (message.value.length !== 8) {
        this.fail(new Error(`the count of "${word}" is ${String(message.value.length)} bytes, not an 8-byte long`));
        return;
      }
      const count = Number(message.value.readBigInt64BE());
      const expected = this.expected.get(word);
      const previous = this.latest.get(word) ?? 0;
      if (expected === undefined || count > expected) {
        this.fail(new Error(`counted ${String(count)} for "${word}", expected ${String(expected)} in the end`));
        return;
      }
      if (count <= previous) continue; // an older count read again (the watcher's own re-delivery)
      if (previous !== expected && count === expected) this.matched += 1;
      this.counted += count - previous;
      this.latest.set(word, count);
    }
    if (this.doneAt === 0 && this.matched === this.expected.size) {
      this.doneAt = performance.now();
      this.settle();
    }
  }
}
