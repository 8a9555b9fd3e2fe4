import { describe, expect, it } from 'vitest';
import type { RdkafkaModule } from '../../../src/kafka/librdkafka/native.js';
import { RdkafkaStreamProducer } from '../../../src/kafka/librdkafka/rdkafka-stream-producer.js';

type Callback = (err: unknown) => void;
type Call = 'init' | 'begin' | 'sendOffsets' | 'commit' | 'abort';

/** The shape lib/error.js gives a transactional call's error. */
function rdError(code: number, flags: { isRetriable?: boolean; isFatal?: boolean; isTxnRequiresAbort?: boolean } = {}): Error {
  return Object.assign(new Error(`librdkafka error ${code}`), { code, ...flags });
}

/**
 * A librdkafka Producer that answers each transactional call from a script (an error, or
 * success when the script for that call is empty) and records the calls it got.
 */
function fakeRdkafka(script: Partial<Record<Call, unknown[]>>) {
  const calls: Call[] = [];
  const answer = (call: Call, cb: Callback): void => {
    calls.push(call);
    const next = script[call]?.shift();
    setImmediate(() => cb(next ?? null));
  };
  class Producer {
    on(): this { return this; }
    connect(_options: unknown, cb: Callback): void { setImmediate(() => cb(null)); }
    disconnect(_timeout: number, cb: () => void): void { setImmediate(cb); }
    initTransactions(_timeout: number, cb: Callback): void { answer('init', cb); }
    beginTransaction(cb: Callback): void { answer('begin', cb); }
    produce(): void {}
    sendOffsetsToTransaction(_offsets: unknown, _consumer: unknown, _timeout: number, cb: Callback): void { answer('sendOffsets', cb); }
    commitTransaction(_timeout: number, cb: Callback): void { answer('commit', cb); }
    abortTransaction(_timeout: number, cb: Callback): void { answer('abort', cb); }
  }
  return { rd: { Producer } as unknown as RdkafkaModule, calls };
}

function producerOn(rd: RdkafkaModule, log?: { debug(fields: Record<string, unknown>, message: string): void }): RdkafkaStreamProducer {
  return new RdkafkaStreamProducer(rd, {
    brokers: ['127.0.0.1:1'],
    clientId: 'test',
    transactionalId: 'tx',
    callTimeoutMs: 1_000,
    consumer: () => ({}) as never,
    ...(log === undefined ? {} : { log: { debug: log.debug, info: () => {}, warn: () => {}, error: () => {} } }),
  });
}

describe('RdkafkaStreamProducer', () => {
  it('aborts a transaction whose commit failed (a record timed out) and reports the abort confirmed', async () => {
    const { rd, calls } = fakeRdkafka({ commit: [rdError(-185, { isTxnRequiresAbort: true })] });
    const producer = producerOn(rd);
    await producer.init();
    producer.produce([{ topic: 't', partition: 0, key: null, value: Buffer.from('v') }]);
    await expect(producer.commit()).rejects.toMatchObject({ code: 'BROKER_UNAVAILABLE' });
    // Before the fix commit() forgot its transaction on failure, so this returned false without
    // asking librdkafka, and every task of the cut was rolled back and re-opened.
    expect(await producer.abortAfterFailure()).toBe(true);
    expect(calls).toEqual(['init', 'begin', 'commit', 'abort']);
    await producer.close();
  });

  it('resumes a commit whose flush timed out until its records have a verdict, so the outcome is known (abort-only) instead of unknown', async () => {
    // bench:scale: a commit's flush timed out after its 10 s attempt (446 records outstanding);
    // giving up there left the commit to resume, librdkafka refused the abort (_CONFLICT), and all
    // 500 tasks of the cut were rolled back and re-opened. Resumed, the commit reports what became
    // of its records: here they timed out, so the transaction is abort-only and the abort is confirmed.
    const flushTimedOut = rdError(-185, { isRetriable: true });
    const { rd, calls } = fakeRdkafka({ commit: [flushTimedOut, flushTimedOut, rdError(-192, { isTxnRequiresAbort: true })] });
    const producer = new RdkafkaStreamProducer(rd, {
      brokers: ['127.0.0.1:1'], clientId: 'test', transactionalId: 'tx', consumer: () => ({}) as never,
      // The fake answers at once, so a budget of 0 ms is spent by the first answer.
      callTimeoutMs: 1, transactionTimeoutMs: 5_000,
    });
    await producer.init();
    producer.produce([{ topic: 't', partition: 0, key: null, value: Buffer.from('v') }]);
    await expect(producer.commit()).rejects.toBeDefined();
    expect(calls.filter((c) => c === 'commit')).toHaveLength(3);
    expect(await producer.abortAfterFailure()).toBe(true);
    await producer.close();
  });

  it('calls the outcome known at once when the failure had ruled the transaction abort-only, and lets the abort settle in the background until the client goes', async () => {
    // bench:scale: EndTxn(abort) answered, then the epoch bump waited 22 s for the abort markers
    // (7.5 s in another run, after which every task processed again what it had meanwhile).
    const timedOut = rdError(-185, { isRetriable: true });
    const { rd, calls } = fakeRdkafka({ commit: [rdError(-185, { isTxnRequiresAbort: true })], abort: Array.from({ length: 50 }, () => timedOut) });
    const producer = producerOn(rd);
    await producer.init();
    producer.produce([{ topic: 't', partition: 0, key: null, value: Buffer.from('v') }]);
    await expect(producer.commit()).rejects.toBeDefined();
    expect(await producer.abortAfterFailure()).toBe(true);
    const aborts = (): number => calls.filter((c) => c === 'abort').length;
    // Known before the abort was answered: the caller rewinds meanwhile.
    expect(aborts()).toBeLessThanOrEqual(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(aborts()).toBeGreaterThan(1); // resumed in the background
    // close() abandons it: the attempt in flight ends, then no attempt more.
    await producer.close();
    const after = calls.length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(calls.length).toBe(after);
  }, 10_000);

  it('never disconnects a client while its background abort is inside librdkafka, and close() during init() waits for the old client to go', async () => {
    const events: string[] = [];
    let abortsInFlight = 0;
    let instances = 0;
    class Producer {
      readonly id = (instances += 1);
      on(): this { return this; }
      connect(_options: unknown, cb: Callback): void { setImmediate(() => cb(null)); }
      disconnect(_timeout: number, cb: () => void): void {
        events.push(`disconnect ${this.id}${abortsInFlight > 0 ? ' during an abort' : ''}`);
        setImmediate(cb);
      }
      initTransactions(_timeout: number, cb: Callback): void { setImmediate(() => cb(null)); }
      beginTransaction(cb: Callback): void { setImmediate(() => cb(null)); }
      produce(): void {}
      sendOffsetsToTransaction(_o: unknown, _c: unknown, _t: number, cb: Callback): void { setImmediate(() => cb(null)); }
      commitTransaction(_timeout: number, cb: Callback): void { setImmediate(() => cb(rdError(-185, { isTxnRequiresAbort: true }))); }
      abortTransaction(_timeout: number, cb: Callback): void {
        // The coordinator is slow to write the abort markers: each attempt takes 100 ms.
        abortsInFlight += 1;
        events.push(`abort ${this.id}`);
        setTimeout(() => { abortsInFlight -= 1; cb(rdError(-185, { isRetriable: true })); }, 100);
      }
    }
    const producer = producerOn({ Producer } as unknown as RdkafkaModule);
    await producer.init();
    producer.produce([{ topic: 't', partition: 0, key: null, value: Buffer.from('v') }]);
    await expect(producer.commit()).rejects.toBeDefined();
    expect(await producer.abortAfterFailure()).toBe(true);
    // The next cycle initialises a fresh client while the abort is in flight; a stop comes meanwhile.
    const init = producer.init().then(() => 'initialised', () => 'refused');
    await new Promise((resolve) => setTimeout(resolve, 20));
    await producer.close();
    expect(events).toContain('disconnect 1');
    expect(events.filter((e) => e.endsWith('during an abort'))).toEqual([]);
    expect(await init).toBe('refused'); // closed meanwhile: no new client
    expect(instances).toBe(1);
  });

  it('calls the outcome unknown when a commit that may have reached the coordinator cannot be aborted', async () => {
    // A commit left to resume (retriable timeout): librdkafka refuses a conflicting abort.
    const conflict = rdError(-173, { isRetriable: true }); // _CONFLICT: "Conflicting commit_transaction API call is already in progress"
    const { rd, calls } = fakeRdkafka({ commit: [rdError(-185, { isRetriable: true }), rdError(-185, { isRetriable: true }), rdError(-185, { isRetriable: false })], abort: [conflict, conflict, conflict] });
    const producer = producerOn(rd);
    await producer.init();
    producer.produce([{ topic: 't', partition: 0, key: null, value: Buffer.from('v') }]);
    await expect(producer.commit()).rejects.toBeDefined();
    expect(await producer.abortAfterFailure()).toBe(false);
    expect(calls.filter((c) => c === 'abort')).toHaveLength(1); // the conflict is not waited out
    await producer.close();
  });

  it('reports an unknown outcome when librdkafka refuses the abort (fenced, or the commit may have reached the coordinator)', async () => {
    const { rd } = fakeRdkafka({ commit: [rdError(90, { isFatal: true })], abort: [rdError(-172, { isFatal: true })] });
    const producer = producerOn(rd);
    await producer.init();
    producer.produce([{ topic: 't', partition: 0, key: null, value: Buffer.from('v') }]);
    await expect(producer.commit()).rejects.toMatchObject({ code: 'PRODUCER_FENCED' });
    expect(await producer.abortAfterFailure()).toBe(false);
    await producer.close();
  });

  it('retries a busy coordinator within its budget and logs each failed attempt at debug', async () => {
    const { rd, calls } = fakeRdkafka({ sendOffsets: [rdError(51), rdError(51, { isRetriable: true })] });
    const lines: Array<{ fields: Record<string, unknown>; message: string }> = [];
    const producer = producerOn(rd, { debug: (fields, message) => lines.push({ fields, message }) });
    await producer.init();
    await producer.sendOffsets([{ topic: 't', partition: 0, offset: 1 }]);
    expect(calls.filter((c) => c === 'sendOffsets')).toHaveLength(3);
    const failed = lines.filter((l) => l.message === 'transactional call attempt failed');
    expect(failed.map((l) => [l.fields.attempt, l.fields.code, l.fields.retriable])).toEqual([[1, 51, true], [2, 51, true]]);
    expect(lines.some((l) => l.message === 'transactional call succeeded after retries' && l.fields.attempts === 3)).toBe(true);
    await producer.close();
  });
});
