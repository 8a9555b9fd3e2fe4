/**
 * The consumer-group member id of the instance that runs on a state directory, kept in that
 * directory (`iqgate-group-member.json`, beside LevelDB's files, which LevelDB leaves alone).
 * After a crash, the next start on the same directory removes that member from the group at
 * once (group-consumer.ts), instead of every task waiting out its session (sessionTimeoutMs,
 * 30 s by default) before the group can rebalance: kafkajs has no static membership (KIP-345).
 */
import { readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { GroupConsumerOptions } from '../kafka/group-consumer.js';

const FILE = 'iqgate-group-member.json';

interface Recorded {
  readonly groupId: string;
  readonly memberId: string;
}

/** The member id recorded for `groupId` in `stateDir`, if any (a missing or unreadable file is none). */
export function readGroupMember(stateDir: string, groupId: string): string | undefined {
  try {
    const recorded = JSON.parse(readFileSync(join(stateDir, FILE), 'utf8')) as Partial<Recorded>;
    return recorded.groupId === groupId && typeof recorded.memberId === 'string' && recorded.memberId.length > 0 ? recorded.memberId : undefined;
  } catch {
    return undefined;
  }
}

/** Records `memberId` (write to a temporary file, then rename: a crash leaves the old or the new record, never half of one). */
export async function writeGroupMember(stateDir: string, groupId: string, memberId: string): Promise<void> {
  const target = join(stateDir, FILE);
  const temporary = `${target}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify({ groupId, memberId } satisfies Recorded)}\n`);
  await rename(temporary, target);
}

/** The group consumer's options that remember this instance's member id in `stateDir` and remove the one a crashed run left. */
export function groupMemberOptions(stateDir: string, groupId: string, logger: Pick<Logger, 'info' | 'warn' | 'debug'>): Pick<GroupConsumerOptions, 'previousMemberId' | 'onMemberId' | 'onPreviousMemberRemoved'> {
  const previousMemberId = readGroupMember(stateDir, groupId);
  return {
    ...(previousMemberId === undefined ? {} : { previousMemberId }),
    onMemberId: (memberId) => {
      writeGroupMember(stateDir, groupId, memberId).catch((error: unknown) => logger.warn({ err: error }, 'recording the group member id failed'));
    },
    onPreviousMemberRemoved: ({ memberId, removed, error }) => {
      if (removed) logger.info({ memberId }, 'removed the member a previous run left in the group');
      else logger.debug({ memberId, err: error }, 'the previous run\'s member was not in the group any more');
    },
  };
}
