/**
 * The application's group consumer on librdkafka (GroupConsumerPort).
 *
 * - Fetching and decoding happen on librdkafka's threads; `consume(n)` hands batches of up to
 *   `batchSize` records to JavaScript from libuv's pool, so the event loop only sees records
 *   ready to process (the kafkajs consumer decodes whole fetch responses on it).
 * - read_committed, no auto-commit: offsets go into the instance's transaction (exactly-once)
 *   or through commitOffsets() (at-least-once).
 * - Cooperative rebalancing (`cooperative-sticky`): a rebalance names what is revoked and what
 *   is added; partitions that stay keep their fetch position and their tasks keep running.
 *   librdkafka waits for the rebalance callback to call incrementalUnassign, so revoked
 *   partitions are given up only after onRevoked() resolved — after their tasks committed.
 * - Static membership (`group.instance.id`, KIP-345) when an instance id is given: a restart
 *   of the same instance takes its place in the group back without a rebalance and without
 *   waiting out the session of the member it replaces. A stop with `leaveGroup` takes the
 *   member out of the group at once instead (a scale-down).
 * - Partitions added by a rebalance are paused at once (before any record reaches a task that
 *   is still restoring); the task manager seeks and resumes them when their task is open.
 * - A seek wins over records fetched before it. librdkafka versions each partition's queue: a
 *   pause or seek purges it and drops every older message still queued, so only a consume()
 *   call already under way when seek() is called can carry old records — and, if it lasts,
 *   new ones after them. So seek() pauses the partition in librdkafka first (nothing new can
 *   be dequeued for it), seeks, drops what the call under way brings for it, and resumes it
 *   only once that call has returned (if the task manager wants it resumed): every record
 *   delivered afterwards is from the new position. A partition paused since its assignment has
 *   fetched nothing, so its first seek (a task's start) needs no such wait. Either way a resume
 *   waits for the seek itself to reach librdkafka (the binding seeks from libuv's pool).
 */
import type { KafkaConsumer, LibrdKafkaError, Message, TopicPartition as RdTopicPartition } from '@confluentinc/kafka-javascript';
import type { ConsumerHandlers, ConsumerStopOptions, GroupConsumerPort, Headers, InputRecord, TopicPartition, TopicPartitionOffset } from '../../processing/ports.js';
import { DEFAULT_HEARTBEAT_INTERVAL_MS, type GroupSettings } from '../group-settings.js';
import type { GroupDescription } from 'kafkajs';
import type { PartitionOwner } from '../../processing/ports.js';
import type { KafkaLogSink } from '../kafka-client.js';
import type { PreparedRemoval } from '../static-member-removal.js';
import { advertisingClientId, PartitionOwnerTracker, withTransactionalId } from '../partition-owner-tracker.js';
import { rdkafkaSecurity, type KafkaSecurity } from '../kafka-security.js';
import type { RdkafkaModule } from './native.js';
import { fromRdkafkaError, isFatalClientError } from './rdkafka-errors.js';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';

export interface RdkafkaGroupConsumerOptions extends GroupSettings {
  readonly brokers: readonly string[];
  readonly clientId: string;
  /** TLS and SASL (../kafka-security.ts); default plaintext. */
  readonly security?: KafkaSecurity;
  /** librdkafka properties over iqgate's own (the runtime's clientProperties.consumer). */
  readonly properties?: Readonly<Record<string, string | number | boolean>>;
  /** group.instance.id (static membership); absent: a dynamic member. */
  readonly groupInstanceId?: string;
  /**
   * Takes the static member with this instance id out of the group (static-member-removal.ts),
   * for stop({ leaveGroup: true }): librdkafka sends no LeaveGroup for a static member. Made
   * at prepareStop (it connects while the last commits run), else at the stop.
   */
  readonly prepareStaticMemberRemoval?: (groupInstanceId: string) => PreparedRemoval;
  /** Records per consume() call (default 500: turning them into JavaScript objects is one synchronous stretch). */
  readonly batchSize?: number;
  readonly log?: KafkaLogSink;
  /**
   * This instance's GraphQL URL for query routing: advertised in the consumer's client id
   * (../partition-owner-tracker.ts), and every member's partitions and URL learnt back through
   * `describeGroup` after each rebalance and every OWNERS_REFRESH_MS.
   */
  readonly advertisedUrl?: string;
  readonly describeGroup?: () => Promise<GroupDescription>;
  /**
   * Some sub-topology reads several topics whose partition p must go to one member: librdkafka's
   * `range` assignor does that for topics of equal partition counts (it lays every topic's
   * partitions over the same sorted members), and it is eager — every partition is revoked at
   * each rebalance, as on kafkajs. Default false: cooperative-sticky.
   */
  readonly coPartitioned?: boolean;
  readonly onOwnersError?: (error: unknown) => void;
  /**
   * The instance's transactional id (exactly-once v2; its instance id), advertised in the
   * client id before the URL, so that the others can fence it if this member leaves the group
   * without ending its transaction (../departed-member-fencer.ts), and so that this instance,
   * restarting, tells itself among the members (../../processing/join-warmup.ts).
   */
  readonly advertisedTransactionalId?: string;
  /** Every member's client id from each Stable description of the group (with advertisedUrl). */
  readonly onGroupMembers?: (clientIds: readonly string[]) => void;
}

/** A member whose assignment did not change gets no rebalance callback: refresh the map this often too. */
const OWNERS_REFRESH_MS = 5_000;

/** Methods the package has (lib/kafka-consumer.js) but its type declarations lack. */
interface CooperativeConsumer {
  incrementalAssign(partitions: RdTopicPartition[]): void;
  incrementalUnassign(partitions: RdTopicPartition[]): void;
  assignmentLost(): boolean;
}

/**
 * librdkafka checks whether a heartbeat is due only when its main thread wakes (rd_kafka_cgrp_serve
 * runs after each round of that thread's op queue, rdkafka.c), and a member with nothing else
 * going on wakes at its 2 Hz max.poll.interval.ms timer: a heartbeat went out up to 500 ms after it
 * was due, and a member learnt of a rebalance round that much later (at a join, the moved
 * partitions wait for the new member's heartbeat after their old owner gave them up). Any op on
 * the group's queue wakes the thread; the heartbeat clock sends one every heartbeat interval /
 * HEARTBEAT_TICKS_PER_INTERVAL: an asynchronous commit of no partitions (`commit([])`, never
 * `commit()`, which would mean the whole assignment). The main thread answers it _NO_OFFSET
 * before any request, posts no callback (no offset_commit_cb is set) and logs nothing
 * (rd_kafka_cgrp_offsets_commit; librdkafka's cgrp debug log shows "OffsetCommit for 0
 * partition(s) ... No offset stored" per tick and no OffsetCommit request). Not
 * rebalanceProtocol(), which also wakes it but waits for the answer on the JS thread: 0.1 ms at
 * the median, 17–25 ms at p99 and up to 73 ms on a consumer fetching 200 partitions, where
 * commit([]) returned in 1 ms at most (a call every 50 ms for 15 s, 2026-12-04).
 */
const HEARTBEAT_TICKS_PER_INTERVAL = 4;
const MIN_HEARTBEAT_TICK_MS = 20;

/** wakeFetchers counts the partitions it woke per topic over windows of this length (ms). */
const WAKE_WINDOW_MS = 100;

const ERR_ASSIGN = -175;
const ERR_REVOKE = -174;
/** rd_kafka_seek stopped waiting for the seek op's result (the op itself is queued). */
const SEEK_RESULT_TIMED_OUT = -185;
/** rd_kafka_seek refused: the partition's fetcher has not started yet (_STATE). */
const SEEK_FETCH_NOT_STARTED = -172;
/** How soon a seek refused with SEEK_FETCH_NOT_STARTED is tried again (ms). */
const SEEK_RETRY_MS = 10;
/** Client-side conditions that are not failures of a consume() call. */
const BENIGN = new Set([-185 /* _TIMED_OUT */, -191 /* _PARTITION_EOF */]);

export class RdkafkaGroupConsumer implements GroupConsumerPort {
  readonly cooperative = true;
  readonly staticMember: boolean;
  private readonly consumer: KafkaConsumer;
  private handlers: ConsumerHandlers | null = null;
  private running = false;
  private stopping = false;
  private stopped: Promise<void> | null = null;
  /** A static member's removal made ready by prepareStop. */
  private removal: PreparedRemoval | null = null;
  private readonly assigned = new Map<string, TopicPartition>();
  private consumeSeq = 0;
  /** Partitions the task manager paused. */
  private readonly paused = new Set<string>();
  /**
   * Partitions paused since their assignment and not resumed since: librdkafka has fetched
   * nothing of them, so no consume() call can carry their records and a seek needs no gate.
   */
  private readonly neverFetched = new Set<string>();
  /**
   * Seeks not yet handed to librdkafka, by partition: the binding calls rd_kafka_seek from
   * libuv's pool, while pause and resume are synchronous, so a partition resumes only once its
   * seeks have called back (after that, librdkafka's op queue keeps seek before resume).
   */
  private readonly seeking = new Map<string, number>();
  /** Each partition's latest seek while any of its seeks is under way (seekNative retries only it). */
  private readonly lastSeek = new Map<string, TopicPartitionOffset>();
  /** Wake-ups sent per topic since `at` (wakeFetchers). */
  private wakeWindow: { at: number; counts: Map<string, number> } = { at: 0, counts: new Map() };
  /**
   * The last rebalance callback, until a partition that was flowing before it delivers again
   * (librdkafka discards every assigned partition's prefetched records while a callback is
   * pending): the debug log `rebalance: retained partitions flow again` says how long that took.
   */
  private rebalanceProbe: { readonly kind: 'assign' | 'revoke'; readonly at: number; resumedAt: number; readonly retained: ReadonlySet<string> } | null = null;
  /** Partitions held paused after a seek until consume() call number `gate` has returned. */
  private readonly seekGates = new Map<string, { readonly tp: TopicPartition; readonly gate: number }>();
  /** The last error reported through onReconnecting, cleared once records flow again. */
  private reconnecting = false;
  /** Who hosts what, with advertisedUrl (routing); null without. */
  private readonly owners: PartitionOwnerTracker | null = null;
  private ownersTimer: NodeJS.Timeout | null = null;
  /** Wakes librdkafka's main thread so that heartbeats go out on time (HEARTBEAT_TICKS_PER_INTERVAL). */
  private heartbeatClock: NodeJS.Timeout | null = null;
  private loopDone: Promise<void> = Promise.resolve();
  /** The connect of run(), while it may still be under way: a stop waits for it, then disconnects. */
  private connecting: Promise<void> | null = null;

  constructor(rd: RdkafkaModule, private readonly options: RdkafkaGroupConsumerOptions) {
    this.staticMember = options.groupInstanceId !== undefined;
    if (options.advertisedUrl !== undefined && options.describeGroup !== undefined) {
      this.owners = new PartitionOwnerTracker({
        describe: options.describeGroup,
        ...(options.onOwnersError === undefined ? {} : { onError: options.onOwnersError }),
        ...(options.onGroupMembers === undefined ? {} : { onMembers: options.onGroupMembers }),
      });
    }
    this.consumer = new rd.KafkaConsumer({
      'bootstrap.servers': options.brokers.join(','),
      'client.id': clientIdOf(options),
      ...rdkafkaSecurity(options.security),
      'group.id': options.groupId,
      ...(options.groupInstanceId === undefined ? {} : { 'group.instance.id': options.groupInstanceId }),
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'isolation.level': 'read_committed',
      'partition.assignment.strategy': options.coPartitioned === true ? 'range' : 'cooperative-sticky',
      'session.timeout.ms': options.sessionTimeoutMs ?? 30_000,
      'heartbeat.interval.ms': options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS,
      'max.poll.interval.ms': Math.max(options.rebalanceTimeoutMs ?? 60_000, (options.sessionTimeoutMs ?? 30_000) + 1),
      'fetch.wait.max.ms': options.maxWaitTimeMs ?? 200,
      'max.partition.fetch.bytes': options.maxBytesPerPartition ?? 1_048_576,
      'fetch.max.bytes': options.maxBytes ?? 52_428_800,
      'allow.auto.create.topics': false,
      rebalance_cb: (err: LibrdKafkaError, assignment: RdTopicPartition[]) => this.onRebalance(err, assignment),
      ...options.properties,
    }, { 'auto.offset.reset': 'earliest' });
    this.consumer.setDefaultConsumeTimeout(options.maxWaitTimeMs ?? 200);
    // Wait up to that long for the first record only, then take what is ready: otherwise
    // consume(n) waits up to the timeout for EACH of its n records, and a trickle of records
    // (one every few ms) is held back for seconds before JavaScript sees any (soak finding:
    // 4.5–6.8 s gaps between the counting tasks' commits at 60 lines/s).
    (this.consumer as unknown as { setDefaultIsTimeoutOnlyForFirstMessage(only: boolean): void }).setDefaultIsTimeoutOnlyForFirstMessage(true);
    this.consumer.on('event.error', (err) => this.onClientError(err));
    // The binding emits 'error' when an OAUTHBEARER token callback fails (after telling
    // librdkafka, which asks again): with no listener, that is an uncaught error that ends the process.
    (this.consumer as unknown as NodeJS.EventEmitter).on('error', (err: unknown) => options.log?.warn({ err }, 'OAUTHBEARER token refresh failed (librdkafka asks again)'));
  }

  /** The librdkafka consumer, for the producer's offset commits (its group metadata: KIP-447). */
  native(): KafkaConsumer {
    return this.consumer;
  }

  async run(handlers: ConsumerHandlers): Promise<void> {
    this.handlers = handlers;
    if (this.owners !== null) {
      const owners = this.owners;
      this.ownersTimer = setInterval(() => owners.refresh(), OWNERS_REFRESH_MS);
      this.ownersTimer.unref();
    }
    const context = `consumer of group ${this.options.groupId}`;
    this.connecting = new Promise<void>((resolve, reject) => {
      // allTopics false: connect() fetches metadata to check the connection, by default of every
      // topic in the cluster (216 topics, 1,246 partitions on the shared test broker); brokers only
      // will do — the subscription fetches its own topics' metadata.
      this.consumer.connect({ timeout: 10_000, allTopics: false }, (err) => (err ? reject(fromRdkafkaError(err, context)) : resolve()));
    });
    await this.connecting;
    // Stopped while connecting: close() waited for the connect and disconnects; subscribing now
    // would bring the consumer up after its stop, its loop running for ever (audit, 2026-12-06).
    if (this.stopping) return;
    try {
      this.consumer.subscribe([...this.options.topics]);
    } catch (error) {
      throw fromRdkafkaError(error, context);
    }
    this.running = true;
    this.startHeartbeatClock();
    this.loopDone = new Promise<void>((resolve) => this.consumeNext(resolve));
  }

  private startHeartbeatClock(): void {
    const interval = this.options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS;
    const tick = Math.max(MIN_HEARTBEAT_TICK_MS, Math.floor(interval / HEARTBEAT_TICKS_PER_INTERVAL));
    this.heartbeatClock = setInterval(() => {
      try {
        this.consumer.commit([]);
      } catch {
        // Only a wake-up: the heartbeat goes out at the thread's next timer anyway.
      }
    }, tick);
    this.heartbeatClock.unref();
  }

  private consumeNext(done: () => void): void {
    if (!this.running) {
      done();
      return;
    }
    if (this.handlers?.readyForMore?.() === false) {
      // The tasks have enough to do: librdkafka keeps prefetching (bounded by its queue
      // settings) while we wait, and nothing is dropped.
      setTimeout(() => this.consumeNext(done), 2);
      return;
    }
    const seq = ++this.consumeSeq;
    const limit = Math.max(1, Math.min(this.options.batchSize ?? 500, this.handlers?.maxRecordsPerFetch?.() ?? Infinity));
    this.consumer.consume(limit, (err, messages) => {
      if (err && !BENIGN.has(err.code)) this.onClientError(err);
      else if (messages !== undefined && messages.length > 0) this.deliver(seq, messages);
      if (this.seekGates.size > 0) this.openGates(seq);
      // Back on the event loop between batches: timers, I/O and queries run before the next one.
      setImmediate(() => this.consumeNext(done));
    });
  }

  private deliver(seq: number, messages: readonly Message[]): void {
    const handlers = this.handlers;
    if (handlers === null || this.stopping) return;
    if (this.reconnecting) {
      this.reconnecting = false;
      handlers.onReconnected?.();
    }
    let start = 0;
    while (start < messages.length) {
      const first = messages[start]!;
      let end = start + 1;
      while (end < messages.length && messages[end]!.partition === first.partition && messages[end]!.topic === first.topic) end += 1;
      const k = key(first.topic, first.partition);
      if (this.rebalanceProbe?.retained.has(k) === true) this.probeAnswered();
      const gate = this.seekGates.get(k);
      if (this.assigned.has(k) && (gate === undefined || seq > gate.gate)) {
        const records: InputRecord[] = new Array<InputRecord>(end - start);
        // One topic string for the run: the binding makes one per message, and the task compares
        // each record's topic with the last one's (StreamTask.sourcesOf), by pointer when shared.
        for (let i = start; i < end; i += 1) records[i - start] = toInputRecord(messages[i]!, first.topic);
        // Refused (the task is not running): the fetch position goes back to the batch's first
        // record, as the port promises — librdkafka's position has already moved past it.
        if (!handlers.onBatch({ topic: first.topic, partition: first.partition }, records)) this.seek({ topic: first.topic, partition: first.partition, offset: first.offset });
      }
      start = end;
    }
  }

  private probeAnswered(): void {
    const probe = this.rebalanceProbe;
    if (probe === null) return;
    this.rebalanceProbe = null;
    const now = performance.now();
    this.options.log?.debug({
      rebalance: probe.kind,
      retained: probe.retained.size,
      sinceCallbackMs: Math.round(now - probe.at),
      sinceResumeMs: probe.resumedAt === 0 ? null : Math.round(now - probe.resumedAt),
    }, 'rebalance: retained partitions flow again');
  }

  /** Call `seq` returned: partitions sought while it was under way may flow again. */
  private openGates(seq: number): void {
    const resume: TopicPartition[] = [];
    for (const [k, { tp, gate }] of this.seekGates) {
      if (gate > seq) continue;
      this.seekGates.delete(k);
      if (this.wantsFlowing(k)) resume.push(tp);
    }
    if (resume.length > 0) this.nativeResume(resume);
  }

  /** Every member's partitions and URL, for routing (empty without advertisedUrl). */
  partitionOwners(): readonly PartitionOwner[] {
    return this.owners?.current() ?? [];
  }

  private onRebalance(err: LibrdKafkaError, assignment: RdTopicPartition[]): void {
    // The group's map changes with any rebalance: learn it again, in the background.
    if (!this.stopping) this.owners?.refresh();
    const partitions = assignment.map((tp) => ({ topic: tp.topic, partition: tp.partition }));
    // What flows now: an assignment adds none of it, a revocation may take some of it away.
    const flowing = this.flowing();
    if (err.code === ERR_ASSIGN || err.code === ERR_REVOKE) {
      const retained = new Set(flowing.map((tp) => key(tp.topic, tp.partition)));
      for (const tp of partitions) retained.delete(key(tp.topic, tp.partition));
      this.rebalanceProbe = { kind: err.code === ERR_ASSIGN ? 'assign' : 'revoke', at: performance.now(), resumedAt: 0, retained };
    }
    if (err.code === ERR_ASSIGN) {
      let pausedNatively = false;
      try {
        if (this.options.coPartitioned === true) this.consumer.assign(partitions);
        else (this.consumer as unknown as CooperativeConsumer).incrementalAssign(partitions);
        if (partitions.length > 0) this.consumer.pause(partitions);
        pausedNatively = true;
      } catch (error) {
        this.options.log?.warn({ err: error }, 'librdkafka: incremental assign failed');
      }
      for (const tp of partitions) {
        this.assigned.set(key(tp.topic, tp.partition), tp);
        // Only what librdkafka did pause: the task manager's pause() of a new task tries again otherwise.
        if (pausedNatively) this.paused.add(key(tp.topic, tp.partition));
        this.neverFetched.add(key(tp.topic, tp.partition));
      }
      // librdkafka paused every assigned partition while this callback was pending and resumed
      // them in incrementalAssign; the retained ones need the wake-up of any resume.
      if (this.rebalanceProbe !== null) this.rebalanceProbe.resumedAt = performance.now();
      this.wakeFetchers(flowing);
      if (!this.stopping) this.handlers?.onAssignment([...this.assigned.values()]);
      return;
    }
    if (err.code === ERR_REVOKE) {
      const lost = (this.consumer as unknown as CooperativeConsumer).assignmentLost();
      const finish = (): void => {
        for (const tp of partitions) {
          this.assigned.delete(key(tp.topic, tp.partition));
          this.paused.delete(key(tp.topic, tp.partition));
          this.seekGates.delete(key(tp.topic, tp.partition));
          this.neverFetched.delete(key(tp.topic, tp.partition));
        }
        try {
          if (this.options.coPartitioned === true) this.consumer.unassign();
          else (this.consumer as unknown as CooperativeConsumer).incrementalUnassign(partitions);
        } catch (error) {
          this.options.log?.debug({ err: error }, 'librdkafka: incremental unassign failed (closing)');
          return;
        }
        // From the revoke callback until this call librdkafka held back the fetches of every
        // assigned partition ("Pausing fetchers … incremental rebalance"), the retained ones too,
        // and incrementalUnassign resumed them the way a resume does, waking no broker thread:
        // bench:scale (200 partitions) saw the retained partitions' first records 0.8 s after
        // the unassign, on top of the revoked tasks' last commit.
        if (this.rebalanceProbe !== null) this.rebalanceProbe.resumedAt = performance.now();
        if (!this.stopping) this.wakeFetchers(this.flowing());
      };
      const onRevoked = this.handlers?.onRevoked;
      if (this.stopping || onRevoked === undefined || partitions.length === 0) {
        finish();
        return;
      }
      onRevoked(partitions, lost).then(finish, (error: unknown) => {
        this.options.log?.warn({ err: error }, 'revoking partitions failed; giving them up');
        finish();
      });
      return;
    }
    this.options.log?.warn({ err }, 'librdkafka: rebalance error');
  }

  private onClientError(err: LibrdKafkaError): void {
    const error = fromRdkafkaError(err, `consumer of group ${this.options.groupId}`);
    if (this.stopping) return;
    // Not `err.isFatal` alone: the binding sets it on neither consume() errors nor client events.
    if (isFatalClientError(err)) {
      this.handlers?.onCrash(error);
      return;
    }
    // librdkafka reconnects by itself; say so once, until records flow again.
    if (!this.reconnecting) {
      this.reconnecting = true;
      this.handlers?.onReconnecting?.(error);
    }
  }

  pause(partitions: readonly TopicPartition[]): void {
    // A partition in `paused` is paused in librdkafka already (nothing resumes it while it is
    // there): a rebalance pauses what it adds at once, in one call, and the task manager's pause
    // of each new task's partitions that follows would otherwise cross into the binding once per
    // task — 500 calls, the longest stretch of the event loop (~60 ms) when a leave handed 500.
    const fresh = partitions.filter((tp) => {
      const k = key(tp.topic, tp.partition);
      return this.assigned.has(k) && !this.paused.has(k);
    });
    for (const tp of fresh) this.paused.add(key(tp.topic, tp.partition));
    if (fresh.length > 0) this.nativePause(fresh);
  }

  resume(partitions: readonly TopicPartition[]): void {
    const mine = partitions.filter((tp) => this.assigned.has(key(tp.topic, tp.partition)));
    for (const tp of mine) this.paused.delete(key(tp.topic, tp.partition));
    // A partition behind a seek gate, or with a seek not yet in librdkafka, resumes when that ends.
    const now = mine.filter((tp) => this.wantsFlowing(key(tp.topic, tp.partition)));
    if (now.length > 0) this.nativeResume(now);
  }

  seek(position: TopicPartitionOffset): void {
    const k = key(position.topic, position.partition);
    const tp = this.assigned.get(k);
    if (tp === undefined) return;
    this.nativePause([tp]);
    // A task's first seek, on a partition paused since its assignment, needs no gate: nothing of
    // it can be under way. Waiting for the call under way — at start-up a call waiting up to
    // fetch.wait.max.ms on an empty queue — held every task's first batch back ~190 ms.
    if (!this.neverFetched.has(k)) this.seekGates.set(k, { tp, gate: this.consumeSeq });
    this.seeking.set(k, (this.seeking.get(k) ?? 0) + 1);
    this.lastSeek.set(k, position);
    this.seekNative(k, tp, position);
  }

  /** One rd_kafka_seek for seek(); the partition stays paused until it has applied. */
  private seekNative(k: string, tp: TopicPartition, position: TopicPartitionOffset): void {
    this.consumer.seek({ topic: position.topic, partition: position.partition, offset: position.offset }, 0, (err) => {
      // An incremental assignment starts a partition's fetcher only once the group coordinator
      // answered its committed offset (OffsetFetch); a seek before that meets a fetcher not
      // started and is refused (_STATE, rd_kafka_toppar_seek), and the partition would then start
      // at the committed offset instead of the task's. Seen for a warm task that opens within
      // milliseconds of its assignment. The partition is still paused: seek again shortly.
      // Only the partition's latest seek is tried again: a later one must not be undone.
      if (err?.code === SEEK_FETCH_NOT_STARTED && this.stillWanted(k, tp, position)) {
        this.options.log?.debug({ ...position }, 'librdkafka: seek before the fetcher started, seeking again');
        setTimeout(() => {
          if (this.stillWanted(k, tp, position)) this.seekNative(k, tp, position);
          else this.seekSettled(k, tp);
        }, SEEK_RETRY_MS).unref();
        return;
      }
      this.seekSettled(k, tp);
      if (!err || err.code === SEEK_FETCH_NOT_STARTED) return;
      // The binding waits at least 10 ms for the seek's result (it raises 0, which would make
      // rd_kafka_seek asynchronous); past that, librdkafka answers _TIMED_OUT while the seek op
      // stays queued for the partition and applies. Seen a few times per bench:scale run on the
      // loaded machine, counted there as warnings.
      if (err.code === SEEK_RESULT_TIMED_OUT) this.options.log?.debug({ err, ...position }, 'librdkafka: seek queued, its result not awaited');
      else this.options.log?.warn({ err, ...position }, 'librdkafka: seek failed');
    });
  }

  private stillWanted(k: string, tp: TopicPartition, position: TopicPartitionOffset): boolean {
    return !this.stopping && this.assigned.get(k) === tp && this.lastSeek.get(k) === position;
  }

  /** One seek of the partition has ended; it flows again once none is left. */
  private seekSettled(k: string, tp: TopicPartition): void {
    const left = (this.seeking.get(k) ?? 1) - 1;
    if (left > 0) {
      this.seeking.set(k, left);
      return;
    }
    this.seeking.delete(k);
    this.lastSeek.delete(k);
    if (this.wantsFlowing(k)) this.nativeResume([tp]);
  }

  private nativePause(partitions: readonly TopicPartition[]): void {
    try {
      this.consumer.pause(partitions.map((tp) => ({ topic: tp.topic, partition: tp.partition })));
    } catch (error) {
      this.options.log?.debug({ err: error }, 'librdkafka: pause failed');
    }
  }

  private nativeResume(partitions: readonly TopicPartition[]): void {
    for (const tp of partitions) this.neverFetched.delete(key(tp.topic, tp.partition));
    try {
      this.consumer.resume(partitions.map((tp) => ({ topic: tp.topic, partition: tp.partition })));
    } catch (error) {
      this.options.log?.debug({ err: error }, 'librdkafka: resume failed');
      return;
    }
    this.wakeFetchers(partitions, true);
  }

  /**
   * A resumed partition is only fetched once its leader's broker thread next looks at its
   * partitions, and a broker thread with nothing to fetch sleeps until an op, I/O or its 1 s
   * serve timeout (librdkafka 2.15 rdkafka_broker.c, consumer serve loop: a resume is handled on
   * the main thread and wakes no broker thread). Measured: every task start, and every seek
   * (which pauses and resumes), waited ~920 ms for its first fetch. A watermark query is a
   * request to the partition's leader, so it wakes that broker thread at once. Sent for the
   * first resumed partition of each topic and every 8th after it within WAKE_WINDOW_MS, not
   * for all: one request wakes a broker thread for all its partitions, and a partition whose
   * leader gets none still starts within the 1 s, as before.
   */
  private wakeFetchers(partitions: readonly TopicPartition[], windowed = false): void {
    // Resumes (`windowed`) are counted per topic over a short window, not per call: tasks resume
    // one partition at a time as they start (each after its own seek), and a query per
    // partition — 1000 of them on libuv's pool, each waiting for the broker — held back the task
    // openings queued behind. A rebalance's wake-up is counted on its own: librdkafka held every
    // partition back until then, so an earlier wake-up says nothing about the thread now.
    if (windowed && Date.now() - this.wakeWindow.at > WAKE_WINDOW_MS) this.wakeWindow = { at: Date.now(), counts: new Map() };
    const counts = windowed ? this.wakeWindow.counts : new Map<string, number>();
    for (const tp of partitions) {
      const n = counts.get(tp.topic) ?? 0;
      counts.set(tp.topic, n + 1);
      if (n % 8 !== 0) continue;
      try {
        this.consumer.queryWatermarkOffsets(tp.topic, tp.partition, 5_000, () => {});
      } catch {
        // Only a wake-up: the fetch starts at the broker thread's next round anyway.
      }
    }
  }

  /** Assigned, not paused by the task manager, and held by no seek: the partition may be resumed in librdkafka. */
  private wantsFlowing(k: string): boolean {
    return this.assigned.has(k) && !this.paused.has(k) && !this.seekGates.has(k) && !this.seeking.has(k);
  }

  /** Assigned partitions the task manager has not paused. */
  private flowing(): TopicPartition[] {
    return [...this.assigned].filter(([k]) => !this.paused.has(k)).map(([, tp]) => tp);
  }

  /** Connected to the cluster (run() has been called and not stopped). */
  connected(): boolean {
    return this.consumer.isConnected();
  }

  /** The group's committed offsets for these partitions, read with require_stable (KIP-447: pending transactional offsets wait). */
  committed(partitions: readonly TopicPartition[], timeoutMs = 10_000): Promise<Map<string, number>> {
    return new Promise((resolve, reject) => {
      this.consumer.committed(partitions.map((tp) => ({ topic: tp.topic, partition: tp.partition })), timeoutMs, (err, offsets) => {
        if (err) {
          reject(fromRdkafkaError(err, `committed offsets of group ${this.options.groupId}`));
          return;
        }
        const result = new Map<string, number>();
        for (const o of offsets) if (typeof o.offset === 'number' && o.offset >= 0) result.set(key(o.topic, o.partition), o.offset);
        resolve(result);
      });
    });
  }

  async commitOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    if (offsets.length === 0) return;
    try {
      this.consumer.commitSync(offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset })));
    } catch (error) {
      throw fromRdkafkaError(error, 'commit offsets');
    }
  }

  prepareStop(options: ConsumerStopOptions): void {
    this.removal ??= this.staticRemoval(options);
  }

  private staticRemoval(options: ConsumerStopOptions): PreparedRemoval | null {
    const instanceId = this.options.groupInstanceId;
    if (options.leaveGroup !== true || instanceId === undefined || this.options.prepareStaticMemberRemoval === undefined) return null;
    return this.options.prepareStaticMemberRemoval(instanceId);
  }

  /** The first call decides whether a static member leaves; later calls wait for its stop. */
  stop(options: ConsumerStopOptions = {}): Promise<void> {
    this.stopped ??= this.close(options);
    return this.stopped;
  }

  private async close(options: ConsumerStopOptions): Promise<void> {
    this.stopping = true;
    this.running = false;
    if (this.ownersTimer !== null) clearInterval(this.ownersTimer);
    if (this.heartbeatClock !== null) clearInterval(this.heartbeatClock);
    this.owners?.stop();
    const started = Date.now();
    await this.connecting?.catch(() => undefined);
    await this.loopDone;
    await new Promise<void>((resolve) => {
      if (!this.consumer.isConnected()) {
        resolve();
        return;
      }
      this.consumer.disconnect(() => resolve());
    });
    const closed = Date.now();
    // Only once closed: a member that still heartbeats would join the group again. A removal
    // prepared for a stop that then came without leaveGroup is dropped (it only connected).
    const removal = this.removal ?? this.staticRemoval(options);
    if (options.leaveGroup === true) await removal?.remove();
    else await removal?.discard();
    this.options.log?.info({ closeMs: closed - started, leaveMs: Date.now() - closed }, 'librdkafka: consumer closed');
  }
}

/** The consumer's client id, with the transactional id and the URL it advertises (partition-owner-tracker.ts). */
function clientIdOf(options: RdkafkaGroupConsumerOptions): string {
  const base = options.advertisedTransactionalId === undefined ? options.clientId : withTransactionalId(options.clientId, options.advertisedTransactionalId);
  return options.advertisedUrl === undefined ? base : advertisingClientId(base, options.advertisedUrl);
}

function key(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

function toInputRecord(message: Message, topic: string): InputRecord {
  let headers: Headers = NO_HEADERS;
  if (message.headers !== undefined && message.headers.length > 0) {
    const h: Record<string, string> = {};
    for (const header of message.headers) {
      for (const [name, value] of Object.entries(header)) if (!(name in h)) h[name] = value.toString();
    }
    headers = h;
  }
  return {
    topic,
    partition: message.partition,
    offset: message.offset,
    key: message.key === undefined || message.key === null ? null : typeof message.key === 'string' ? Buffer.from(message.key) : message.key,
    value: message.value ?? null,
    timestamp: message.timestamp ?? 0,
    headers,
  };
}

const NO_HEADERS: Headers = Object.freeze({});
