import { describe, expect, it } from 'vitest';
import { toIqgateError } from '../../../src/kafka/kafka-errors.js';

const kafkajsError = (name: string, message: string, extra: Record<string, unknown> = {}): Error => Object.assign(new Error(message), { name, ...extra });

describe('kafkajs errors as iqgate codes', () => {
  it('call every way kafkajs says "no broker" BROKER_UNAVAILABLE (retriable), wrapped or not', () => {
    const unreachable = [
      kafkajsError('KafkaJSConnectionError', 'Connection error: connect ECONNREFUSED 127.0.0.1:9092', { code: 'ECONNREFUSED' }),
      kafkajsError('KafkaJSConnectionClosedError', 'Closed connection'),
      kafkajsError('KafkaJSRequestTimeoutError', 'Request Produce(key: 0, version: 7) timed out'),
      // The consumer's fetch loop, once its broker went away (kafkajs fetchManager.js).
      kafkajsError('KafkaJSNoBrokerAvailableError', 'No broker available'),
      kafkajsError('KafkaJSNumberOfRetriesExceeded', 'No broker available', { cause: kafkajsError('KafkaJSNoBrokerAvailableError', 'No broker available') }),
    ];
    for (const error of unreachable) {
      expect(toIqgateError(error, 'consumer of group app'), error.name).toMatchObject({ code: 'BROKER_UNAVAILABLE', retriable: true });
    }
  });

  it('keeps fenced producers and other failures apart', () => {
    expect(toIqgateError(kafkajsError('KafkaJSProtocolError', 'epoch', { type: 'INVALID_PRODUCER_EPOCH' }), 'commit').code).toBe('PRODUCER_FENCED');
    expect(toIqgateError(kafkajsError('KafkaJSProtocolError', 'loading', { type: 'COORDINATOR_LOAD_IN_PROGRESS' }), 'commit').code).toBe('KAFKA_ERROR');
  });
});
