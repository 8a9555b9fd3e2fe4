import { afterEach, describe, expect, it } from 'vitest';
import { IqgateError } from '../../../src/errors.js';
import { waitForBound } from '../../../src/query/position-bound.js';
import { Position } from '../../../src/store/position.js';
import { createKvFixture, type KvFixture } from './change-stream-fixture.js';

// A wait far longer than the test's own timeout: a release that did not come from an event fails the test.
const NEVER = 600_000;

describe('waiting for a position bound', () => {
  let fixture: KvFixture | undefined;
  afterEach(async () => {
    await fixture?.close();
    fixture = undefined;
  });

  it('releases an uncommitted wait at the write that reaches the bound, a committed one at the commit', async () => {
    fixture = await createKvFixture(1);
    const store = fixture.tasks[0]!.store('kv');
    // The fixture's first put is input offset 0: the bound asks for offset 1 (the second put).
    const bound = Position.fromJSON({ in: { 0: 1 } });
    const uncommitted = waitForBound(store, false, bound, NEVER);
    const committed = waitForBound(store, true, bound, NEVER);
    let committedDone = false;
    void committed.then(() => (committedDone = true));
    fixture.put('a', '1');
    fixture.put('b', '2');
    expect(await uncommitted).toBe(true);
    expect(committedDone).toBe(false);
    await fixture.commit();
    expect(await committed).toBe(true);
  });

  it('answers at once, unsatisfied, when the partition closes under the wait', async () => {
    fixture = await createKvFixture(1);
    const task = fixture.tasks[0]!;
    const waiting = waitForBound(task.store('kv'), true, Position.fromJSON({ in: { 0: 50 } }), NEVER);
    await task.close(new IqgateError('PARTITION_REVOKED', 'moved to another instance'));
    expect(await waiting).toBe(false);
  });
});
