/* eslint-disable @typescript-eslint/no-explicit-any -- GraphQL responses are untyped JSON; the assertions are what check their shape. */
/**
 * How a `changes` subscription ends over SSE (yoga.fetch, in-memory stores): its last event
 * carries the coded error (`errors[0].extensions.code`, with where to resume) and the stream
 * then completes — where a revoked partition's subscription used to go silent.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IqgateError } from '../../../src/errors.js';
import { createInMemoryStoreEngine } from '../../../src/store/in-memory-engine.js';
import { createFixture, subscribe, type Fetch, type Fixture } from './gateway-fixture.js';
import { waitUntil } from './gateway-scenarios.js';

const URL = 'http://gateway.test/graphql';
let f: Fixture;

beforeEach(async () => {
  f = await createFixture(createInMemoryStoreEngine(), { partitions: 2, gateway: { maxBufferedEvents: 3 } });
});

afterEach(async () => {
  await f.close();
});

/** The error a subscription's next() raised for an event carrying errors. */
async function nextError(sub: { next(): Promise<unknown> }): Promise<any> {
  try {
    const data = await sub.next();
    throw new Error(`expected an error event, got ${JSON.stringify(data)}`);
  } catch (error) {
    const errors = (error as { errors?: unknown[] }).errors;
    if (errors === undefined) throw error;
    return { errors };
  }
}

describe('the end of a changes subscription over SSE', () => {
  it('sends PARTITION_REVOKED with where to resume as its last event, after the last commit, then completes', async () => {
    const key = 'moving';
    const partition = f.partitionOf('words', key);
    const sub = await subscribe<any>(f.gateway.fetch as Fetch, URL, 'subscription { changes(store: "words", keys: ["moving"]) { key value resumeAfter } }');
    await waitUntil(() => f.tasks[partition]!.store('words').listenerCount() > 0);
    f.put('words', key, 1);
    await f.commit();
    f.put('words', key, 2);
    await f.commit();
    // The runtime closes a revoked task's stores with this reason after its last commit.
    await f.tasks[partition]!.close(new IqgateError('PARTITION_REVOKED', 'task moved', { retriable: true, details: { taskId: `0_${partition}` } }));

    const first = (await sub.next()).changes;
    const second = (await sub.next()).changes;
    expect([first.value, second.value]).toEqual([1, 2]);
    const { errors } = await nextError(sub);
    expect(errors).toHaveLength(1);
    expect(errors[0].extensions).toEqual({
      code: 'PARTITION_REVOKED',
      retriable: true,
      details: { taskId: `0_${partition}`, store: 'words', partition, resumeAfter: second.resumeAfter },
    });
    expect(errors[0].message).toContain(`partition ${partition} of words`);
    await expect(sub.next()).rejects.toThrow('subscription completed');
    sub.close();
  });

  it('sends SUBSCRIPTION_OVERFLOW the same way when the subscriber falls too far behind', async () => {
    const key = 'busy';
    const partition = f.partitionOf('words', key);
    const sub = await subscribe<any>(f.gateway.fetch as Fetch, URL, 'subscription { changes(store: "words", keys: ["busy"]) { value } }');
    await waitUntil(() => f.tasks[partition]!.store('words').listenerCount() > 0);
    // Nobody reads: past the three events the feed buffers (and what yoga's stream holds), it overflows.
    for (let i = 1; i <= 6; i++) {
      f.put('words', key, i);
      await f.commit();
    }
    const values: number[] = [];
    let errors: any[] | undefined;
    while (errors === undefined) {
      try {
        values.push((await sub.next()).changes.value);
      } catch (error) {
        errors = (error as { errors?: any[] }).errors;
        if (errors === undefined) throw error;
      }
    }
    // Every change up to the overflow, in order, then the error (how many fit depends on how
    // far ahead yoga's stream reads; never all six).
    expect(values).toEqual(values.map((_, i) => i + 1));
    expect(values.length).toBeLessThan(6);
    expect(errors[0].extensions.code).toBe('SUBSCRIPTION_OVERFLOW');
    await expect(sub.next()).rejects.toThrow('subscription completed');
    sub.close();
  });
});
