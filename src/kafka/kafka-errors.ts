/**
 * Maps kafkajs errors to iqgate's coded errors at the adapter boundary, so nothing above
 * src/kafka/ tests kafkajs error names.
 */
import { IqgateError } from '../errors.js';

interface KafkaLikeError {
  name?: string;
  type?: string;
  message?: string;
  retriable?: boolean;
  cause?: unknown;
  originalError?: unknown;
  code?: string;
}

function chain(error: unknown): KafkaLikeError[] {
  const seen: KafkaLikeError[] = [];
  let current: unknown = error;
  while (current !== null && typeof current === 'object' && seen.length < 8) {
    const e = current as KafkaLikeError;
    seen.push(e);
    current = e.originalError ?? e.cause;
  }
  return seen;
}

/**
 * Fenced: brokers answer kafkajs' old transactional API versions with INVALID_PRODUCER_EPOCH
 * (code 47) rather than PRODUCER_FENCED (90, unknown to kafkajs): docs/kafkajs-notes.md §5 "When fenced".
 * The same code covers an expired transaction timeout; both mean "discard this producer".
 */
export function isFencedError(error: unknown): boolean {
  return chain(error).some((e) => e.type === 'INVALID_PRODUCER_EPOCH' || e.type === 'PRODUCER_FENCED'
    || e.type === 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED' || (e.type === 'KAFKAJS_UNKNOWN_ERROR_CODE' && /\b90\b/.test(e.message ?? '')));
}

/**
 * The broker cannot be reached. KafkaJSNoBrokerAvailableError is what the consumer's fetch loop
 * throws once it knows no broker at all (`fetchManager.js`), e.g. right after a broker it was
 * connected to went away.
 */
export function isConnectionError(error: unknown): boolean {
  return chain(error).some((e) => e.name === 'KafkaJSConnectionError' || e.name === 'KafkaJSConnectionClosedError'
    || e.name === 'KafkaJSBrokerNotFound' || e.name === 'KafkaJSNoBrokerAvailableError' || e.name === 'KafkaJSRequestTimeoutError'
    || e.code === 'ECONNREFUSED' || e.code === 'ENOTFOUND' || e.code === 'ETIMEDOUT' || e.code === 'EHOSTUNREACH');
}

export function toIqgateError(error: unknown, context: string): IqgateError {
  if (error instanceof IqgateError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (isFencedError(error)) return new IqgateError('PRODUCER_FENCED', `${context}: producer fenced (${message})`, { cause: error });
  if (isConnectionError(error)) return new IqgateError('BROKER_UNAVAILABLE', `${context}: Kafka broker unreachable (${message})`, { cause: error, retriable: true });
  if (chain(error).some((e) => e.type === 'UNKNOWN_TOPIC_OR_PARTITION')) {
    return new IqgateError('TOPIC_NOT_FOUND', `${context}: ${message}`, { cause: error, retriable: true });
  }
  return new IqgateError('KAFKA_ERROR', `${context}: ${message}`, { cause: error, retriable: true });
}
