/**
 * Learns which member hosts which input partition, with the URL each member advertises —
 * iqgate's `application.server` metadata: on kafkajs in its MemberMetadata userData
 * (task-assigner.ts, iqgate's own assignor); on librdkafka, whose built-in assignors own the
 * userData and take none from JavaScript, in the consumer's client id (`advertisingClientId`),
 * which the group's description returns for every member too. The client id carries the
 * instance's transactional id the same way (`withTransactionalId`), for the fence of a member
 * that leaves the group (departed-member-fencer.ts).
 *
 * kafkajs hands a member only its own assignment (GROUP_JOIN) and drops the assignment
 * userData (docs/kafkajs-notes.md §3), so after each join every member asks the coordinator with
 * describeGroup, which returns every member's raw metadata and assignment, and decodes both.
 * Right after a join the group may still be CompletingRebalance (other members have not
 * synced yet): the refresh retries until the group is Stable. A member that has no map yet (it
 * has just started, and the group has been rebalancing since) takes the assignments such a
 * description shows meanwhile — the members' last synced ones, which they keep serving through a
 * cooperative rebalance — as a provisional map: routing by them beats knowing no owner at all
 * (every non-local key NOT_PRESENT). The next Stable description replaces it; only a Stable one
 * names the members (onMembers), so nothing is fenced on a provisional view. A rebalancing
 * group's description carries no member metadata (and before Kafka 4 no assignments either), so
 * this reaches only the members that advertise their URL in the client id: librdkafka's.
 *
 * The refresh is network I/O, so it never runs inside the synchronous GROUP_JOIN listener or
 * eachBatch: `refresh()` starts it in the background and returns at once. A newer join (or
 * stop) supersedes a refresh in flight; the map is replaced only by a complete answer, so
 * between rebalances readers see the last complete one.
 */
// Must precede the first kafkajs import (see the module's comment).
import './kafkajs-patches.js';
import { AssignerProtocol, type GroupDescription } from 'kafkajs';
import type { PartitionOwner } from '../processing/ports.js';
import { decodeMemberInfo } from './task-assigner.js';

export interface PartitionOwnerTrackerOptions {
  /** consumer.describeGroup (kafkajs retries transport errors itself). */
  readonly describe: () => Promise<GroupDescription>;
  /** Pause between attempts while the group is not Stable. Default 200 ms. */
  readonly retryMs?: number;
  /** Attempts per refresh before giving up until the next join. Default 150 (~30 s). */
  readonly maxAttempts?: number;
  readonly onError?: (error: unknown) => void;
  /** Every member's client id, from each Stable description (departed-member-fencer.ts). */
  readonly onMembers?: (clientIds: readonly string[]) => void;
}

const URL_MARK = ' iqgate-url=';
const TXN_MARK = ' iqgate-txn=';

/** The client id of a librdkafka consumer that advertises `url` (read back by urlOfClientId). */
export function advertisingClientId(clientId: string, url: string): string {
  return `${clientId}${URL_MARK}${url}`;
}

/**
 * The client id `base` that also advertises `transactionalId` (exactly-once v2: departed-member-fencer.ts).
 * It goes before the URL, which runs to the end of the client id.
 */
export function withTransactionalId(base: string, transactionalId: string): string {
  return `${base}${TXN_MARK}${transactionalId}`;
}

/** The transactional id a member's client id advertises, up to the next advertised field (" iqgate-…") or its end. */
export function transactionalIdOfClientId(clientId: string): string | undefined {
  const at = clientId.indexOf(TXN_MARK);
  if (at < 0) return undefined;
  const id = clientId.slice(at + TXN_MARK.length).split(' ', 1)[0] ?? '';
  return id.length > 0 ? id : undefined;
}

/** The URL a member's client id advertises, if it is an http(s) URL. */
export function urlOfClientId(clientId: string): string | undefined {
  const at = clientId.lastIndexOf(URL_MARK);
  if (at < 0) return undefined;
  const url = clientId.slice(at + URL_MARK.length);
  return /^https?:\/\/\S+$/.test(url) ? url : undefined;
}

/** Every partition of every Stable member that advertises a URL (in its userData or its client id). */
export function decodePartitionOwners(group: GroupDescription): PartitionOwner[] {
  const owners: PartitionOwner[] = [];
  for (const member of group.members) {
    const url = decodeMemberInfo(safeDecode(() => AssignerProtocol.MemberMetadata.decode(member.memberMetadata))?.userData).url ?? urlOfClientId(member.clientId);
    if (url === undefined) continue;
    const assignment = safeDecode(() => AssignerProtocol.MemberAssignment.decode(member.memberAssignment))?.assignment ?? {};
    for (const [topic, partitions] of Object.entries(assignment)) {
      for (const partition of partitions) owners.push({ topic, partition, url });
    }
  }
  return owners;
}

function safeDecode<T>(decode: () => T | null): T | null {
  try {
    return decode();
  } catch {
    return null;
  }
}

export class PartitionOwnerTracker {
  private owners: readonly PartitionOwner[] = [];
  /** True until a Stable description has been read: `owners` is then a rebalancing group's last synced assignments. */
  private provisional = true;
  private generation = 0;
  private stopped = false;
  private readonly retryMs: number;
  private readonly maxAttempts: number;
  /** The refresh in flight, for tests and orderly shutdown. */
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly options: PartitionOwnerTrackerOptions) {
    this.retryMs = options.retryMs ?? 200;
    this.maxAttempts = options.maxAttempts ?? 150;
  }

  current(): readonly PartitionOwner[] {
    return this.owners;
  }

  /** Starts a background refresh (superseding one in flight); never throws, never blocks. */
  refresh(): void {
    const generation = ++this.generation;
    this.running = this.run(generation).catch((error: unknown) => this.options.onError?.(error));
  }

  /** Resolves when the latest refresh has settled. */
  settled(): Promise<void> {
    return this.running;
  }

  stop(): void {
    this.stopped = true;
    this.generation += 1;
  }

  private async run(generation: number): Promise<void> {
    const current = (): boolean => !this.stopped && generation === this.generation;
    let lastError: unknown = null;
    for (let attempt = 1; attempt <= this.maxAttempts && current(); attempt += 1) {
      try {
        const group = await this.options.describe();
        if (!current()) return;
        if (group.state === 'Stable') {
          this.owners = decodePartitionOwners(group);
          this.provisional = false;
          this.options.onMembers?.(group.members.map((member) => member.clientId));
          return;
        }
        if (this.provisional) {
          const synced = decodePartitionOwners(group);
          if (synced.length > 0) this.owners = synced;
        }
      } catch (error) {
        lastError = error; // e.g. the coordinator moved: try again, like a non-Stable answer
      }
      await new Promise((resolve) => setTimeout(resolve, this.retryMs));
    }
    if (lastError !== null && current()) throw lastError;
  }
}
