/**
 * The static-member removal's own rules, on a fake coordinator link (the real request is checked
 * on the broker by the ports contract: "static: a member that stops with leaveGroup ...").
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { IqgateError } from '../../../src/errors.js';
import { removeThrough, type CoordinatorLink } from '../../../src/kafka/static-member-removal.js';

const { createErrorFromCode } = createRequire(import.meta.url)('kafkajs/src/protocol/error') as { createErrorFromCode(code: number): Error };

interface Sent {
  readonly request: { readonly apiKey: number; readonly apiVersion: number; encode(): Promise<{ buffer: Buffer }> };
}

/** A link whose coordinator answers each send with the next of `answers` (an Error is thrown; 'hang' never answers). */
function fakeLink(answers: ReadonlyArray<Error | 'ok' | 'hang'>): CoordinatorLink & { sent: Sent[]; lookups: number; disconnected: boolean } {
  const link = {
    sent: [] as Sent[],
    lookups: 0,
    disconnected: false,
    connect: async () => undefined,
    coordinator: async () => {
      link.lookups += 1;
      return {
        connectionPool: {
          send: async (protocolRequest: unknown) => {
            const answer = answers[link.sent.length] ?? 'ok';
            link.sent.push(protocolRequest as Sent);
            if (answer === 'hang') return new Promise(() => undefined);
            if (answer instanceof Error) throw answer;
            return {};
          },
        },
      };
    },
    disconnect: async () => {
      link.disconnected = true;
    },
  };
  return link;
}

describe('removing a static member from its group', () => {
  it('sends one LeaveGroup v3 naming the instance id with an unknown member id, and disconnects', async () => {
    const link = fakeLink(['ok']);
    await removeThrough(link, 'app', 'app-instance-1');
    expect(link.sent).toHaveLength(1);
    const request = link.sent[0]!.request;
    expect({ apiKey: request.apiKey, apiVersion: request.apiVersion }).toEqual({ apiKey: 13, apiVersion: 3 });
    const bytes = (await request.encode()).buffer;
    // group_id "app", then one member: member_id "" and group_instance_id "app-instance-1".
    const expected = Buffer.concat([
      Buffer.from([0, 3]), Buffer.from('app'),
      Buffer.from([0, 0, 0, 1]),
      Buffer.from([0, 0]),
      Buffer.from([0, 14]), Buffer.from('app-instance-1'),
    ]);
    expect(bytes.equals(expected), bytes.toString('hex')).toBe(true);
    expect(link.disconnected).toBe(true);
  });

  it('looks the coordinator up again when it moved or is loading, by kafkajs\' names for those errors', async () => {
    const link = fakeLink([createErrorFromCode(16), createErrorFromCode(14), 'ok']);
    await removeThrough(link, 'app', 'i');
    expect(link.sent).toHaveLength(3);
    expect(link.lookups).toBe(3);
  });

  it('counts a member that is not in the group (UNKNOWN_MEMBER_ID) as removed', async () => {
    const link = fakeLink([createErrorFromCode(25)]);
    await expect(removeThrough(link, 'app', 'i')).resolves.toBeUndefined();
  });

  it('fails with a coded error on any other answer, and on none within its deadline, disconnecting either way', async () => {
    const refused = fakeLink([createErrorFromCode(82)]); // FENCED_INSTANCE_ID
    const error = await removeThrough(refused, 'app', 'i').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IqgateError);
    expect((error as IqgateError).code).toBe('KAFKA_ERROR');
    expect(refused.sent).toHaveLength(1);
    expect(refused.disconnected).toBe(true);

    const silent = fakeLink(['hang']);
    const started = Date.now();
    const timeout = await removeThrough(silent, 'app', 'i', 200).catch((e: unknown) => e);
    expect((timeout as IqgateError).code).toBe('KAFKA_ERROR');
    expect((timeout as Error).message).toMatch(/no answer within 200 ms/);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(silent.disconnected).toBe(true);
  });
});
