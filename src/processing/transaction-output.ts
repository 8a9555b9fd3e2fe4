/**
 * The output of a task's open transaction: changelog, sink and dead-letter records. Records are
 * buffered and sent ahead of the commit in order (one send after the other, so each partition
 * receives them in processing order), and the commit only waits for what is still in flight
 * (kafkajs: await every send before committing, docs/kafkajs-notes.md §5). It also learns, from the
 * send results, where each changelog ends — the offset the store commit records (KIP-1035).
 * Records bound for repartition topics are packed as they come (record-pack.ts).
 */
import type { Serde } from '../store/types.js';
import type { OutputRecord, SendResult, TaskProducer } from './ports.js';
import { PackWriter } from './record-pack.js';

export class TransactionOutput {
  private pending: OutputRecord[] = [];
  private chain: Promise<void> = Promise.resolve();
  private error: unknown = null;
  /** Bumped by reset(): results of sends from an abandoned transaction are ignored. */
  private generation = 0;
  private readonly changelogNext = new Map<string, number>();
  /** Records of the open transaction have gone to Kafka: rolling back needs a Kafka abort. */
  sentInTxn = false;
  /** Monotonic count of records pushed, to see whether a flush produced anything. */
  pushed = 0;
  /** Records pushed since the last take or send (a pack's entries each). */
  private waiting = 0;
  /** Records bound for packed repartition topics, packed as they come. */
  private readonly packs: PackWriter | null;

  constructor(
    /** changelog topic → store name */
    private readonly storeOfChangelog: ReadonlyMap<string, string>,
    private readonly partition: number,
    /** Repartition topics written as packs (record-pack.ts): topic → partition count. */
    packed: ReadonlyMap<string, number> = new Map(),
  ) {
    this.packs = packed.size > 0 ? new PackWriter(packed) : null;
  }

  push(record: OutputRecord): void {
    this.counted();
    if (this.packs === null) this.pending.push(record);
    else this.packs.write(record, this.pending);
  }

  /**
   * A sink's record, serialized here: straight into its pack when its topic is packed and the
   * serdes encode into buffers (PackWriter.writeEncoded), else with serialize(). Throws what the
   * serdes throw (ENCODE_FAILED), with nothing pushed.
   */
  pushSink<K, V>(topic: string, key: K | null | undefined, value: V | null | undefined, keySerde: Serde<K>, valueSerde: Serde<V>, timestamp: number): void {
    if (this.packs !== null && key !== null && key !== undefined && this.packs.writeEncoded(topic, key, value ?? null, keySerde, valueSerde, timestamp, this.pending)) {
      this.counted();
      return;
    }
    this.push({
      topic,
      key: key === null || key === undefined ? null : keySerde.serialize(key),
      value: value === null || value === undefined ? null : valueSerde.serialize(value),
      timestamp,
    });
  }

  private counted(): void {
    this.pushed += 1;
    this.waiting += 1;
  }

  /** Records waiting to go out, a pack's entries each. */
  buffered(): number {
    return this.waiting;
  }

  /**
   * Everything buffered, the open packs closed. Exactly-once v2 hands it over for the instance's
   * transaction to produce (nothing is sent ahead there: the one transaction belongs to every task).
   */
  take(): OutputRecord[] {
    const output = this.pending;
    if (this.packs !== null) for (const pack of this.packs.flush()) output.push(pack);
    this.pending = [];
    this.waiting = 0;
    return output;
  }

  /** Starts sending what is buffered, after any earlier send. Failures surface in drain(). */
  sendAhead(producer: TaskProducer): void {
    if (this.buffered() === 0) return;
    const output = this.take();
    this.sentInTxn = true;
    const generation = this.generation;
    this.chain = this.chain.then(async () => {
      if (this.error !== null || generation !== this.generation) return;
      try {
        const results = await producer.send(output);
        if (generation === this.generation) this.noteSent(results);
      } catch (error) {
        if (generation === this.generation) this.error = error;
      }
    });
  }

  /** Sends the rest and waits for every send of the transaction; throws the first send failure. */
  async drain(producer: TaskProducer): Promise<void> {
    this.sendAhead(producer);
    await this.chain;
    if (this.error !== null) throw this.error;
  }

  /** Waits for in-flight sends, ignoring their failures (before an abort). */
  async settle(): Promise<void> {
    await this.chain.catch(() => undefined);
  }

  /** The stored changelog offsets moved past what this transaction wrote. */
  changelogOffsets(stored: Readonly<Record<string, number>>): Record<string, number> {
    const offsets: Record<string, number> = { ...stored };
    for (const [store, next] of this.changelogNext) offsets[store] = Math.max(offsets[store] ?? 0, next);
    return offsets;
  }

  /** Forgets the transaction: buffered records, in-flight results, changelog ends. */
  reset(): void {
    this.generation += 1;
    this.pending = [];
    this.waiting = 0;
    this.packs?.clear();
    this.chain = Promise.resolve();
    this.error = null;
    this.sentInTxn = false;
    this.changelogNext.clear();
  }

  private noteSent(results: readonly SendResult[]): void {
    for (const result of results) {
      const store = this.storeOfChangelog.get(result.topic);
      if (store !== undefined && result.partition === this.partition) {
        this.changelogNext.set(store, Math.max(this.changelogNext.get(store) ?? 0, result.lastOffset + 1));
      }
    }
  }
}
