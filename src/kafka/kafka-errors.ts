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

/**
 * The error and what it wraps (originalError, cause) and aggregates (a KafkaJSAggregateError's
 * `errors`, e.g. one per topic of a createTopics), breadth first, at most 16.
 */
function chain(error: unknown): KafkaLikeError[] {
  const seen: KafkaLikeError[] = [];
  const queue: unknown[] = [error];
  while (queue.length > 0 && seen.length < 16) {
    const current = queue.shift();
    if (current === null || typeof current !== 'object' || seen.includes(current as KafkaLikeError)) continue;
    const e = current as KafkaLikeError & { errors?: unknown };
    seen.push(e);
    queue.push(e.originalError ?? e.cause);
    if (Array.isArray(e.errors)) queue.push(...e.errors);
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

/** Node's TLS verification and handshake failures, as a kafkajs connection error carries them in `code`. */
const TLS_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_UNTRUSTED', 'CERT_REVOKED',
  'ERR_TLS_CERT_ALTNAME_INVALID', 'ERR_SSL_WRONG_VERSION_NUMBER', 'EPROTO',
]);

/**
 * A security failure (kafka-security.ts): the credentials, the TLS handshake or the ACLs. Not
 * retriable — trying the same again gets the same answer — so start-up stops with the code at
 * once instead of backing off for minutes. A transactional id's authorization failure stays
 * with isFencedError, where kafkajs' old transactional API versions put a fenced producer.
 */
export function kafkaSecurityError(error: unknown, context: string): IqgateError | undefined {
  const errors = chain(error);
  const message = error instanceof Error ? error.message : String(error);
  if (errors.some((e) => e.name === 'KafkaJSSASLAuthenticationError' || e.type === 'SASL_AUTHENTICATION_FAILED' || e.type === 'UNSUPPORTED_SASL_MECHANISM' || e.type === 'ILLEGAL_SASL_STATE')) {
    return new IqgateError('KAFKA_AUTHENTICATION_FAILED', `${context}: SASL authentication failed (${message})`, { cause: error });
  }
  if (errors.some((e) => typeof e.code === 'string' && TLS_CODES.has(e.code))) {
    return new IqgateError('KAFKA_TLS_FAILED', `${context}: TLS with the broker failed (${message})`, { cause: error });
  }
  const denied = errors.find((e) => typeof e.type === 'string' && e.type.endsWith('_AUTHORIZATION_FAILED') && e.type !== 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED');
  if (denied !== undefined) return new IqgateError('KAFKA_AUTHORIZATION_FAILED', `${context}: not authorized (${denied.type}: ${message})`, { cause: error });
  return undefined;
}

export function toIqgateError(error: unknown, context: string): IqgateError {
  if (error instanceof IqgateError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const security = kafkaSecurityError(error, context);
  if (security !== undefined) return security;
  if (isFencedError(error)) return new IqgateError('PRODUCER_FENCED', `${context}: producer fenced (${message})`, { cause: error });
  if (isConnectionError(error)) return new IqgateError('BROKER_UNAVAILABLE', `${context}: Kafka broker unreachable (${message})`, { cause: error, retriable: true });
  if (chain(error).some((e) => e.type === 'UNKNOWN_TOPIC_OR_PARTITION')) {
    return new IqgateError('TOPIC_NOT_FOUND', `${context}: ${message}`, { cause: error, retriable: true });
  }
  return new IqgateError('KAFKA_ERROR', `${context}: ${message}`, { cause: error, retriable: true });
}
