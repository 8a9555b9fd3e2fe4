/**
 * The one error class of iqgate. Every deliberate failure carries a stable `code` from
 * ERROR_CODES (messages may change, codes may not), whether retrying can help, and the
 * underlying `cause`. Programmer mistakes (wrong types passed by our own code) stay plain
 * TypeErrors. The GraphQL layer passes IqgateErrors to clients as `extensions.code` and
 * masks everything else.
 */
export const ERROR_CODES = {
  // store
  STORE_CLOSED: 'The store (or the database under it) is closed or closing.',
  STORE_NOT_FOUND: 'No store with that name is defined.',
  PARTITION_NOT_FOUND: 'The store has no such partition on this instance.',
  DECODE_FAILED: 'Bytes could not be decoded by the serde.',
  ENCODE_FAILED: 'A value could not be encoded by the serde.',
  KEY_TOO_LARGE: 'A key is larger than the configured limit.',
  VALUE_TOO_LARGE: 'A value is larger than the configured limit.',
  INVALID_RANGE: 'A range query whose from bound sorts after its to bound, or with a bad limit.',
  STORE_EXCEPTION: 'The underlying storage failed.',
  STATE_DIR_LOCKED: 'The state directory is in use by another running instance (its LevelDB lock is held).',
  STATE_CORRUPTED: 'LevelDB found the state directory\'s files damaged (a checksum mismatch, a truncated file); the next start wipes them and restores every store from its changelog.',
  STORE_DISK_FULL: 'The state directory\'s disk is full (ENOSPC): the commit did not happen, the committed state is the previous one; retried once space is freed.',
  STATE_DIR_NOT_WRITABLE: 'The state directory cannot be created or written by this process.',
  // query
  INVALID_KEY: 'A key argument could not be converted with the store\'s key serde.',
  INVALID_ARGUMENT: 'A query argument is malformed or out of bounds.',
  INVALID_CURSOR: 'A pagination cursor is malformed or belongs to another query.',
  STALE_CURSOR: 'The snapshot a pagination cursor\'s listing was read from is no longer held by the instance that took it (it expired after cursorSnapshotTtlMs, was evicted, or one of its partitions closed or moved); start the listing again without a cursor.',
  PAGE_SIZE_EXCEEDED: 'The requested page size is above the server limit.',
  NOT_UP_TO_BOUND: 'The store did not reach the requested position bound in time.',
  NOT_STARTED: 'The runtime is not running yet.',
  SUBSCRIPTION_OVERFLOW: 'A subscriber fell too far behind; its buffered events exceeded the limit and the subscription ended.',
  PARTITION_REVOKED: 'A rebalance moved the partition to another instance (or this one lost it); ask its new owner.',
  PARTITION_ASSIGNED: 'A partition a subscription watches opened on this instance after it subscribed (a task opened after the start or a rebalance); subscribe again, from resumeAfter, to include it.',
  QUERY_TOO_DEEP: 'The GraphQL operation is nested deeper than the server allows.',
  QUERY_TOO_COSTLY: 'The GraphQL operation\'s estimated cost is above the server limit.',
  TOO_MANY_ALIASES: 'The GraphQL operation uses more aliases than the server allows.',
  TOO_MANY_DIRECTIVES: 'The GraphQL operation uses more directives than the server allows.',
  TOO_MANY_TOKENS: 'The GraphQL document has more tokens than the server allows.',
  GRAPHQL_PARSE_FAILED: 'The GraphQL document is not syntactically valid.',
  GRAPHQL_VALIDATION_FAILED: 'The GraphQL operation does not fit the schema (unknown field, wrong argument type, ...).',
  INTERNAL_SERVER_ERROR: 'An unexpected failure; details are logged, not sent to the client.',
  // gateway security (src/graphql/gate/)
  UNAUTHENTICATED: 'The request carries no valid credentials (bearer JWT, API key or a verified instance signature); HTTP 401.',
  FORBIDDEN: 'The credentials are valid but do not grant this store or this endpoint; HTTP 403.',
  CSRF_CHECK_FAILED: 'A GET or non-JSON POST GraphQL request without a CSRF prevention header (x-graphql-yoga-csrf or graphql-require-preflight); HTTP 403.',
  RATE_LIMITED: 'The client sent more requests than its rate limit allows; retry after the Retry-After seconds; HTTP 429.',
  BODY_TOO_LARGE: 'The request body is larger than the gateway accepts (maxBodyBytes); HTTP 413.',
  TOO_MANY_SUBSCRIPTIONS: 'The client already holds as many open subscriptions as the gateway allows per client.',
  // processing and kafka
  INVALID_CONFIG: 'A configuration value is missing or invalid.',
  ILLEGAL_STATE_TRANSITION: 'A lifecycle transition that the state machine forbids.',
  BROKER_UNAVAILABLE: 'The Kafka broker could not be reached.',
  TOPIC_NOT_FOUND: 'A topic the topology needs does not exist.',
  PRODUCER_FENCED: 'Another producer with the same transactional id took over.',
  PROCESSING_FAILED: 'A processor threw while handling a record.',
  TRANSACTION_ABORTED: 'A processor aborted its task\'s open transaction (ProcessorContext.abortTransaction); its other records are replayed.',
  KAFKA_ERROR: 'A Kafka request failed (the cause carries the client error).',
  KAFKA_AUTHENTICATION_FAILED: 'The brokers refused the SASL credentials (wrong user or password, or a mechanism they do not enable); not retried.',
  KAFKA_TLS_FAILED: 'The TLS handshake with a broker failed (its certificate is not trusted or not for its address, or it does not speak TLS); not retried.',
  KAFKA_AUTHORIZATION_FAILED: 'The brokers\' authorizer denied the principal a topic, its group or the cluster (missing ACLs); not retried.',
  TRANSACTION_PENDING: 'A changelog partition\'s stable end stayed behind an open transaction (its previous owner\'s) for longer than a transaction may last; opening the task is retried.',
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface IqgateErrorOptions {
  cause?: unknown;
  retriable?: boolean;
  details?: Record<string, unknown>;
}

export class IqgateError extends Error {
  override readonly name = 'IqgateError';
  readonly code: ErrorCode;
  readonly retriable: boolean;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: IqgateErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retriable = options.retriable ?? false;
    this.details = options.details ?? {};
  }
}

export function isIqgateError(error: unknown, code?: ErrorCode): error is IqgateError {
  return error instanceof IqgateError && (code === undefined || error.code === code);
}

/** Whether `code` is one of ours (a peer's answer, say, may carry any string). */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}
