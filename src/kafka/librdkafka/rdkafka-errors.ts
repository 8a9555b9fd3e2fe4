/**
 * librdkafka errors to iqgate's coded errors, at the adapter boundary. Codes are librdkafka's
 * (negative: client-side, `RD_KAFKA_RESP_ERR__*`; positive: the broker's protocol codes).
 */
import { IqgateError } from '../../errors.js';

interface RdkafkaLikeError {
  readonly code?: number;
  readonly message?: string;
  readonly isFatal?: boolean;
  readonly isRetriable?: boolean;
  readonly isTxnRequiresAbort?: boolean;
}

/** This producer is done for: another one took its transactional id, or its epoch is stale. */
const FENCED = new Set([
  -144, // _FENCED: the client raised a fatal "fenced" error
  47, // INVALID_PRODUCER_EPOCH
  90, // PRODUCER_FENCED
  82, // FENCED_INSTANCE_ID: another member took our group.instance.id
  // KIP-447: the group fences a zombie's transactional offset commit by its stale generation.
  22, // ILLEGAL_GENERATION
  25, // UNKNOWN_MEMBER_ID
]);

/** The broker cannot be reached, or did not answer in time. */
const UNREACHABLE = new Set([
  -195, // _TRANSPORT
  -187, // _ALL_BROKERS_DOWN
  -185, // _TIMED_OUT
  -192, // _MSG_TIMED_OUT
  -193, // _RESOLVE
  7, // REQUEST_TIMED_OUT
  15, // COORDINATOR_NOT_AVAILABLE
  14, // COORDINATOR_LOAD_IN_PROGRESS
  16, // NOT_COORDINATOR
]);

const UNKNOWN_TOPIC = new Set([
  3, // UNKNOWN_TOPIC_OR_PART
  -188, // _UNKNOWN_TOPIC
  -190, // _UNKNOWN_PARTITION
]);

/**
 * Client events (`event.error`) reach JavaScript as Error objects whose code the package does
 * not parse (lib/error.js: code -1, "unknown"): recognise librdkafka's own texts for them.
 */
const UNREACHABLE_MESSAGE = /all broker connections are down|broker transport failure|connection refused|failed to resolve|timed out/i;

/** Security failures (../kafka-security.ts): not retried, as on kafkajs (kafka-errors.ts). */
const AUTHENTICATION = new Set([-169, 58]); // _AUTHENTICATION; SASL_AUTHENTICATION_FAILED
const TLS = new Set([-181]); // _SSL
const AUTHORIZATION = new Set([29, 30, 31]); // TOPIC_, GROUP_, CLUSTER_AUTHORIZATION_FAILED
const AUTHENTICATION_MESSAGE = /SASL authentication (error|failed)|Authentication failed/i;
const TLS_MESSAGE = /SSL handshake failed|certificate verify failed|ssl\.ca\.location failed/i;

export function rdkafkaCode(error: unknown): number | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const code = (error as RdkafkaLikeError).code;
  return typeof code === 'number' ? code : undefined;
}

export function isRdkafkaFatal(error: unknown): boolean {
  return error !== null && typeof error === 'object' && (error as RdkafkaLikeError).isFatal === true;
}

/** `RD_KAFKA_RESP_ERR__FATAL`: the client raised a fatal error and is unusable from now on. */
const ERR_FATAL = -150;
/** Its text, as an unparsed client event carries it (code -1). */
const FATAL_MESSAGE = /^(local: )?fatal error$/i;

/**
 * A consumer's error that ends it: librdkafka's flag, or its ERR__FATAL code — which is how a
 * fatal consumer error reaches JavaScript (a consume() error with code -150, or a client event
 * with its text; the binding sets `isFatal` on neither). For a consumer that is e.g. a static
 * member fenced by another one with its group.instance.id (FENCED_INSTANCE_ID): librdkafka then
 * fails every later call, so the consumer does not come back by itself.
 */
export function isFatalClientError(error: unknown): boolean {
  if (isRdkafkaFatal(error)) return true;
  const code = rdkafkaCode(error);
  if (code === ERR_FATAL) return true;
  const message = error !== null && typeof error === 'object' ? (error as RdkafkaLikeError).message : undefined;
  return (code === undefined || code === -1) && typeof message === 'string' && FATAL_MESSAGE.test(message);
}

export function fromRdkafkaError(error: unknown, context: string): IqgateError {
  if (error instanceof IqgateError) return error;
  const message = error instanceof Error ? error.message : typeof error === 'object' && error !== null ? String((error as RdkafkaLikeError).message) : String(error);
  const code = rdkafkaCode(error);
  const flags = error !== null && typeof error === 'object' ? (error as RdkafkaLikeError) : {};
  // librdkafka's own flags travel along: whether it called the error retriable or abortable is
  // what decides a transactional call's next step, and what a log reader needs to see.
  const details = code === undefined ? undefined : {
    librdkafkaCode: code,
    ...(flags.isRetriable === undefined ? {} : { isRetriable: flags.isRetriable }),
    ...(flags.isTxnRequiresAbort === undefined ? {} : { isTxnRequiresAbort: flags.isTxnRequiresAbort }),
    ...(flags.isFatal === undefined ? {} : { isFatal: flags.isFatal }),
  };
  const options = (retriable: boolean) => ({ cause: error, retriable, ...(details === undefined ? {} : { details }) });
  const unparsed = code === undefined || code === -1;
  if ((code !== undefined && AUTHENTICATION.has(code)) || (unparsed && AUTHENTICATION_MESSAGE.test(message))) {
    return new IqgateError('KAFKA_AUTHENTICATION_FAILED', `${context}: SASL authentication failed (${message})`, options(false));
  }
  if ((code !== undefined && TLS.has(code)) || (unparsed && TLS_MESSAGE.test(message))) return new IqgateError('KAFKA_TLS_FAILED', `${context}: TLS with the broker failed (${message})`, options(false));
  if (code !== undefined && AUTHORIZATION.has(code)) return new IqgateError('KAFKA_AUTHORIZATION_FAILED', `${context}: not authorized (${message})`, options(false));
  if (code !== undefined && FENCED.has(code)) return new IqgateError('PRODUCER_FENCED', `${context}: producer fenced (${message})`, options(false));
  if ((code !== undefined && UNREACHABLE.has(code)) || ((code === undefined || code === -1) && UNREACHABLE_MESSAGE.test(message))) return new IqgateError('BROKER_UNAVAILABLE', `${context}: Kafka broker unreachable (${message})`, options(true));
  if (code !== undefined && UNKNOWN_TOPIC.has(code)) return new IqgateError('TOPIC_NOT_FOUND', `${context}: ${message}`, options(true));
  return new IqgateError('KAFKA_ERROR', `${context}: ${message}`, options(!isRdkafkaFatal(error)));
}
