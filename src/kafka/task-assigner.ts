/**
 * A task-aware partition assigner: all partitions of one task (the same partition number of
 * every co-partitioned source topic of a sub-topology) go to the same member, spread
 * round-robin over members sorted by id. kafkajs' RoundRobinAssigner interleaves topic-partitions
 * and would split a task across members. Custom assigners: docs/kafkajs-notes.md §3.
 */
// Must precede the first kafkajs import (see the module's comment).
import './kafkajs-patches.js';
import { AssignerProtocol, type PartitionAssigner } from 'kafkajs';
import { Buffer } from 'node:buffer';

export const TASK_ASSIGNER_NAME = 'IqgateTaskAssigner';

/**
 * What a member tells the group about itself in its MemberMetadata userData (JSON): the URL
 * of its GraphQL endpoint, as Kafka Streams' `application.server` travels in its subscription
 * userData. The leader ignores it; every member reads the whole group's with describeGroup.
 */
export interface MemberInfo {
  readonly url?: string;
}

export function encodeMemberInfo(info: MemberInfo): Buffer {
  return info.url === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify({ url: info.url }), 'utf8');
}

/** Lenient: another version's or another client's userData (not JSON, no url) is no info. */
export function decodeMemberInfo(userData: Buffer | null | undefined): MemberInfo {
  if (userData == null || userData.length === 0) return {};
  try {
    const parsed: unknown = JSON.parse(userData.toString('utf8'));
    const url = typeof parsed === 'object' && parsed !== null ? (parsed as { url?: unknown }).url : undefined;
    return typeof url === 'string' && url.length > 0 ? { url } : {};
  } catch {
    return {};
  }
}

/** `taskGroups`: the source topics of each sub-topology; `member`: what this member advertises. */
export function taskAssigner(taskGroups: ReadonlyArray<readonly string[]>, member: MemberInfo = {}): PartitionAssigner {
  const userData = encodeMemberInfo(member);
  return ({ cluster }) => ({
    name: TASK_ASSIGNER_NAME,
    version: 0,
    async assign({ members }) {
      const memberIds = members.map((m) => m.memberId).sort();
      const assignment = new Map<string, Record<string, number[]>>(memberIds.map((id) => [id, {}]));
      let i = 0;
      for (const topics of taskGroups) {
        const partitions = Math.max(0, ...topics.map((t) => cluster.findTopicPartitionMetadata(t).length));
        for (let p = 0; p < partitions; p += 1) {
          const member = memberIds[i % memberIds.length];
          i += 1;
          if (member === undefined) continue;
          const target = assignment.get(member) ?? {};
          for (const topic of topics) (target[topic] ??= []).push(p);
        }
      }
      return memberIds.map((memberId) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment: assignment.get(memberId) ?? {}, userData: Buffer.alloc(0) }),
      }));
    },
    protocol({ topics }) {
      return { name: TASK_ASSIGNER_NAME, metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData }) };
    },
  });
}
