// The project's kafkajs is the patched one: load the patches before kafkajs.
import '../../../src/kafka/kafkajs-patches.js';
import { describe, expect, it } from 'vitest';
import { AssignerProtocol, type GroupDescription } from 'kafkajs';
import { advertisingClientId, decodePartitionOwners, PartitionOwnerTracker, urlOfClientId } from '../../../src/kafka/partition-owner-tracker.js';
import { decodeMemberInfo, encodeMemberInfo } from '../../../src/kafka/task-assigner.js';

function member(memberId: string, url: string | undefined, assignment: Record<string, number[]>) {
  return {
    memberId,
    clientId: 'c',
    clientHost: '/127.0.0.1',
    memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics: Object.keys(assignment), userData: encodeMemberInfo(url === undefined ? {} : { url }) }),
    memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment, userData: Buffer.alloc(0) }),
  };
}

function group(state: GroupDescription['state'], members: ReturnType<typeof member>[]): GroupDescription {
  return { groupId: 'g', members, protocol: 'IqgateTaskAssigner', protocolType: 'consumer', state };
}

describe('partition owners from the group description', () => {
  it('round-trips a member URL through userData and treats foreign userData as no info', () => {
    expect(decodeMemberInfo(encodeMemberInfo({ url: 'http://a:4000/graphql' }))).toEqual({ url: 'http://a:4000/graphql' });
    expect(decodeMemberInfo(encodeMemberInfo({}))).toEqual({});
    expect(decodeMemberInfo(Buffer.from('not json'))).toEqual({});
    expect(decodeMemberInfo(Buffer.from('{"url":3}'))).toEqual({});
  });

  it('maps every assigned partition of an advertising member to its URL and skips members without one', () => {
    const owners = decodePartitionOwners(group('Stable', [member('a', 'http://a/graphql', { t: [0, 2] }), member('b', undefined, { t: [1] })]));
    expect(owners).toEqual([
      { topic: 't', partition: 0, url: 'http://a/graphql' },
      { topic: 't', partition: 2, url: 'http://a/graphql' },
    ]);
  });

  it('reads a librdkafka member\'s URL from its client id, which its own assignor\'s userData cannot carry', () => {
    const clientId = advertisingClientId('app-1', 'https://10.0.0.5:4000/graphql');
    expect(urlOfClientId(clientId)).toBe('https://10.0.0.5:4000/graphql');
    expect(urlOfClientId('app-1')).toBeUndefined();
    expect(urlOfClientId('app iqgate-url=file:///etc/passwd')).toBeUndefined(); // http(s) only
    const rd = { ...member('r', undefined, { t: [1, 3] }), clientId, memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics: ['t'], userData: Buffer.from([0, 1, 2, 255]) }) };
    expect(decodePartitionOwners(group('Stable', [rd]))).toEqual([
      { topic: 't', partition: 1, url: 'https://10.0.0.5:4000/graphql' },
      { topic: 't', partition: 3, url: 'https://10.0.0.5:4000/graphql' },
    ]);
  });

  it('retries describeGroup until the group is Stable, in the background', async () => {
    const answers = [group('CompletingRebalance', []), group('Stable', [member('a', 'http://a/graphql', { t: [0] })])];
    let calls = 0;
    const tracker = new PartitionOwnerTracker({ describe: async () => answers[Math.min(calls++, 1)]!, retryMs: 5 });
    tracker.refresh();
    expect(tracker.current()).toEqual([]);
    await tracker.settled();
    expect(calls).toBe(2);
    expect(tracker.current()).toEqual([{ topic: 't', partition: 0, url: 'http://a/graphql' }]);
  });

  it('routes by a rebalancing group\'s last synced assignments until it first sees the group Stable, and names no members from them', async () => {
    // As a broker describes a rebalancing group: no member metadata, the last synced assignments
    // (Kafka 4's coordinator), so only a URL in the client id (librdkafka members) is there to read.
    const rebalancing = (url: string, assignment: Record<string, number[]>) => ({ ...member(url, undefined, assignment), clientId: advertisingClientId('app', url), memberMetadata: Buffer.alloc(0) });
    const answers = [
      group('PreparingRebalance', [rebalancing('http://a/graphql', { t: [0, 1] }), rebalancing('http://b/graphql', {}), { ...member('k', 'http://k/graphql', { t: [2] }), memberMetadata: Buffer.alloc(0) }]),
      group('Stable', [member('a', 'http://a/graphql', { t: [0] }), member('b', 'http://b/graphql', { t: [1] })]),
      group('PreparingRebalance', [rebalancing('http://a/graphql', {}), rebalancing('http://b/graphql', { t: [1] })]),
    ];
    let calls = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const named: string[][] = [];
    const tracker = new PartitionOwnerTracker({
      describe: async () => {
        const answer = answers[Math.min(calls++, 2)]!;
        if (calls === 2) await gate; // the Stable answer waits until the test has looked
        return answer;
      },
      retryMs: 1,
      maxAttempts: 3,
      onMembers: (ids) => named.push([...ids]),
    });
    tracker.refresh();
    await new Promise((resolve) => setTimeout(resolve, 20));
    // No map yet: the last synced assignments route meanwhile (not a member whose URL was in its
    // metadata: kafkajs'), but fence no one.
    expect(tracker.current()).toEqual([{ topic: 't', partition: 0, url: 'http://a/graphql' }, { topic: 't', partition: 1, url: 'http://a/graphql' }]);
    expect(named).toEqual([]);
    release();
    await tracker.settled();
    expect(tracker.current()).toEqual([{ topic: 't', partition: 0, url: 'http://a/graphql' }, { topic: 't', partition: 1, url: 'http://b/graphql' }]);
    expect(named).toHaveLength(1);
    // Once a Stable map is known, a rebalancing description never replaces it.
    tracker.refresh();
    await tracker.settled();
    expect(calls).toBe(5); // three rebalancing answers, none taken
    expect(tracker.current()).toEqual([{ topic: 't', partition: 0, url: 'http://a/graphql' }, { topic: 't', partition: 1, url: 'http://b/graphql' }]);
  });

  it('keeps the last complete map when a refresh fails, and reports the failure', async () => {
    const errors: unknown[] = [];
    let fail = false;
    const tracker = new PartitionOwnerTracker({
      describe: async () => {
        if (fail) throw new Error('coordinator gone');
        return group('Stable', [member('a', 'http://a/graphql', { t: [0] })]);
      },
      retryMs: 1,
      maxAttempts: 3,
      onError: (error) => errors.push(error),
    });
    tracker.refresh();
    await tracker.settled();
    fail = true;
    tracker.refresh();
    await tracker.settled();
    expect(tracker.current()).toHaveLength(1);
    expect(errors).toHaveLength(1);
  });
});
