/**
 * The ports through which processing/ talks to Kafka (docs/architecture.md §2). src/kafka/ implements
 * them on kafkajs; the unit tests implement them in memory. Nothing here knows kafkajs.
 */
import type { IqgateError } from '../errors.js';
import { Buffer } from 'node:buffer';

export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

export interface TopicPartitionOffset extends TopicPartition {
  /** The next offset to read (Kafka's committed-offset convention). */
  readonly offset: number;
}

export type Headers = Readonly<Record<string, string>>;

export interface InputRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers: Headers;
}

export interface OutputRecord {
  readonly topic: string;
  /** Absent: the producer's default (murmur2) partitioner chooses from the key. */
  readonly partition?: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: Headers;
  readonly timestamp?: number;
}

/** Where records of one send landed: the last offset written to each partition. */
export interface SendResult {
  readonly topic: string;
  readonly partition: number;
  readonly lastOffset: number;
}

export interface ConsumerHandlers {
  /**
   * A fetched batch of one partition, in offset order. Return true once the records are taken
   * (the adapter then resolves the batch, control records included); false leaves the fetch
   * position where it was (the partition should be paused or sought by then).
   */
  onBatch(tp: TopicPartition, records: readonly InputRecord[]): boolean;
  /**
   * The full new assignment after a (re)join. Called synchronously before the next fetch, so
   * pause/seek calls made here apply to it (docs/kafkajs-notes.md §1 "Hooks").
   */
  onAssignment(assignment: readonly TopicPartition[]): void;
  /** A rebalance has started (eager protocol: every partition is about to be re-assigned). */
  onRebalancing(): void;
  /** The consumer stopped for good (non-retriable error or retries exhausted). */
  onCrash(error: unknown): void;
  /**
   * The consumer lost its group through a retriable error — typically BROKER_UNAVAILABLE, the
   * broker is away — and reconnects by itself (again and again, until it answers); onAssignment
   * follows once it has rejoined. Meanwhile pause/resume/seek do nothing: the rejoin's
   * assignment is applied afresh, as after any rebalance.
   */
  onReconnecting?(error: IqgateError): void;
  /**
   * The consumer is back after onReconnecting without needing a rebalance (librdkafka keeps
   * its group membership through a short outage): records flow again.
   */
  onReconnected?(): void;
  /**
   * Whether the tasks can take more records now. Adapters whose pause is costly (librdkafka
   * drops a paused partition's prefetched records) ask before each fetch and wait while false,
   * instead of the task manager pausing partitions for back-pressure. kafkajs asks before it
   * hands a batch over and waits a bounded time (it heartbeats only between batches; it is
   * false there only while the pacer of gateway requests rests, a few milliseconds).
   */
  readyForMore?(): boolean;
  /**
   * The most records the next fetch should hand over at once (a hint; default: the adapter's
   * batch size). Turning fetched records into JavaScript objects is one synchronous stretch on
   * librdkafka, and decoding a fetch response one on kafkajs, so the task manager asks for small
   * batches while gateway requests wait. librdkafka counts records; kafkajs, which cannot count
   * before it decodes, fetches fewer bytes while the hint is finite (kafkajs patch 10); a broker
   * still sends a producer batch larger than that whole, to the first partition of a fetch.
   */
  maxRecordsPerFetch?(): number;
  /**
   * Cooperative rebalancing (adapters whose consumer has `cooperative`): these partitions are
   * about to be taken away, the rest stay. The adapter gives them up only once the returned
   * promise settles, so the tasks can commit what they processed first (Kafka Streams'
   * onPartitionsRevoked). `lost`: the member was already out of the group (session expired):
   * nothing can be committed any more, the tasks are dropped. onAssignment follows with the
   * assignment that remains. An eager adapter calls it only with `lost`, for its whole
   * assignment (kafkajs: its session watchdog), and nothing waits for it; onAssignment follows
   * once the member has rejoined.
   */
  onRevoked?(partitions: readonly TopicPartition[], lost: boolean): Promise<void>;
}

/**
 * The group member hosting an input partition, by the URL it advertises (Kafka Streams'
 * `application.server`). Members that advertise nothing own partitions without an entry.
 */
export interface PartitionOwner extends TopicPartition {
  readonly url: string;
}

export interface ConsumerStopOptions {
  /** A static member leaves the group too (default false: it keeps its place until its session times out). */
  readonly leaveGroup?: boolean;
}

/** The application's group consumer (read_committed, manual offsets). */
export interface GroupConsumerPort {
  run(handlers: ConsumerHandlers): Promise<void>;
  pause(partitions: readonly TopicPartition[]): void;
  resume(partitions: readonly TopicPartition[]): void;
  /** Sets the fetch position without committing anything. */
  seek(position: TopicPartitionOffset): void;
  /** Plain (non-transactional) offset commit, for at-least-once. */
  commitOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void>;
  /**
   * Leaves the fetch loop and closes the consumer. A dynamic member leaves the group as it
   * closes. A static member (librdkafka with group.instance.id, KIP-345) keeps its place until
   * its session times out, so that a restart takes it back without a rebalance — unless
   * `leaveGroup` is set: then it is taken out of the group at once and its partitions go to the
   * other members now (a scale-down; Kafka Streams' `close(CloseOptions.leaveGroup(true))`).
   */
  stop(options?: ConsumerStopOptions): Promise<void>;
  /**
   * A stop with these options comes soon (the runtime's last commits run first): the adapter
   * may get ready for it meanwhile, e.g. connect for a static member's removal. Optional.
   */
  prepareStop?(options: ConsumerStopOptions): void;
  /**
   * The whole group's partition → URL map as of the last completed rebalance (learned in the
   * background after each join; empty until then). Optional: in-memory fakes may omit it.
   */
  partitionOwners?(): readonly PartitionOwner[];
  /**
   * True when a rebalance leaves retained partitions alone (cooperative protocol: their fetch
   * positions survive, and onRevoked announces what goes). False or absent: eager, every
   * partition is revoked and re-assigned, positions re-read from the broker.
   */
  readonly cooperative?: boolean;
  /**
   * True for a static member (KIP-345, group.instance.id): it keeps its place in the group
   * across a stop until its session times out, unless stop() is given `leaveGroup`. False or
   * absent: a dynamic member, which leaves the group whenever it stops.
   */
  readonly staticMember?: boolean;
}

/**
 * One task's producer. Under exactly-once it is transactional with the task's own
 * transactionalId (fencing per task: docs/kafkajs-notes.md §2, no KIP-447 group fencing in kafkajs);
 * under at-least-once it is a plain idempotent producer.
 */
export interface TaskProducer {
  readonly transactionalId: string | null;
  /**
   * InitProducerId: fences older producers with this transactionalId and completes or aborts
   * their open transaction. Must finish before the task reads committed offsets or restores.
   */
  init(): Promise<void>;
  /** Sends inside the open transaction (beginning one if needed). Resolves once all are acknowledged. */
  send(records: readonly OutputRecord[]): Promise<SendResult[]>;
  /** Exactly-once: adds the input offsets to the open transaction (TxnOffsetCommit for the application's group). */
  sendOffsets(inputOffsets: readonly TopicPartitionOffset[]): Promise<void>;
  /** Exactly-once: commits the open transaction. At-least-once: a no-op. */
  commit(): Promise<void>;
  /** Aborts the open transaction, if any. */
  abort(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Exactly-once v2 (KIP-447): ONE transactional producer for every task of the instance, as a
 * Kafka Streams stream thread has. Its offset commits carry the consumer's group generation
 * and member id, so the group coordinator rejects a zombie's commit (stale generation), and
 * its transactionalId is the instance's (stable across restarts on the same state directory,
 * so a restarted instance fences its crashed predecessor).
 *
 * The processing side calls it in one rhythm: produce() between commits, then
 * sendOffsets() → commit(); nothing is produced while a commit is in flight.
 */
export interface StreamProducerPort {
  readonly transactionalId: string;
  /**
   * InitProducerId: fences an older producer with this transactionalId and settles its open
   * transaction. Called before the first task opens and again after any failed commit or
   * abort (re-creating the client when the failure was fatal, e.g. fenced).
   */
  init(): Promise<void>;
  /** Queues records into the transaction (beginning one if needed). Synchronous; a failed record fails commit(). */
  produce(records: readonly OutputRecord[]): void;
  /** Adds the input offsets to the transaction with the consumer's group metadata (KIP-447). */
  sendOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void>;
  /**
   * Commits the transaction (flushing what is queued first). A failure leaves the outcome
   * unknown: the caller rolls back and calls init() again. No per-record offsets come back
   * (one JavaScript callback per record is what slows a client down most): the stores learn
   * their changelog ends from ChangelogEnds instead.
   */
  commit(): Promise<void>;
  /** Aborts the open transaction, if any (failures are for init() to settle). */
  abort(): Promise<void>;
  /**
   * After a failed sendOffsets()/commit(): aborts the transaction and resolves true only when the
   * outcome is known — nothing of it committed: the broker confirmed the abort, or the client
   * had already ruled the transaction abort-only (it can never commit, and the next
   * InitProducerId aborts it if the coordinator still holds it). False: the outcome stays
   * unknown (fenced, fatal, broker away, timed out). Either way the caller calls init() before
   * the next transaction.
   */
  abortAfterFailure(): Promise<boolean>;
  close(): Promise<void>;
}

export interface ProducerFactoryPort {
  create(transactionalId: string | null): TaskProducer;
  /**
   * Optional: connects the transactional producers of these ids ahead of their tasks' opens (an
   * instance warming up to join), without their transactional InitProducerId, which would fence
   * the tasks' current owners. create() hands a prepared one over; releasePrepared closes those `keep` says no to.
   */
  prepare?(transactionalIds: readonly string[]): void;
  releasePrepared?(keep: (transactionalId: string) => boolean): void;
  close(): Promise<void>;
}

export interface TopicSpec {
  readonly topic: string;
  readonly partitions: number;
  readonly compacted: boolean;
  /**
   * Created with unlimited retention (retention.ms -1): its records stay until the application
   * deletes them once committed (repartition topics: runtime/repartition-purger.ts).
   */
  readonly purgedByApplication?: boolean;
}

export interface AdminPort {
  /** Partition count of each topic; throws IqgateError TOPIC_NOT_FOUND naming the missing ones. */
  partitionCounts(topics: readonly string[]): Promise<Map<string, number>>;
  /** Creates missing topics; an existing topic with another partition count is INVALID_CONFIG. */
  ensureTopics(specs: readonly TopicSpec[]): Promise<void>;
  /**
   * The group's committed offsets for `topic` (partition → next offset; absent = none): of the
   * given partitions only, or of every partition when none are given. Opening tasks ask for
   * their own partitions: on librdkafka the read waits for transactions still holding offsets
   * of the partitions asked for (require_stable), and another member's transactions always hold
   * some of its own.
   */
  committedOffsets(groupId: string, topic: string, partitions?: readonly number[]): Promise<Map<number, number>>;
  /** Earliest offset of each partition (where to start when nothing is committed). */
  beginningOffsets(topic: string): Promise<Map<number, number>>;
  /** The read_committed end (last stable offset) of each partition. */
  endOffsets(topic: string): Promise<Map<number, number>>;
  /**
   * The read_uncommitted end (high watermark) of each partition: past every record written,
   * those of transactions still open included. Where it is above endOffsets(), a transaction
   * holds the partition's stable end back.
   */
  highWatermarks(topic: string): Promise<Map<number, number>>;
  /** The consumer group's members as its coordinator describes them (join-warmup.ts); absent where the adapter cannot. */
  groupMembers?(groupId: string): Promise<GroupMembers>;
  /** Deletes the records of each partition before its offset (Kafka's DeleteRecords); absent where the adapter cannot. */
  deleteRecordsBefore?(topic: string, offsets: ReadonlyMap<number, number>): Promise<void>;
  close(): Promise<void>;
}

/** A consumer group as DescribeGroups shows it. */
export interface GroupMembers {
  /** The group's state: Stable, PreparingRebalance, CompletingRebalance, Empty, Dead. */
  readonly state: string;
  readonly members: ReadonlyArray<{
    readonly memberId: string;
    readonly clientId: string;
    /** The transactional id the member advertises in its client id (librdkafka), if any. */
    readonly transactionalId?: string;
  }>;
}

export interface ChangelogChunk {
  /** Committed data records only (control and aborted records filtered out). */
  readonly records: readonly InputRecord[];
  /** The offset to continue from (past any control records). */
  readonly nextOffset: number;
}

/** Reads a changelog partition outside the group (kafkajs has no assign(): docs/kafkajs-notes.md §4). */
export interface ChangelogReaderPort {
  /** Reads [from, end) under read_committed, chunk by chunk; resolves when nextOffset ≥ end. */
  read(tp: TopicPartition, from: number, end: number, onChunk: (chunk: ChangelogChunk) => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

/** Everything the runtime needs from Kafka, built by src/kafka/. */
export interface KafkaPorts {
  readonly consumer: GroupConsumerPort;
  readonly producers: ProducerFactoryPort;
  readonly admin: AdminPort;
  readonly changelogReader: ChangelogReaderPort;
  /**
   * Present when the adapter offers exactly-once v2 (one producer for the instance, KIP-447
   * fencing): the runtime then commits all tasks in one transaction and `producers` serves
   * at-least-once only. Absent: one transactional producer per task (kafkajs, no KIP-447).
   */
  readonly streamProducer?: StreamProducerPort;
  /** Which client the ports run on, for logs and metrics (`kafkajs`, `librdkafka`, `fake`). */
  readonly client?: string;
  close(): Promise<void>;
}
