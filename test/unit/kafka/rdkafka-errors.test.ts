import { describe, expect, it } from 'vitest';
import { IqgateError } from '../../../src/errors.js';
import { fromRdkafkaError } from '../../../src/kafka/librdkafka/rdkafka-errors.js';
import { callRetrying, isRetriableTxnError } from '../../../src/kafka/librdkafka/rdkafka-stream-producer.js';

/** The shape lib/error.js gives a transactional call's error (LibrdKafkaError with the baton's flags). */
function rdError(code: number, flags: { isRetriable?: boolean; isFatal?: boolean; isTxnRequiresAbort?: boolean } = {}): Error {
  return Object.assign(new Error(`librdkafka error ${code}`), { code, ...flags });
}

describe('librdkafka errors', () => {
  it('maps fencing, unreachable brokers and unknown topics to their codes, keeping librdkafka\'s flags', () => {
    const fenced = fromRdkafkaError(rdError(90, { isFatal: true }), 'commit');
    expect(fenced).toBeInstanceOf(IqgateError);
    expect(fenced.code).toBe('PRODUCER_FENCED');
    expect(fenced.retriable).toBe(false);
    expect(fenced.details).toEqual({ librdkafkaCode: 90, isFatal: true });
    expect(fromRdkafkaError(rdError(-195), 'fetch').code).toBe('BROKER_UNAVAILABLE');
    expect(fromRdkafkaError(rdError(3), 'produce').code).toBe('TOPIC_NOT_FOUND');
    const other = fromRdkafkaError(rdError(51, { isRetriable: false, isTxnRequiresAbort: true }), 'send offsets');
    expect(other.code).toBe('KAFKA_ERROR');
    expect(other.details).toEqual({ librdkafkaCode: 51, isRetriable: false, isTxnRequiresAbort: true });
  });

  it('retries a transactional call on librdkafka\'s word or a busy coordinator, never when it must abort or is fatal', () => {
    expect(isRetriableTxnError(rdError(-185, { isRetriable: true }))).toBe(true);
    // CONCURRENT_TRANSACTIONS without any flag (seen at 1000 partitions under load).
    expect(isRetriableTxnError(rdError(51))).toBe(true);
    expect(isRetriableTxnError(rdError(14))).toBe(true);
    expect(isRetriableTxnError(rdError(51, { isTxnRequiresAbort: true }))).toBe(false);
    expect(isRetriableTxnError(rdError(51, { isFatal: true }))).toBe(false);
    expect(isRetriableTxnError(rdError(48))).toBe(false); // INVALID_TXN_STATE
    expect(isRetriableTxnError(rdError(-173, { isRetriable: true }))).toBe(false); // _CONFLICT: another call is left to resume
    expect(isRetriableTxnError(null)).toBe(false);
  });

  /**
   * A call like librdkafka's: each attempt waits out its timeout (librdkafka retries inside it)
   * and answers `errorFor(elapsed)` at the end, or succeeds once that is null.
   */
  function fakeCall(errorFor: (elapsedMs: number) => Error | null): { run: (timeoutMs: number, cb: (err: unknown) => void) => void; timeouts: number[] } {
    const started = Date.now();
    const timeouts: number[] = [];
    return {
      timeouts,
      run: (timeoutMs, cb) => {
        timeouts.push(timeoutMs);
        const now = errorFor(Date.now() - started);
        if (now === null) setImmediate(() => cb(null));
        else setTimeout(() => cb(errorFor(Date.now() - started)), Math.min(timeoutMs, 40));
      },
    };
  }

  it('goes on past its budget while the coordinator is busy, up to the busy budget, and then fails', async () => {
    // CONCURRENT_TRANSACTIONS for 400 ms, then the coordinator answers: a 100 ms budget alone
    // would have failed the call (and rolled back every task); the busy budget lets it through.
    const stall = fakeCall((elapsed) => (elapsed < 400 ? rdError(51, { isRetriable: true }) : null));
    await expect(callRetrying(stall.run, 'send offsets', { budgetMs: 100, busyBudgetMs: 2_000 })).resolves.toBeUndefined();
    expect(stall.timeouts.length).toBeGreaterThan(1);
    // Past the busy budget the call fails with the coordinator's answer.
    const endless = fakeCall(() => rdError(51, { isRetriable: true }));
    const started = Date.now();
    const failure = await callRetrying(endless.run, 'send offsets', { budgetMs: 100, busyBudgetMs: 600 }).then(() => null, (error: unknown) => error);
    expect(failure).toBeInstanceOf(IqgateError);
    expect((failure as IqgateError).details).toMatchObject({ librdkafkaCode: 51 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('keeps the plain budget for other retriable errors: a broker away fails the call in time', async () => {
    // _TIMED_OUT (a flush that does not finish, a broker away) is retriable but not a busy
    // coordinator: past the budget the call fails, however long the busy budget.
    const away = fakeCall(() => rdError(-185, { isRetriable: true }));
    const started = Date.now();
    const failure = await callRetrying(away.run, 'commit', { budgetMs: 150, busyBudgetMs: 5_000 }).then(() => null, (error: unknown) => error);
    expect((failure as IqgateError).details).toMatchObject({ librdkafkaCode: -185 });
    expect(Date.now() - started).toBeLessThan(2_000);
    // An error that requires an abort is never retried, busy coordinator or not.
    const abortable = fakeCall(() => rdError(51, { isTxnRequiresAbort: true }));
    await expect(callRetrying(abortable.run, 'send offsets', { budgetMs: 1_000, busyBudgetMs: 5_000 })).rejects.toBeInstanceOf(IqgateError);
    expect(abortable.timeouts).toHaveLength(1);
  });

  it('gives each attempt at most the plain budget, and falls back to it once the coordinator stops answering busy', async () => {
    // Busy for 300 ms, then the broker goes away (_TIMED_OUT): the call fails with that error
    // about one plain budget later, not at the end of the busy budget.
    const thenAway = fakeCall((elapsed) => (elapsed < 300 ? rdError(51, { isRetriable: true }) : rdError(-185, { isRetriable: true })));
    const started = Date.now();
    const failure = await callRetrying(thenAway.run, 'send offsets', { budgetMs: 100, busyBudgetMs: 5_000 }).then(() => null, (error: unknown) => error);
    expect((failure as IqgateError).details).toMatchObject({ librdkafkaCode: -185 });
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(Math.max(...thenAway.timeouts)).toBeLessThanOrEqual(100);
    // NOT_COORDINATOR is also what a call gets while the coordinator's broker is away: plain budget.
    const moved = fakeCall(() => rdError(16));
    const movedStarted = Date.now();
    await expect(callRetrying(moved.run, 'init', { budgetMs: 100, busyBudgetMs: 5_000 })).rejects.toBeInstanceOf(IqgateError);
    expect(Date.now() - movedStarted).toBeLessThan(2_500);
  });

  it('resumes a call that timed out up to its timed-out budget (a commit whose flush outlasts an attempt), and no longer', async () => {
    const slowFlush = (): ReturnType<typeof fakeCall> => fakeCall((elapsed) => (elapsed < 300 ? rdError(-185, { isRetriable: true }) : null));
    await expect(callRetrying(slowFlush().run, 'commit', { budgetMs: 100, busyBudgetMs: 5_000, timedOutBudgetMs: 1_500 })).resolves.toBeUndefined();
    // Without it, the plain budget: the same flush fails the call.
    await expect(callRetrying(slowFlush().run, 'commit', { budgetMs: 100, busyBudgetMs: 5_000 })).rejects.toBeInstanceOf(IqgateError);
    // Bounded: a flush that never ends fails the call once the timed-out budget is spent.
    const endless = fakeCall(() => rdError(-185, { isRetriable: true }));
    const started = Date.now();
    await expect(callRetrying(endless.run, 'commit', { budgetMs: 100, busyBudgetMs: 5_000, timedOutBudgetMs: 500 })).rejects.toBeInstanceOf(IqgateError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(Date.now() - started).toBeLessThan(2_500);
  });

  it('makes no attempt more once its client was abandoned', async () => {
    let abandoned = false;
    const stall = fakeCall(() => rdError(51, { isRetriable: true }));
    setTimeout(() => { abandoned = true; }, 150);
    const started = Date.now();
    await expect(callRetrying(stall.run, 'init', { budgetMs: 100, busyBudgetMs: 5_000, abandoned: () => abandoned })).rejects.toBeInstanceOf(IqgateError);
    expect(Date.now() - started).toBeLessThan(2_500);
  });
});

