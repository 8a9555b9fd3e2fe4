/**
 * The output of a task's open transaction: changelog, sink and dead-letter records. Records are
 * buffered and sent ahead of the commit in order (one send after the other, so each partition
 * receives them in processing order), and the commit only waits for what is still in flight
 * (kafkajs: await every send before committing, docs/kafkajs-notes.md §5). It also learns, from the
 * send results, where each changelog ends — the offset the store commit records (KIP-1035).
 * Records bound for repartition topics are packed as they come (record-pack.ts).
 *
 * A commit that lets its task go on processing (TaskCommit.commit) seals the transaction's
 * output: what is buffered joins its sends, and the next transaction's records buffer afresh,
 * sent only once that commit has ended (a Kafka producer has one transaction at a time).
 */
import type { Serde } from '../store/types.js';
import type { OutputRecord, SendResult, TaskProducer } from './ports.js';
import { PackWriter } from './record-pack.js';

/** The sends of one transaction: one after the other, the first failure, where each changelog partition ended. */
class TransactionSends {
  chain: Promise<void> = Promise.resolve();
  error: unknown = null;
  /** store name → the offset after the last record this transaction wrote to its changelog partition. */
  readonly changelogNext = new Map<string, number>();
  started = false;
  /** Forgotten (TransactionOutput.reset): a send still queued in it does not go out. */
  abandoned = false;

  /** Resolves once every send is done; throws the first failure. */
  async drained(): Promise<void> {
    await this.chain;
    if (this.error !== null) throw this.error;
  }

  /** The stored changelog offsets moved past what this transaction wrote. */
  changelogOffsets(stored: Readonly<Record<string, number>>): Record<string, number> {
    const offsets: Record<string, number> = { ...stored };
    for (const [store, next] of this.changelogNext) offsets[store] = Math.max(offsets[store] ?? 0, next);
    return offsets;
  }
}

/** A sealed transaction's output, all of it sent or on its way (TransactionOutput.seal). */
export interface SealedOutput {
  drained(): Promise<void>;
  changelogOffsets(stored: Readonly<Record<string, number>>): Record<string, number>;
}

export class TransactionOutput {
  private pending: OutputRecord[] = [];
  /** The open transaction's sends; replaced by reset() (what an abandoned one still learns is ignored) and seal(). */
  private sends = new TransactionSends();
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

  /** Records of the open transaction have gone to Kafka: rolling back needs a Kafka abort. */
  get sentInTxn(): boolean {
    return this.sends.started;
  }

  /** Starts sending what is buffered, after any earlier send. Failures surface when the sealed output is drained. */
  sendAhead(producer: TaskProducer): void {
    if (this.buffered() === 0) return;
    const output = this.take();
    const sends = this.sends;
    sends.started = true;
    sends.chain = sends.chain.then(async () => {
      if (sends.error !== null || sends.abandoned) return;
      try {
        this.noteSent(sends, await producer.send(output));
      } catch (error) {
        sends.error = error;
      }
    });
  }

  /**
   * The open transaction's output is complete: what is buffered goes out into it now, and the
   * next transaction's output starts empty (the caller sends none of it until the sealed
   * transaction's commit has ended). The sealed sends are the caller's from here: reset() no
   * longer touches them.
   */
  seal(producer: TaskProducer): SealedOutput {
    this.sendAhead(producer);
    const sends = this.sends;
    this.sends = new TransactionSends();
    return sends;
  }

  /** Waits for the open transaction's in-flight sends (not a sealed one's), ignoring their failures (before an abort). */
  async settle(): Promise<void> {
    await this.sends.chain.catch(() => undefined);
  }

  /** Forgets the open transaction: buffered records, in-flight results, changelog ends. */
  reset(): void {
    this.pending = [];
    this.waiting = 0;
    this.packs?.clear();
    this.sends.abandoned = true;
    this.sends = new TransactionSends();
  }

  private noteSent(sends: TransactionSends, results: readonly SendResult[]): void {
    for (const result of results) {
      const store = this.storeOfChangelog.get(result.topic);
      if (store !== undefined && result.partition === this.partition) {
        sends.changelogNext.set(store, Math.max(sends.changelogNext.get(store) ?? 0, result.lastOffset + 1));
      }
    }
  }
}
