import { describe, expect, it } from 'vitest';
import { DepartedMemberFencer } from '../../../src/kafka/departed-member-fencer.js';
import { advertisingClientId, transactionalIdOfClientId, urlOfClientId, withTransactionalId } from '../../../src/kafka/partition-owner-tracker.js';

const clientIdOf = (txn: string, url = `http://10.0.0.1:4000/${txn}`): string => advertisingClientId(withTransactionalId('wordcount', txn), url);

function fencer(own = 'app-a'): { fencer: DepartedMemberFencer; fenced: string[]; fail: Set<string>; warned: string[] } {
  const fenced: string[] = [];
  const fail = new Set<string>();
  const warned: string[] = [];
  const f = new DepartedMemberFencer({
    own,
    fence: async (id) => {
      fenced.push(id);
      if (fail.has(id)) throw new Error('refused');
    },
    logger: { info: () => undefined, debug: () => undefined, warn: (fields) => warned.push(String(fields.transactionalId)) },
  });
  return { fencer: f, fenced, fail, warned };
}

describe('advertised transactional ids', () => {
  it('travel in the client id beside the URL, and both read back', () => {
    const clientId = clientIdOf('app-b', 'https://10.0.0.5:4000/graphql');
    expect(transactionalIdOfClientId(clientId)).toBe('app-b');
    expect(urlOfClientId(clientId)).toBe('https://10.0.0.5:4000/graphql');
    expect(transactionalIdOfClientId('wordcount iqgate-url=http://x')).toBeUndefined();
    expect(transactionalIdOfClientId('wordcount iqgate-txn=')).toBeUndefined();
  });
});

describe('DepartedMemberFencer', () => {
  it('fences a member that was in the previous description and is gone from this one, once', async () => {
    const { fencer: f, fenced } = fencer();
    f.observe([clientIdOf('app-a'), clientIdOf('app-b'), clientIdOf('app-c')]);
    f.observe([clientIdOf('app-a'), clientIdOf('app-b')]);
    await f.settled();
    expect(fenced).toEqual(['app-c']);
    f.observe([clientIdOf('app-a'), clientIdOf('app-b')]);
    await f.settled();
    expect(fenced).toEqual(['app-c']);
  });

  it('fences nobody on its first description, never itself, and not members that stay or join', async () => {
    const { fencer: f, fenced } = fencer('app-a');
    f.observe([clientIdOf('app-b')]); // joined a group whose earlier members it never saw
    f.observe([clientIdOf('app-a'), clientIdOf('app-b'), clientIdOf('app-d')]);
    f.observe([clientIdOf('app-d')]); // this member itself out of the description: not fenced by itself
    await f.settled();
    expect(fenced).toEqual(['app-b']);
  });

  it('ignores members that advertise no transactional id, and logs a failed fence without throwing', async () => {
    const { fencer: f, fenced, fail, warned } = fencer();
    fail.add('app-c');
    f.observe(['plain-client', clientIdOf('app-c')]);
    f.observe([]);
    await f.settled();
    expect(fenced).toEqual(['app-c']);
    expect(warned).toEqual(['app-c']);
  });

  it('does nothing once stopped', async () => {
    const { fencer: f, fenced } = fencer();
    f.observe([clientIdOf('app-c')]);
    f.stop();
    f.observe([]);
    await f.settled();
    expect(fenced).toEqual([]);
  });
});
