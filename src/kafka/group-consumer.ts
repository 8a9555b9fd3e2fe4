/**
 * The application's group consumer on kafkajs (GroupConsumerPort).
 *
 * - read_committed, autoCommit off, eachBatchAutoResolve off: offsets are resolved by hand once
 *   the task manager has taken a batch (docs/kafkajs-notes.md §2: without resolveOffset the same records
 *   are re-fetched forever, #1665). Resolving `batch.lastOffset()` also moves past a trailing
 *   commit marker, which kafkajs filters out of `messages` (#403).
 * - Stale batches (a seek is pending for the partition) are dropped unresolved: a seek made in
 *   the assignment callback must win over batches fetched before it.
 * - The assignment is learned from GROUP_JOIN (the full assignment, synchronous listener, before
 *   the next fetch: docs/kafkajs-notes.md §1 "Hooks"); REBALANCING is the only early warning.
 * - maxWaitTimeInMs is short: while every partition is paused, kafkajs sleeps that long per
 *   fetch, and long polls are awaited before a rejoin (docs/kafkajs-notes.md §1 caveat b).
 * - A broker that goes away: once its retries are spent kafkajs "crashes" the consumer, drops
 *   its ConsumerGroup (pause/resume/seek then throw "Consumer group was not initialized") and,
 *   the error being retriable, restarts it as a new member (docs/kafkajs-notes.md §1 "Crash and
 *   restart"), again and again until the broker answers. Between the crash and the next join
 *   pause/resume/seek are no-ops: the new member starts with no paused partitions and no
 *   seeks, and the next GROUP_JOIN hands the task manager the assignment to pause and seek
 *   afresh, exactly as after any rebalance.
 * - A lost session: kafkajs has no client-side session check, so SessionWatchdog
 *   (session-watchdog.ts) keeps one from its successful heartbeats and joins. When the session
 *   has run out in a stable group, or a join comes back with a new member id, the assignment is
 *   reported lost (onRevoked with `lost`, as librdkafka's own check does) and its partitions are
 *   paused: kafkajs cannot give them up until it rejoins, and what it still fetches of them is
 *   not taken (the lost tasks take no records).
 * - A restart after a crash: the member the crashed run left would hold up the next rebalance
 *   until its session expires (kafkajs has no static membership). Given its id
 *   (`previousMemberId`, recorded by the runtime in the state directory), the consumer sends
 *   LeaveGroup for it before joining.
 */
import type { Cluster, Consumer, Kafka, KafkaMessage } from 'kafkajs';
import type { ConsumerHandlers, GroupConsumerPort, InputRecord, PartitionOwner, TopicPartition, TopicPartitionOffset } from '../processing/ports.js';
import { DEFAULT_HEARTBEAT_INTERVAL_MS, type GroupSettings } from './group-settings.js';
import { toIqgateError } from './kafka-errors.js';
import { setFetchSizeHint } from './kafkajs-patches/fetch-size.js';
import { onJoinStart } from './kafkajs-patches/rebalance-heartbeat.js';
import { PartitionOwnerTracker } from './partition-owner-tracker.js';
import { SessionWatchdog } from './session-watchdog.js';
import { taskAssigner } from './task-assigner.js';

export interface GroupConsumerOptions extends GroupSettings {
  /** Source topics of each sub-topology, for the task-aware assigner. */
  readonly taskGroups: ReadonlyArray<readonly string[]>;
  /** This member's GraphQL URL, advertised in its group metadata (absent: none). */
  readonly advertisedUrl?: string;
  /** Sees failures of the background partition-owner refresh (describeGroup). */
  readonly onOwnersError?: (error: unknown) => void;
  /**
   * The member id this application instance had before it stopped (persisted by the caller from
   * onMemberId). It is removed from the group before this consumer joins: a crashed instance's
   * member would otherwise hold up the next rebalance until its session times out.
   */
  readonly previousMemberId?: string;
  /** Every member id this consumer joins with (to persist for previousMemberId). */
  readonly onMemberId?: (memberId: string) => void;
  /** The outcome of removing previousMemberId: removed, or why not (e.g. it had left already). */
  readonly onPreviousMemberRemoved?: (outcome: { readonly memberId: string; readonly removed: boolean; readonly error?: unknown }) => void;
}

/**
 * The fetch sizes while gateway requests wait (ConsumerHandlers.maxRecordsPerFetch is finite):
 * kafkajs decodes a whole response on the event loop in one stretch (kafkajs patch 10,
 * fetch-size.ts), and 2 MB took up to 15 ms of it in bench:query:busy. Measured there (kafkajs,
 * 1.5M lines, one run each; busy ÷ idle q/s, then p99): the configured 2 MB / 256 KB per
 * partition 0.33 / 4.53 (0.38 / 3.41 with the wait in eachBatch); 256 KB / 64 KB 0.42 / 2.66
 * (no wait); with the wait, 128 KB / 32 KB 0.46–0.48 / 1.72–1.95 and 64 KB / 16 KB 0.50 / 2.14,
 * the best busy q/s and p99 of all (6,135 q/s, 10.1 ms). Only while requests wait: otherwise
 * fetches keep the configured sizes (and a configured size below these stays).
 *
 * A cap, not a promise: a broker sends the first partition's next producer batch whole even when
 * it is larger, and gives a later partition whose next batch does not fit nothing in that
 * response. With large producer batches a fetch then brings one partition's batch (kafkajs
 * shuffles the partitions of each request at random, so each comes first now and then): fewer
 * records per fetch, and a stretch as long as that batch takes to decode.
 */
const SHARED_FETCH_SIZES = { maxBytes: 65_536, maxBytesPerPartition: 16_384 } as const;

/** The longest eachBatch waits for readyForMore(): kafkajs heartbeats only between batches. */
const READY_WAIT_MAX_MS = 20;

/**
 * Waits (at most READY_WAIT_MAX_MS) until the tasks take records again: the pacer of gateway
 * requests rests (src/runtime/query-share.ts). kafkajs fetches again only once a fetch's batches
 * are handled, so this also holds its next fetch, whose decoding is processing work too.
 */
async function whileNotReady(handlers: ConsumerHandlers, current: () => boolean): Promise<void> {
  const until = Date.now() + READY_WAIT_MAX_MS;
  while (handlers.readyForMore?.() === false && current() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 1));
}

export function toInputRecord(topic: string, partition: number, message: KafkaMessage): InputRecord {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    if (value === undefined) continue;
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) headers[name] = first.toString();
  }
  return {
    topic,
    partition,
    offset: Number(message.offset),
    key: message.key ?? null,
    value: message.value ?? null,
    timestamp: Number(message.timestamp),
    headers,
  };
}

export class KafkaGroupConsumer implements GroupConsumerPort {
  private readonly consumer: Consumer;
  private stopped = false;
  /** A member of the group: from a GROUP_JOIN until kafkajs stops its ConsumerGroup (crash or stop). */
  private joined = false;
  private readonly owners: PartitionOwnerTracker;
  private cluster: Cluster | undefined;
  /** The session check while run() runs and the handlers can hear of a loss (onRevoked). */
  private watchdog: SessionWatchdog | null = null;

  constructor(kafka: Kafka, private readonly options: GroupConsumerOptions) {
    this.consumer = kafka.consumer({
      groupId: options.groupId,
      readUncommitted: false,
      partitionAssigners: [(config) => {
        // kafkajs hands the assigner factory this consumer's Cluster: the only way to reach it.
        this.cluster = config.cluster;
        return taskAssigner(options.taskGroups, options.advertisedUrl === undefined ? {} : { url: options.advertisedUrl })(config);
      }],
      sessionTimeout: options.sessionTimeoutMs ?? 30_000,
      heartbeatInterval: options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS,
      rebalanceTimeout: options.rebalanceTimeoutMs ?? 60_000,
      maxWaitTimeInMs: options.maxWaitTimeMs ?? 200,
      // Small fetches: kafkajs decodes a whole response synchronously, and an 8 MB response holds
      // the event loop (commits, queries, heartbeats) for 100 ms or more on this hardware.
      maxBytesPerPartition: options.maxBytesPerPartition ?? 262_144,
      maxBytes: options.maxBytes ?? 2_097_152,
      allowAutoTopicCreation: false,
      retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 10_000 },
    });
    this.owners = new PartitionOwnerTracker({
      describe: () => this.consumer.describeGroup(),
      ...(options.onOwnersError === undefined ? {} : { onError: options.onOwnersError }),
    });
  }

  partitionOwners(): readonly PartitionOwner[] {
    return this.owners.current();
  }

  async run(handlers: ConsumerHandlers): Promise<void> {
    const c = this.consumer;
    // While gateway requests wait (a finite hint), fetch small: kafkajs decodes a response in one stretch.
    const shared = {
      maxBytes: Math.min(SHARED_FETCH_SIZES.maxBytes, this.options.maxBytes ?? Infinity),
      maxBytesPerPartition: Math.min(SHARED_FETCH_SIZES.maxBytesPerPartition, this.options.maxBytesPerPartition ?? Infinity),
    };
    if (this.cluster !== undefined) setFetchSizeHint(this.cluster, () => (Number.isFinite(handlers.maxRecordsPerFetch?.()) ? shared : undefined));
    const onRevoked = handlers.onRevoked?.bind(handlers);
    const watchdog = onRevoked === undefined || this.stopped ? null : new SessionWatchdog({
      sessionTimeoutMs: this.options.sessionTimeoutMs ?? 30_000,
      onLost: (assignment) => {
        // Paused, they are given up as far as kafkajs allows until it rejoins: it fetches them no more.
        this.pause(assignment);
        // Nothing waits for it (kafkajs gives nothing up); TaskAssignment.revoke does not reject.
        onRevoked(assignment, true).catch(() => undefined);
      },
      // Still this member's, under the same generation: the lost tasks re-open from what is committed.
      onRegained: (assignment) => handlers.onAssignment(assignment),
    });
    this.watchdog = watchdog;
    // Every join, REBALANCING or not (kafkajs rejoins silently on leader errors: docs/kafkajs-notes.md
    // §1 caveat c): a member busy joining is held by the rebalance timeout, not its session.
    if (watchdog !== null && this.cluster !== undefined) onJoinStart(this.cluster, () => watchdog.rebalancing());
    c.on(c.events.GROUP_JOIN, (event) => {
      this.options.onMemberId?.(event.payload.memberId);
      const assignment: TopicPartition[] = [];
      for (const [topic, partitions] of Object.entries(event.payload.memberAssignment)) {
        for (const partition of partitions) assignment.push({ topic, partition });
      }
      this.joined = true;
      // Before the new assignment: a join under a new member id loses what the last one held.
      watchdog?.joined(assignment, event.payload.memberId);
      handlers.onAssignment(assignment);
      // The group's map needs describeGroup (I/O): in the background, not in this listener.
      // Only members that advertise a URL take part in routing (without one nothing changes).
      if (this.options.advertisedUrl !== undefined) this.owners.refresh();
    });
    c.on(c.events.HEARTBEAT, () => watchdog?.heartbeat());
    c.on(c.events.REBALANCING, () => {
      watchdog?.rebalancing();
      handlers.onRebalancing();
    });
    // Emitted right after kafkajs drops its ConsumerGroup (`consumer/index.js` stop()).
    c.on(c.events.STOP, () => {
      this.joined = false;
    });
    c.on(c.events.CRASH, (event) => {
      if (this.stopped) return;
      // A restart rejoins as a new member: the watchdog goes on, the old member's session runs out meanwhile.
      if (event.payload.restart) handlers.onReconnecting?.(toIqgateError(event.payload.error, `consumer of group ${this.options.groupId}`));
      else {
        watchdog?.stop();
        handlers.onCrash(event.payload.error);
      }
    });
    try {
      await c.connect();
      // Stopped while connecting: a subscribe and run now would bring the consumer up after
      // its stop (kafkajs runs a consumer disconnected before it ran), and the process would not end.
      if (this.stopped) return;
      if (this.options.previousMemberId !== undefined) await this.removePreviousMember(this.options.previousMemberId);
      if (this.stopped) return;
      await c.subscribe({ topics: [...this.options.topics], fromBeginning: true });
      if (this.stopped) return;
      await c.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 1,
        eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
          if (!isRunning() || isStale()) return;
          if (handlers.readyForMore?.() === false) {
            await whileNotReady(handlers, () => isRunning() && !isStale());
            if (!isRunning() || isStale()) return;
          }
          const records = batch.messages.map((m) => toInputRecord(batch.topic, batch.partition, m));
          if (handlers.onBatch({ topic: batch.topic, partition: batch.partition }, records)) resolveOffset(batch.lastOffset());
          await heartbeat();
        },
      });
    } catch (error) {
      throw toIqgateError(error, `consumer of group ${this.options.groupId}`);
    }
  }

  /**
   * LeaveGroup on behalf of this instance's previous member (kafkajs has no static membership,
   * KIP-345): the coordinator drops it at once instead of waiting out its session. Safe because
   * the previous member cannot be alive: it ran on the same state directory, whose LevelDB lock
   * this process holds. A member that is gone already answers UNKNOWN_MEMBER_ID; any failure
   * only means the join waits for the session timeout, as it did before.
   */
  private async removePreviousMember(memberId: string): Promise<void> {
    const report = this.options.onPreviousMemberRemoved;
    try {
      if (this.cluster === undefined) throw new TypeError('the consumer\'s cluster is not known yet');
      // kafkajs' Broker has leaveGroup (broker/index.js), missing from its type declarations.
      const coordinator = (await this.cluster.findGroupCoordinator({ groupId: this.options.groupId })) as unknown as {
        leaveGroup(request: { groupId: string; memberId: string }): Promise<unknown>;
      };
      await coordinator.leaveGroup({ groupId: this.options.groupId, memberId });
      report?.({ memberId, removed: true });
    } catch (error) {
      report?.({ memberId, removed: false, error });
    }
  }

  // Without a group (crashed, restarting: see the module comment) there is nothing to pause,
  // resume or seek; the next join's assignment re-applies what the tasks need.
  pause(partitions: readonly TopicPartition[]): void {
    if (partitions.length > 0 && this.joined) this.consumer.pause(group(partitions));
  }

  resume(partitions: readonly TopicPartition[]): void {
    if (partitions.length > 0 && this.joined) this.consumer.resume(group(partitions));
  }

  seek(position: TopicPartitionOffset): void {
    if (this.joined) this.consumer.seek({ topic: position.topic, partition: position.partition, offset: String(position.offset) });
  }

  async commitOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    try {
      await this.consumer.commitOffsets(offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: String(o.offset) })));
    } catch (error) {
      throw toIqgateError(error, 'commit offsets');
    }
  }

  /** kafkajs members are dynamic: disconnect() sends LeaveGroup, so there is no `leaveGroup` to choose. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.watchdog?.stop();
    this.owners.stop();
    await this.consumer.disconnect();
  }
}

function group(partitions: readonly TopicPartition[]): Array<{ topic: string; partitions: number[] }> {
  const byTopic = new Map<string, number[]>();
  for (const tp of partitions) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
  return [...byTopic].map(([topic, ps]) => ({ topic, partitions: ps }));
}
