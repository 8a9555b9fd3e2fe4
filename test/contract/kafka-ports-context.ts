/**
 * Per-test resources of the ports contract and the recording group member its specs observe a
 * consumer through. Each test gets fresh topic, group and transactional-id names; every port it
 * creates is closed after it, and a member that crashed fails it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach } from 'vitest';
import type { ConsumerHandlers, InputRecord, KafkaPorts, TopicPartition } from '../../src/processing/ports.js';
import type { KafkaPortsDriver, PortsConfig } from './kafka-ports-driver.js';

/** One clock for the events of every member, to order what happened across members. */
let clock = 0;
const tick = (): number => ++clock;

export interface Delivery {
  readonly tp: TopicPartition;
  readonly records: readonly InputRecord[];
  readonly at: number;
}

export interface Revocation {
  readonly partitions: readonly TopicPartition[];
  readonly lost: boolean;
  readonly at: number;
  /** When the promise handed back to the adapter settled. */
  settledAt?: number;
}

/** What a test may do in the consumer's callbacks (all optional: by default it takes everything). */
export interface MemberHooks {
  /**
   * Called from onAssignment, before the next fetch. Default: resume the whole assignment. The
   * port leaves a new partition's pause state to the adapter (librdkafka's pauses added
   * partitions until the tasks are ready), so a reader resumes what it wants to read, as the
   * task manager does once a task is open.
   */
  onAssignment?(assignment: readonly TopicPartition[], ports: KafkaPorts): void;
  /** Return false to refuse the batch (it is then not recorded as taken). Default: take it. */
  onBatch?(tp: TopicPartition, records: readonly InputRecord[], ports: KafkaPorts): boolean;
  /** The work to finish before the adapter gives the partitions up. Default: none. */
  onRevoked?(partitions: readonly TopicPartition[], lost: boolean): Promise<void>;
  /** ConsumerHandlers.maxRecordsPerFetch (the hint while gateway requests wait). Default: none. */
  maxRecordsPerFetch?(): number;
}

/** A running consumer of the group, recording everything its handlers hear. */
export class Member {
  readonly assignments: Array<{ readonly partitions: readonly TopicPartition[]; readonly at: number }> = [];
  readonly taken: Delivery[] = [];
  readonly refused: Delivery[] = [];
  readonly rebalancing: number[] = [];
  readonly revocations: Revocation[] = [];
  readonly crashes: unknown[] = [];

  constructor(readonly ports: KafkaPorts, private readonly hooks: MemberHooks = {}) {}

  handlers(): ConsumerHandlers {
    const handlers: ConsumerHandlers = {
      onAssignment: (assignment) => {
        this.assignments.push({ partitions: sorted(assignment), at: tick() });
        if (this.hooks.onAssignment !== undefined) this.hooks.onAssignment(assignment, this.ports);
        else this.ports.consumer.resume(assignment);
      },
      onBatch: (tp, records) => {
        const delivery = { tp: { topic: tp.topic, partition: tp.partition }, records: [...records], at: tick() };
        const take = this.hooks.onBatch?.(tp, records, this.ports) ?? true;
        (take ? this.taken : this.refused).push(delivery);
        return take;
      },
      onRebalancing: () => {
        this.rebalancing.push(tick());
      },
      onCrash: (error) => {
        this.crashes.push(error);
      },
    };
    const maxRecordsPerFetch = this.hooks.maxRecordsPerFetch;
    if (maxRecordsPerFetch !== undefined) handlers.maxRecordsPerFetch = maxRecordsPerFetch;
    const onRevoked = this.hooks.onRevoked;
    if (onRevoked !== undefined) {
      handlers.onRevoked = async (partitions, lost) => {
        const revocation: Revocation = { partitions: sorted(partitions), lost, at: tick() };
        this.revocations.push(revocation);
        try {
          await onRevoked(partitions, lost);
        } finally {
          revocation.settledAt = tick();
        }
      };
    }
    return handlers;
  }

  /** The latest assignment ([] before the first). */
  get assignment(): readonly TopicPartition[] {
    return this.assignments[this.assignments.length - 1]?.partitions ?? [];
  }

  /** Every record taken from the partition, in the order handed over. */
  records(tp: TopicPartition): InputRecord[] {
    return this.taken.filter((d) => same(d.tp, tp)).flatMap((d) => d.records);
  }

  offsets(tp: TopicPartition): number[] {
    return this.records(tp).map((r) => r.offset);
  }
}

export interface ContractContext {
  readonly driver: KafkaPortsDriver;
  /** A name no other test uses (topics, groups, transactional ids). */
  name(prefix: string): string;
  /** New topics of `partitions` partitions each. */
  topics(count: number, partitions: number): Promise<string[]>;
  /** A PortsConfig with fresh names; `overrides` replaces parts of it. */
  config(overrides?: Partial<PortsConfig>): PortsConfig;
  /** Ports closed after the test. */
  ports(config: PortsConfig): KafkaPorts;
  unreachablePorts(config: PortsConfig): KafkaPorts;
  /** Runs the consumer of `ports` with recording handlers (run() resolved). */
  member(ports: KafkaPorts, hooks?: MemberHooks): Promise<Member>;
  /** Waits for `predicate`, letting the ports progress (driver.settle) between checks. */
  eventually(what: string, predicate: () => boolean | Promise<boolean>): Promise<void>;
  /**
   * Waits until no member has heard a new assignment for `quietMs`. A cooperative rebalance
   * takes two rounds and each member hears each round's assignment when its own SyncGroup
   * answers, so one member may already show the final split while the other's last callback of
   * the same round is still on its way.
   */
  quiet(what: string, members: readonly Member[], quietMs: number): Promise<void>;
  /**
   * What read_committed readers see in the partition once they see at least `count` records. A
   * broker writes the commit markers after EndTxn has answered, so a commit shows a moment later.
   */
  committed(tp: TopicPartition, count: number): Promise<InputRecord[]>;
}

export function contractContext(driver: KafkaPortsDriver): ContractContext {
  let open: KafkaPorts[] = [];
  let members: Member[] = [];

  afterEach(async () => {
    const closing = open.reverse();
    const crashed = members.flatMap((m) => m.crashes);
    open = [];
    members = [];
    for (const ports of closing) await ports.close();
    if (crashed.length > 0) throw new Error(`a consumer crashed during the test: ${String(crashed[0])}`, { cause: crashed[0] });
  });
  afterAll(() => driver.close());

  const name = (prefix: string): string => `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const track = (ports: KafkaPorts): KafkaPorts => {
    open.push(ports);
    return ports;
  };

  const eventually = async (what: string, predicate: () => boolean | Promise<boolean>): Promise<void> => {
    const deadline = Date.now() + driver.waitMs;
    for (;;) {
      await driver.settle();
      if (await predicate()) return;
      if (Date.now() > deadline) throw new Error(`timed out after ${driver.waitMs} ms waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  const quiet = async (what: string, watched: readonly Member[], quietMs: number): Promise<void> => {
    const heard = (): number => watched.reduce((n, m) => n + m.assignments.length, 0);
    let count = heard();
    let since = Date.now();
    await eventually(`${what} (no new assignment for ${quietMs} ms)`, () => {
      if (heard() !== count) {
        count = heard();
        since = Date.now();
      }
      return Date.now() - since >= quietMs;
    });
  };

  return {
    driver,
    name,
    eventually,
    quiet,
    committed: async (tp, count) => {
      let seen: InputRecord[] = [];
      await eventually(`${count} committed records in ${tp.topic}/${tp.partition}`, async () => {
        seen = await driver.readCommitted(tp);
        return seen.length >= count;
      });
      return seen;
    },
    topics: async (count, partitions) => {
      const topics = Array.from({ length: count }, () => name('t'));
      await driver.createTopics(topics, partitions);
      return topics;
    },
    config: (overrides = {}) => ({ groupId: name('g'), topics: [], transactionalId: name('tx'), ...overrides }),
    ports: (config) => track(driver.createPorts(config)),
    unreachablePorts: (config) => track(driver.createUnreachablePorts(config)),
    member: async (ports, hooks) => {
      const member = new Member(ports, hooks);
      members.push(member);
      await ports.consumer.run(member.handlers());
      return member;
    },
  };
}

export function same(a: TopicPartition, b: TopicPartition): boolean {
  return a.topic === b.topic && a.partition === b.partition;
}

export function sorted(partitions: readonly TopicPartition[]): TopicPartition[] {
  return partitions.map((tp) => ({ topic: tp.topic, partition: tp.partition }))
    .sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
}

/** The partitions 0..count-1 of `topic`. */
export function partitionsOf(topic: string, count: number): TopicPartition[] {
  return Array.from({ length: count }, (_v, partition) => ({ topic, partition }));
}

export function text(buffer: Buffer | null): string | null {
  return buffer === null ? null : buffer.toString('utf8');
}

/** The values of records, as strings. */
export function values(records: readonly InputRecord[]): Array<string | null> {
  return records.map((r) => text(r.value));
}

export function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_v, i) => from + i);
}

/** The rejection of `promise` (an Error saying so if it resolves instead). */
export function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => new Error('expected a rejection, but it resolved'), (error: unknown) => error);
}
