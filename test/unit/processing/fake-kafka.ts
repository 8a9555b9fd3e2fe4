/**
 * In-memory fakes of the processing ports: a tiny broker with partitions, transactions
 * (read_committed stops at the first open transaction, like the LSO), producer fencing by
 * transactionalId, committed group offsets, and a consumer driven by the test.
 *
 * Also what the ports contract (test/contract/kafka-ports-contract.ts) asks of every adapter:
 * consumers created with topics (fakePorts' `options.topics`) join a group on run() and are
 * assigned partitions by the broker, rebalancing eagerly as members join and stop; a broker
 * marked `unreachable` fails the ports' first calls with BROKER_UNAVAILABLE.
 */
import { IqgateError } from '../../../src/errors.js';
import type {
  AdminPort, ChangelogChunk, ChangelogReaderPort, ConsumerHandlers, GroupConsumerPort, InputRecord, KafkaPorts,
  OutputRecord, ProducerFactoryPort, SendResult, StreamProducerPort, TaskProducer, TopicPartition, TopicPartitionOffset, TopicSpec,
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
  /** Set: every port of this broker fails as against an address where nothing answers. */
  unreachable = false;
  /** Group-mode consumers (created with topics) of each group, in join order. */
  private readonly members = new Map<string, FakeConsumer[]>();

  checkReachable(context: string): void {
    if (this.unreachable) throw new IqgateError('BROKER_UNAVAILABLE', `${context}: Kafka broker unreachable (fake)`, { retriable: true });
  }

  /** A group-mode consumer joins its group: an eager rebalance of the whole group. */
  join(groupId: string, consumer: FakeConsumer): void {
    const members = this.members.get(groupId) ?? [];
    if (members.includes(consumer)) return;
    this.rebalance(groupId, [...members, consumer], members);
  }

  leave(groupId: string, consumer: FakeConsumer): void {
    const members = this.members.get(groupId) ?? [];
    if (!members.includes(consumer)) return;
    const remaining = members.filter((m) => m !== consumer);
    this.rebalance(groupId, remaining, remaining);
  }

  /**
   * Eager, as kafkajs': the members that were already there hear onRebalancing, then every
   * member gets its whole new assignment, positions re-read from the committed offsets (assign()).
   * Partition p of every subscribed topic goes to member p mod n in join order, keeping a task's
   * partitions together as the task-aware assigner does.
   */
  private rebalance(groupId: string, members: FakeConsumer[], notified: readonly FakeConsumer[]): void {
    this.members.set(groupId, members);
    for (const m of notified) m.handlers?.onRebalancing();
    const shares = members.map((): TopicPartition[] => []);
    const topics = [...new Set(members.flatMap((m) => m.topics ?? []))];
    for (const topic of topics) {
      const partitions = this.logs.get(topic)?.length ?? 0;
      for (let p = 0; p < partitions; p += 1) shares[p % members.length]?.push({ topic, partition: p });
    }
    members.forEach((m, i) => m.assign((shares[i] ?? []).filter((tp) => m.topics?.includes(tp.topic))));
  }

  /** One fetch round of every group-mode consumer; the records handed over. */
  deliverAll(): number {
    let delivered = 0;
    for (const members of this.members.values()) for (const m of members) delivered += m.deliver();
    return delivered;
  }

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
    this.broker.checkReachable(`init producer ${this.transactionalId}`);
    if (this.transactionalId !== null) this.epoch = this.broker.initProducer(this.transactionalId);
  }
  async send(records: readonly OutputRecord[]): Promise<SendResult[]> {
    this.broker.calls.push(`send:${records.length}`);
    this.broker.checkReachable('send');
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
    if (this.failures.commitGate !== undefined) await this.failures.commitGate;
    if (this.failures.commit) throw new IqgateError('KAFKA_ERROR', 'injected commit failure', { retriable: true });
    if ((this.failures.commitFailures ?? 0) > 0) {
      this.failures.commitFailures = (this.failures.commitFailures ?? 0) - 1;
      throw new IqgateError('KAFKA_ERROR', 'injected commit failure', { retriable: true });
    }
    if (this.transactionalId === null) return;
    this.broker.checkEpoch(this.transactionalId, this.epoch);
    this.broker.endTxn(this.transactionalId, true, this.pendingOffsets, this.groupId);
    this.pendingOffsets = [];
  }
  async abort(): Promise<void> {
    this.broker.calls.push('abort');
    if (this.failures.abortGate !== undefined) await this.failures.abortGate;
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

/**
 * The instance's one transactional producer (exactly-once v2). `hold` and `holdOffsets` let a
 * test keep a commit in flight (to see processing go on meanwhile); `failures.commit` fails the
 * next commits.
 */
export class FakeStreamProducer implements StreamProducerPort {
  private inner: FakeProducer;
  /** Set to a promise to hold commit() until it settles. */
  hold: Promise<void> | null = null;
  /** Set to a promise to hold sendOffsets() until it settles. */
  holdOffsets: Promise<void> | null = null;
  /** Records produced per committed transaction. */
  readonly committedSizes: number[] = [];
  private produced = 0;
  private pending: Promise<unknown> = Promise.resolve();
  constructor(private readonly broker: FakeBroker, groupId: string, private readonly failures: FakeFailures, readonly transactionalId = 'app-instance-1') {
    this.inner = new FakeProducer(broker, this.transactionalId, groupId, failures);
  }
  async init(): Promise<void> {
    if ((this.failures.initFailures ?? 0) > 0) {
      this.failures.initFailures = (this.failures.initFailures ?? 0) - 1;
      throw new IqgateError('KAFKA_ERROR', 'injected init failure', { retriable: true });
    }
    await this.inner.init();
  }
  produce(records: readonly OutputRecord[]): void {
    this.produced += records.length;
    // Ordered like librdkafka's queue; failures surface at commit, as there.
    const sent = this.pending.then(() => this.inner.send(records));
    sent.catch(() => undefined); // surfaced by sendOffsets()/commit()
    this.pending = sent;
  }
  async sendOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    if (this.holdOffsets !== null) await this.holdOffsets;
    await this.pending;
    await this.inner.sendOffsets(offsets);
  }
  async commit(): Promise<void> {
    const hold = this.hold;
    if (hold !== null) await hold;
    try {
      await this.pending;
      await this.inner.commit();
      this.committedSizes.push(this.produced);
    } finally {
      this.pending = Promise.resolve();
      this.produced = 0;
    }
  }
  async abort(): Promise<void> {
    this.pending = Promise.resolve();
    this.produced = 0;
    await this.inner.abort();
  }
  /** Known abort unless `failures.abortUnknown` (a fenced or unreachable producer). */
  async abortAfterFailure(): Promise<boolean> {
    if (this.failures.abortUnknown === true) return false;
    await this.abort();
    return true;
  }
  async close(): Promise<void> {}
}

function hash(bytes: Buffer): number {
  let h = 0;
  for (const b of bytes) h = (h * 31 + b) >>> 0;
  return h;
}

export interface FakeFailures {
  send: boolean;
  commit: boolean;
  /** Fails this many commits, then none. */
  commitFailures?: number;
  /** abortAfterFailure() cannot confirm the abort. */
  abortUnknown?: boolean;
  /** Fails this many inits of the instance producer (InitProducerId), then none. */
  initFailures?: number;
  /** A task producer's commit waits for this first: a commit the test holds in flight. */
  commitGate?: Promise<void>;
  /** A task producer's abort waits for this first. */
  abortGate?: Promise<void>;
}

export class FakeConsumer implements GroupConsumerPort {
  handlers: ConsumerHandlers | null = null;
  readonly paused = new Set<string>();
  readonly positions = new Map<string, number>();
  assignment: TopicPartition[] = [];
  /** Offset commits begun; each waits for `commitGate` first when set (a commit the test holds in flight). */
  offsetCommitsStarted = 0;
  commitGate?: Promise<void>;
  /** `topics`: a group-mode consumer, assigned by the broker's group on run() (null: by the test's assign()). */
  constructor(private readonly broker: FakeBroker, private readonly groupId: string, readonly topics: readonly string[] | null = null) {}
  async run(handlers: ConsumerHandlers): Promise<void> {
    this.broker.checkReachable(`consumer of group ${this.groupId}`);
    this.handlers = handlers;
    if (this.topics !== null) this.broker.join(this.groupId, this);
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
      const { records: all, lso } = this.broker.readCommitted(tp.topic, tp.partition, from);
      if (all.length === 0) continue;
      // The hint while gateway requests wait: at most that many records per delivery.
      const limit = this.handlers?.maxRecordsPerFetch?.() ?? Infinity;
      const records = all.length > limit ? all.slice(0, Math.max(1, limit)) : all;
      if (this.handlers?.onBatch(tp, records)) {
        this.positions.set(k(tp), records === all ? Math.max(from, lso) : records[records.length - 1]!.offset + 1);
        delivered += records.length;
      }
    }
    return delivered;
  }
  pause(partitions: readonly TopicPartition[]): void { for (const tp of partitions) this.paused.add(k(tp)); }
  resume(partitions: readonly TopicPartition[]): void { for (const tp of partitions) this.paused.delete(k(tp)); }
  seek(position: TopicPartitionOffset): void { this.positions.set(k(position), position.offset); }
  async commitOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    this.offsetCommitsStarted += 1;
    if (this.commitGate !== undefined) await this.commitGate;
    for (const o of offsets) this.broker.groupOffsets.set(`${this.groupId}:${o.topic}:${o.partition}`, o.offset);
  }
  async stop(): Promise<void> {
    if (this.topics === null) return;
    this.broker.leave(this.groupId, this);
    this.assignment = [];
  }
}

function k(tp: TopicPartition): string {
  return `${tp.topic}:${tp.partition}`;
}

export interface FakePortsOptions {
  /** Subscribed topics: the consumer joins the broker's group on run() instead of waiting for the test's assign(). */
  readonly topics?: readonly string[];
  /** The stream producer's transactional id (default `app-instance-1`). */
  readonly transactionalId?: string;
}

export function fakePorts(broker: FakeBroker, groupId: string, failures: FakeFailures = { send: false, commit: false }, eosV2 = false, options: FakePortsOptions = {}): KafkaPorts & { consumer: FakeConsumer; streamProducer?: FakeStreamProducer } {
  const consumer = new FakeConsumer(broker, groupId, options.topics ?? null);
  const streamProducer = eosV2 ? new FakeStreamProducer(broker, groupId, failures, options.transactionalId) : undefined;
  const reachable = (context: string): void => broker.checkReachable(context);
  const producers: ProducerFactoryPort = {
    create: (transactionalId) => new FakeProducer(broker, transactionalId, groupId, failures),
    close: async () => {},
  };
  const admin: AdminPort = {
    partitionCounts: async (topics) => {
      reachable('read topic metadata');
      const missing = topics.filter((t) => !broker.logs.has(t));
      if (missing.length > 0) throw new IqgateError('TOPIC_NOT_FOUND', `topics not found: ${missing.join(', ')}`, { retriable: true, details: { missing } });
      return new Map(topics.map((t) => [t, broker.logs.get(t)?.length ?? 0]));
    },
    ensureTopics: async (specs: readonly TopicSpec[]) => {
      reachable('create internal topics');
      for (const s of specs) {
        const existing = broker.logs.get(s.topic)?.length;
        if (existing !== undefined && existing !== s.partitions) {
          throw new IqgateError('INVALID_CONFIG', `internal topic ${s.topic} has ${existing} partitions, expected ${s.partitions}`);
        }
        broker.createTopic(s.topic, s.partitions);
      }
    },
    committedOffsets: async (group, topic, partitions) => {
      reachable(`fetch committed offsets of ${group}`);
      const result = new Map<number, number>();
      for (const [key, offset] of broker.groupOffsets) {
        const [g, t, p] = key.split(':');
        if (g === group && t === topic && (partitions === undefined || partitions.includes(Number(p)))) result.set(Number(p), offset);
      }
      return result;
    },
    beginningOffsets: async (topic) => {
      reachable(`fetch offsets of ${topic}`);
      return new Map((broker.logs.get(topic) ?? []).map((_l, p) => [p, 0]));
    },
    endOffsets: async (topic) => {
      reachable(`fetch offsets of ${topic}`);
      return new Map((broker.logs.get(topic) ?? []).map((_l, p) => [p, broker.readCommitted(topic, p, 0).lso]));
    },
    highWatermarks: async (topic) => {
      reachable(`fetch offsets of ${topic}`);
      return new Map((broker.logs.get(topic) ?? []).map((log, p) => [p, log.length]));
    },
    close: async () => {},
  };
  const changelogReader: ChangelogReaderPort = {
    read: async (tp, from, end, onChunk: (chunk: ChangelogChunk) => Promise<void>) => {
      reachable('connect changelog reader');
      const { records } = broker.readCommitted(tp.topic, tp.partition, from);
      await onChunk({ records: records.filter((r) => r.offset < end), nextOffset: end });
    },
    close: async () => {},
  };
  return { consumer, producers, admin, changelogReader, ...(streamProducer === undefined ? {} : { streamProducer }), client: 'fake', close: async () => {} };
}
