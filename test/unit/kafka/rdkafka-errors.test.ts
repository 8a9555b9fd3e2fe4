import { describe, expect, it } from 'vitest';
import { IqgateError } from '../../../src/errors.js';
import { fromRdkafkaError } from '../../../src/kafka/librdkafka/rdkafka-errors.js';
import { isRetriableTxnError } from '../../../src/kafka/librdkafka/rdkafka-stream-producer.js';

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
});
