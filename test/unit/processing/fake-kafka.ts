/**
 * In-memory fakes of the processing ports: a tiny broker with partitions, transactions
 * (read_committed stops at the first open transaction, like the LSO), producer fencing by
 * transactionalId, committed group offsets, and a consumer driven by the test.
 */
import { IqgateError } from '../../../src/errors.js';
import type {
  AdminPort, ChangelogChunk, ChangelogReaderPort, ConsumerHandlers, GroupConsumerPort, InputRecord, KafkaPorts,
  OutputRecord, ProducerFactoryPort, SendResult, TaskProducer, TopicPartition, TopicPartitionOffset, TopicSpec,
} from '../../../src/processing/ports.js';

interface Entry { record: InputRecord; txn: number | null }
type TxnState = 'open' | 'committed' | 'aborted';

export class FakeBroker {
  readonly logs = new Map<string, Entry[][]>();
  readonly txns = new Map<number, TxnState>();
  readonly groupOffsets = new Map<string, number>();
  private nextTxn = 1;
  private readonly epochs = new Map<string, number>();
  private readonly openTxnOf = new Map<string, number>();
  /** Calls in order, for protocol-order assertions. */
  readonly calls: string[] = [];

  createTopic(topic: string, partitions: number): void {
    if (!this.logs.has(topic)) this.logs.set(topic, Array.from({ length: partitions }, () => []));
  }

  append(topic: string, partition: number, key: Buffer | null, value: Buffer | null, txn: number | null, headers: Record<string, string> = {}): number {
    const log = this.logs.get(topic)?.[partition];
    if (log === undefined) throw new IqgateError('TOPIC_NOT_FOUND', `${topic}/${partition}`);
    const offset = log.length;
    log.push({ record: { topic, partition, offset, key, value, timestamp: Date.now(), headers }, txn });
    return offset;
  }

  /** read_committed: committed or non-transactional records below the first open transaction. */
  readCommitted(topic: string, partition: number, from: number): { records: InputRecord[]; lso: number } {
    const log = this.logs.get(topic)?.[partition] ?? [];
    const records: InputRecord[] = [];
    let lso = log.length;
    for (let i = 0; i < log.length; i += 1) {
      const e = log[i] as Entry;
      const state = e.txn === null ? 'committed' : this.txns.get(e.txn);
      if (state === 'open') { lso = i; break; }
      if (i >= from && state === 'committed') records.push(e.record);
    }
    return { records, lso };
  }

  // transactions
  initProducer(transactionalId: string): number {
    const open = this.openTxnOf.get(transactionalId);
    if (open !== undefined) this.txns.set(open, 'aborted');
    this.openTxnOf.delete(transactionalId);
    const epoch = (this.epochs.get(transactionalId) ?? 0) + 1;
    this.epochs.set(transactionalId, epoch);
    return epoch;
  }
  checkEpoch(transactionalId: string, epoch: number): void {
    if (this.epochs.get(transactionalId) !== epoch) throw new IqgateError('PRODUCER_FENCED', `${transactionalId} fenced`);
  }
  txnFor(transactionalId: string): number {
    let txn = this.openTxnOf.get(transactionalId);
    if (txn === undefined) {
      txn = this.nextTxn++;
      this.txns.set(txn, 'open');
      this.openTxnOf.set(transactionalId, txn);
    }
    return txn;
  }
  endTxn(transactionalId: string, commit: boolean, offsets: readonly TopicPartitionOffset[], groupId: string): void {
    const txn = this.openTxnOf.get(transactionalId);
    if (txn !== undefined) this.txns.set(txn, commit ? 'committed' : 'aborted');
    this.openTxnOf.delete(transactionalId);
    if (commit) for (const o of offsets) this.groupOffsets.set(`${groupId}:${o.topic}:${o.partition}`, o.offset);
  }
}

class FakeProducer implements TaskProducer {
  private epoch = 0;
  private pendingOffsets: TopicPartitionOffset[] = [];
  constructor(private readonly broker: FakeBroker, readonly transactionalId: string | null, private readonly groupId: string, private readonly failures: FakeFailures) {}
  async init(): Promise<void> {
    this.broker.calls.push(`init:${this.transactionalId}`);
    if (this.transactionalId !== null) this.epoch = this.broker.initProducer(this.transactionalId);
  }
  async send(records: readonly OutputRecord[]): Promise<SendResult[]> {
    this.broker.calls.push(`send:${records.length}`);
    if (this.failures.send) throw new IqgateError('KAFKA_ERROR', 'injected send failure', { retriable: true });
    let txn: number | null = null;
    if (this.transactionalId !== null) {
      this.broker.checkEpoch(this.transactionalId, this.epoch);
      txn = this.broker.txnFor(this.transactionalId);
    }
    const last = new Map<string, SendResult>();
    for (const r of records) {
      const partitions = this.broker.logs.get(r.topic)?.length ?? 0;
      const partition = r.partition ?? (r.key === null ? 0 : hash(r.key) % partitions);
      const offset = this.broker.append(r.topic, partition, r.key, r.value, txn, { ...r.headers });
      if (r.partition !== undefined) last.set(`${r.topic}:${partition}`, { topic: r.topic, partition, lastOffset: offset });
    }
    return [...last.values()];
  }
  async sendOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    this.broker.calls.push('sendOffsets');
    if (this.transactionalId !== null) {
      this.broker.checkEpoch(this.transactionalId, this.epoch);
      this.broker.txnFor(this.transactionalId);
    }
    this.pendingOffsets.push(...offsets);
  }
  async commit(): Promise<void> {
    this.broker.calls.push('commit');
    if (this.failures.commit) throw new IqgateError('KAFKA_ERROR', 'injected commit failure', { retriable: true });
    if (this.transactionalId === null) return;
    this.broker.checkEpoch(this.transactionalId, this.epoch);
    this.broker.endTxn(this.transactionalId, true, this.pendingOffsets, this.groupId);
    this.pendingOffsets = [];
  }
  async abort(): Promise<void> {
    this.broker.calls.push('abort');
    this.pendingOffsets = [];
    if (this.transactionalId === null) return;
    try {
      this.broker.checkEpoch(this.transactionalId, this.epoch);
      this.broker.endTxn(this.transactionalId, false, [], this.groupId);
    } catch {
      // fenced: the new owner's init aborted it already
    }
  }
  async close(): Promise<void> {}
}

function hash(bytes: Buffer): number {
  let h = 0;
  for (const b of bytes) h = (h * 31 + b) >>> 0;
  return h;
}

export interface FakeFailures { send: boolean; commit: boolean }

export class FakeConsumer implements GroupConsumerPort {
  handlers: ConsumerHandlers | null = null;
  readonly paused = new Set<string>();
  readonly positions = new Map<string, number>();
  assignment: TopicPartition[] = [];
  constructor(private readonly broker: FakeBroker, private readonly groupId: string) {}
  async run(handlers: ConsumerHandlers): Promise<void> {
    this.handlers = handlers;
  }
  assign(tps: TopicPartition[]): void {
    this.assignment = tps;
    this.positions.clear();
    for (const tp of tps) this.positions.set(k(tp), this.broker.groupOffsets.get(`${this.groupId}:${tp.topic}:${tp.partition}`) ?? 0);
    this.handlers?.onAssignment(tps);
  }
  /** One fetch round over the unpaused assigned partitions; returns the records handed over. */
  deliver(): number {
    let delivered = 0;
    for (const tp of this.assignment) {
      if (this.paused.has(k(tp))) continue;
      const from = this.positions.get(k(tp)) ?? 0;
      const { records, lso } = this.broker.readCommitted(tp.topic, tp.partition, from);
      if (records.length === 0) continue;
      if (this.handlers?.onBatch(tp, records)) {
        this.positions.set(k(tp), Math.max(from, lso));
        delivered += records.length;
      }
    }
    return delivered;
  }
  pause(partitions: readonly TopicPartition[]): void { for (const tp of partitions) this.paused.add(k(tp)); }
  resume(partitions: readonly TopicPartition[]): void { for (const tp of partitions) this.paused.delete(k(tp)); }
  seek(position: TopicPartitionOffset): void { this.positions.set(k(position), position.offset); }
  async commitOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    for (const o of offsets) this.broker.groupOffsets.set(`${this.groupId}:${o.topic}:${o.partition}`, o.offset);
  }
  async stop(): Promise<void> {}
}

function k(tp: TopicPartition): string {
  return `${tp.topic}:${tp.partition}`;
}

export function fakePorts(broker: FakeBroker, groupId: string, failures: FakeFailures = { send: false, commit: false }): KafkaPorts & { consumer: FakeConsumer } {
  const consumer = new FakeConsumer(broker, groupId);
  const producers: ProducerFactoryPort = {
    create: (transactionalId) => new FakeProducer(broker, transactionalId, groupId, failures),
    close: async () => {},
  };
  const admin: AdminPort = {
    partitionCounts: async (topics) => new Map(topics.map((t) => {
      const log = broker.logs.get(t);
      if (log === undefined) throw new IqgateError('TOPIC_NOT_FOUND', t);
      return [t, log.length];
    })),
    ensureTopics: async (specs: readonly TopicSpec[]) => { for (const s of specs) broker.createTopic(s.topic, s.partitions); },
    committedOffsets: async (group, topic) => {
      const result = new Map<number, number>();
      for (const [key, offset] of broker.groupOffsets) {
        const [g, t, p] = key.split(':');
        if (g === group && t === topic) result.set(Number(p), offset);
      }
      return result;
    },
    beginningOffsets: async (topic) => new Map((broker.logs.get(topic) ?? []).map((_l, p) => [p, 0])),
    endOffsets: async (topic) => new Map((broker.logs.get(topic) ?? []).map((_l, p) => [p, broker.readCommitted(topic, p, 0).lso])),
    close: async () => {},
  };
  const changelogReader: ChangelogReaderPort = {
    read: async (tp, from, end, onChunk: (chunk: ChangelogChunk) => Promise<void>) => {
      const { records } = broker.readCommitted(tp.topic, tp.partition, from);
      await onChunk({ records: records.filter((r) => r.offset < end), nextOffset: end });
    },
    close: async () => {},
  };
  return { consumer, producers, admin, changelogReader, close: async () => {} };
}
