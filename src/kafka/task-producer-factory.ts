/**
 * Per-task producers on kafkajs (TaskProducer port).
 *
 * Exactly-once: one transactional producer per task, transactionalId `<appId>-<topic>-<partition>`,
 * because kafkajs' TxnOffsetCommit carries no group generation (no KIP-447), so producer-epoch
 * fencing per task is the only zombie fence (docs/kafkajs-notes.md §2, §5). InitProducerId happens on
 * the first `producer.transaction()` call (`producer/index.js:137-139`), so init() opens the
 * first transaction. A failed commit/abort leaves the kafkajs state machine stuck (no error
 * state), so a producer that failed once is discarded by the caller, never reused.
 *
 * At-least-once: one shared idempotent producer for all tasks; commit() is a no-op (the task
 * commits input offsets through the consumer).
 */
import type { Kafka, Producer, Transaction } from 'kafkajs';
import type { OutputRecord, ProducerFactoryPort, SendResult, TaskProducer, TopicPartitionOffset } from '../processing/ports.js';
import { keyPartitioner } from './key-partitioner.js';
import { toIqgateError } from './kafka-errors.js';
import { Buffer } from 'node:buffer';

export interface TaskProducerOptions {
  readonly groupId: string;
  /** kafkajs default 60 s; an expired transaction shows up as a fenced producer. */
  readonly transactionTimeoutMs?: number;
}

const SEND_CHUNK = 1000;

function toMessages(records: readonly OutputRecord[]): Map<string, Array<{ key: Buffer | null; value: Buffer | null; partition?: number; headers?: Record<string, string>; timestamp?: string }>> {
  const byTopic = new Map<string, Array<{ key: Buffer | null; value: Buffer | null; partition?: number; headers?: Record<string, string>; timestamp?: string }>>();
  for (const r of records) {
    let list = byTopic.get(r.topic);
    if (list === undefined) {
      list = [];
      byTopic.set(r.topic, list);
    }
    list.push({
      key: r.key,
      value: r.value,
      ...(r.partition !== undefined ? { partition: r.partition } : {}),
      ...(r.headers !== undefined ? { headers: { ...r.headers } } : {}),
      ...(r.timestamp !== undefined ? { timestamp: String(r.timestamp) } : {}),
    });
  }
  return byTopic;
}

/** One sendBatch; kafkajs answers one RecordMetadata per partition with the base offset of what it wrote there. */
async function sendAll(sender: Pick<Producer, 'sendBatch'>, records: readonly OutputRecord[]): Promise<SendResult[]> {
  // Bounded requests: one partition's batch must stay under the broker's message.max.bytes (1 MB).
  if (records.length > SEND_CHUNK) {
    const results: SendResult[] = [];
    for (let i = 0; i < records.length; i += SEND_CHUNK) results.push(...await sendAll(sender, records.slice(i, i + SEND_CHUNK)));
    return results;
  }
  const byTopic = toMessages(records);
  const metadata = await sender.sendBatch({ topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })), acks: -1 });
  // Count what went to each explicit partition to turn base offsets into last offsets. Only the
  // changelogs need them (their records always name the task's partition); one send puts all
  // records of a partition into one batch, so last = base + count − 1.
  const explicit = new Map<string, number>();
  for (const r of records) {
    if (r.partition !== undefined) explicit.set(`${r.topic}\u0000${r.partition}`, (explicit.get(`${r.topic}\u0000${r.partition}`) ?? 0) + 1);
  }
  const results: SendResult[] = [];
  for (const m of metadata) {
    const count = explicit.get(`${m.topicName}\u0000${m.partition}`);
    if (count === undefined) continue; // only explicit partitions (changelogs) need exact offsets
    results.push({ topic: m.topicName, partition: m.partition, lastOffset: Number(m.baseOffset) + count - 1 });
  }
  return results;
}

class TransactionalTaskProducer implements TaskProducer {
  private readonly producer: Producer;
  private txn: Transaction | null = null;
  private connected = false;
  /** A connect started by preconnect() that init() has not awaited yet. */
  private connecting: Promise<void> | null = null;

  constructor(kafka: Kafka, readonly transactionalId: string, private readonly options: TaskProducerOptions, private readonly onClose: (p: TransactionalTaskProducer) => void = () => undefined) {
    this.producer = kafka.producer({
      transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: keyPartitioner,
      transactionTimeout: options.transactionTimeoutMs ?? 60_000,
      // Back-to-back transactions meet CONCURRENT_TRANSACTIONS on AddPartitionsToTxn (kafkajs #1315);
      // the send retrier uses these settings, so a short first back-off keeps commits fast.
      retry: { retries: 12, initialRetryTime: 20, maxRetryTime: 1000, factor: 0.3, multiplier: 1.6 },
    });
  }

  /** Starts connecting (brokers, metadata) ahead of init(), which then only asks for the producer id. */
  preconnect(): void {
    if (this.connected || this.connecting !== null) return;
    const connecting = this.producer.connect();
    connecting.catch(() => undefined); // init() awaits it and reports the failure
    this.connecting = connecting;
  }

  async init(): Promise<void> {
    try {
      if (!this.connected) {
        const connecting = this.connecting ?? this.producer.connect();
        this.connecting = null;
        await connecting;
        this.connected = true;
      }
      this.txn = await this.producer.transaction();
    } catch (error) {
      throw toIqgateError(error, `init producer ${this.transactionalId}`);
    }
  }

  private async transaction(): Promise<Transaction> {
    if (this.txn === null || !this.txn.isActive()) this.txn = await this.producer.transaction();
    return this.txn;
  }

  async send(records: readonly OutputRecord[]): Promise<SendResult[]> {
    try {
      return await sendAll(await this.transaction(), records);
    } catch (error) {
      throw toIqgateError(error, `send in transaction ${this.transactionalId}`);
    }
  }

  async sendOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    if (offsets.length === 0) return;
    const topics = new Map<string, Array<{ partition: number; offset: string }>>();
    for (const o of offsets) topics.set(o.topic, [...(topics.get(o.topic) ?? []), { partition: o.partition, offset: String(o.offset) }]);
    try {
      const txn = await this.transaction();
      await txn.sendOffsets({ consumerGroupId: this.options.groupId, topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) });
    } catch (error) {
      throw toIqgateError(error, `send offsets in transaction ${this.transactionalId}`);
    }
  }

  async commit(): Promise<void> {
    const txn = this.txn;
    if (txn === null || !txn.isActive()) return;
    try {
      await txn.commit();
    } catch (error) {
      throw toIqgateError(error, `commit transaction ${this.transactionalId}`);
    } finally {
      this.txn = null;
    }
  }

  async abort(): Promise<void> {
    const txn = this.txn;
    this.txn = null;
    if (txn === null || !txn.isActive()) return;
    try {
      await txn.abort();
    } catch (error) {
      throw toIqgateError(error, `abort transaction ${this.transactionalId}`);
    }
  }

  async close(): Promise<void> {
    this.txn = null;
    this.onClose(this);
    // A connect still under way (preconnect) would open sockets after the disconnect: let it end first.
    const connecting = this.connecting;
    this.connecting = null;
    if (connecting !== null) await connecting.catch(() => undefined);
    const connected = this.connected;
    this.connected = false;
    // disconnect() even when connect() failed half-way: kafkajs may hold sockets of a failed connect.
    await this.producer.disconnect().catch((error: unknown) => {
      if (connected) throw toIqgateError(error, `disconnect producer ${this.transactionalId}`);
    });
  }
}

class SharedIdempotentProducer implements TaskProducer {
  readonly transactionalId = null;
  constructor(private readonly shared: () => Promise<Producer>) {}
  async init(): Promise<void> {
    await this.shared();
  }
  async send(records: readonly OutputRecord[]): Promise<SendResult[]> {
    try {
      return await sendAll(await this.shared(), records);
    } catch (error) {
      throw toIqgateError(error, 'send');
    }
  }
  async sendOffsets(): Promise<void> {}
  async commit(): Promise<void> {}
  async abort(): Promise<void> {}
  async close(): Promise<void> {}
}

export function createTaskProducerFactory(kafka: Kafka, options: TaskProducerOptions): ProducerFactoryPort {
  let shared: Promise<Producer> | null = null;
  const getShared = (): Promise<Producer> => {
    shared ??= (async () => {
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: keyPartitioner, retry: { retries: 10 } });
      try {
        await producer.connect();
      } catch (error) {
        // Not cached: a broker that is down at the first send must not fail every later send.
        shared = null;
        await producer.disconnect().catch(() => undefined);
        throw toIqgateError(error, 'connect producer');
      }
      return producer;
    })();
    return shared;
  };
  // Every transactional producer not closed yet: close() releases them all, so a task whose
  // close never ran (a stop that timed out, a failed start) leaves no sockets behind.
  const open = new Set<TransactionalTaskProducer>();
  // Connected ahead of their tasks' opens (prepare), not handed over yet.
  const prepared = new Map<string, TransactionalTaskProducer>();
  const newProducer = (transactionalId: string): TransactionalTaskProducer => {
    const producer = new TransactionalTaskProducer(kafka, transactionalId, options, (p) => open.delete(p));
    open.add(producer);
    return producer;
  };
  return {
    create: (transactionalId) => {
      if (transactionalId === null) return new SharedIdempotentProducer(getShared);
      const ready = prepared.get(transactionalId);
      prepared.delete(transactionalId);
      return ready ?? newProducer(transactionalId);
    },
    // Most of a kafkajs producer's set-up is its connect(), not its InitProducerId
    // (docs/kafkajs-notes.md §5 "Connecting ahead"): that part can happen before the task moves.
    prepare: (transactionalIds) => {
      for (const id of transactionalIds) {
        if (prepared.has(id)) continue;
        const producer = newProducer(id);
        producer.preconnect();
        prepared.set(id, producer);
      }
    },
    releasePrepared: (keep) => {
      for (const [id, producer] of prepared) {
        if (keep(id)) continue;
        prepared.delete(id);
        void producer.close().catch(() => undefined);
      }
    },
    close: async () => {
      prepared.clear();
      const producer = shared;
      shared = null;
      const closing = [...open].map((p) => p.close().catch(() => undefined));
      if (producer !== null) closing.push(producer.then((p) => p.disconnect()).catch(() => undefined));
      await Promise.all(closing);
    },
  };
}
