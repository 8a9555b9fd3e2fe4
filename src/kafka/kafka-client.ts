/**
 * Builds the kafkajs client. src/kafka/ is the only importer of kafkajs (lint enforces it).
 * kafkajs' logs go through a caller's structured logger (docs/kafkajs-notes.md §7: kafkajs filters
 * levels itself before calling the logCreator).
 */
// Must precede the first kafkajs import (see the module's comment).
import { assertKafkajsPatched } from './kafkajs-patches.js';
import { createRequire } from 'node:module';
import { Kafka, logLevel as KafkaLogLevel, type KafkaConfig, type logCreator } from 'kafkajs';
import { kafkajsSecurity, type KafkaSecurity } from './kafka-security.js';

export type KafkaLogLevelName = 'nothing' | 'error' | 'warn' | 'info' | 'debug';

export interface KafkaLogSink {
  error(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  debug(fields: Record<string, unknown>, message: string): void;
}

export interface KafkaClientOptions {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly logLevel?: KafkaLogLevelName;
  readonly log?: KafkaLogSink;
  readonly connectionTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
  /** TLS and SASL (kafka-security.ts); default plaintext. */
  readonly security?: KafkaSecurity;
}

const LEVELS: Record<KafkaLogLevelName, KafkaLogLevel> = {
  nothing: KafkaLogLevel.NOTHING,
  error: KafkaLogLevel.ERROR,
  warn: KafkaLogLevel.WARN,
  info: KafkaLogLevel.INFO,
  debug: KafkaLogLevel.DEBUG,
};

/** Throws INVALID_CONFIG when kafkajs was loaded before its patches (see assertKafkajsPatched). */
export function createKafka(options: KafkaClientOptions): Kafka {
  assertKafkajsPatched();
  const sink = options.log;
  // kafkajs logs at ERROR what it is about to retry and what it recovers from by itself.
  // - Routine conditions — a group coordinator still loading after a broker start,
  //   CONCURRENT_TRANSACTIONS while the previous transaction's markers are written, a
  //   rebalance, a leader moving — are how a Kafka client works, not errors: debug. They are
  //   recognised by their message in kafkajs' own table of protocol errors, as kafkajs logs
  //   them (`Crash: KafkaJSProtocolError: <message>`, `Failed to send messages: <message>`, or
  //   in the `error` field). A fenced transactional producer (INVALID_PRODUCER_EPOCH) is among
  //   them: the failed call reaches the task, whose recovery says what it means — expected when
  //   an eager rebalance gave the task to its new owner (info), a zombie's fence otherwise (warn).
  //   kafkajs logged it once per fenced request, 56–75 lines per join in bench:scale.
  // - Any other failure of an attempt kafkajs retries (its retrier adds `retryTime`), and a
  //   consumer crash (group-consumer.ts reports every crash itself, with its code): warn. When
  //   the retries run out, the caller gets the error and reports it.
  const require = createRequire(import.meta.url);
  const { errorCodes } = require('kafkajs/src/protocol/error') as { errorCodes: ReadonlyArray<{ type: string; message: string }> };
  const routineTypes = new Set([
    'GROUP_LOAD_IN_PROGRESS', 'GROUP_COORDINATOR_NOT_AVAILABLE', 'NOT_COORDINATOR_FOR_GROUP', 'REBALANCE_IN_PROGRESS',
    'UNKNOWN_MEMBER_ID', 'CONCURRENT_TRANSACTIONS', 'UNSTABLE_OFFSET_COMMIT', 'LEADER_NOT_AVAILABLE',
    'NOT_LEADER_FOR_PARTITION', 'FENCED_LEADER_EPOCH', 'UNKNOWN_LEADER_EPOCH', 'OFFSET_NOT_AVAILABLE',
    'UNKNOWN_TOPIC_OR_PARTITION', 'NOT_CONTROLLER', 'FETCH_SESSION_ID_NOT_FOUND', 'INVALID_FETCH_SESSION_EPOCH',
    'INVALID_PRODUCER_EPOCH',
  ]);
  const routineMessages = errorCodes.filter((e) => routineTypes.has(e.type)).map((e) => e.message);
  const isRoutine = (message: string, error: unknown): boolean =>
    routineMessages.some((m) => message.includes(m) || (typeof error === 'string' && error.includes(m)));
  const creator: logCreator = () => ({ namespace, level, log }) => {
    if (sink === undefined) return;
    const { message, ...extra } = log;
    const fields = { namespace, ...extra };
    const text = String(message);
    const { error, retryTime } = extra as { error?: unknown; retryTime?: unknown };
    // The Connection namespace logs every error response at ERROR (rebalance in progress,
    // concurrent transactions, …); the callers retry or surface what matters themselves.
    if (namespace === 'Connection') sink.debug(fields, text);
    else if (level <= KafkaLogLevel.WARN && isRoutine(text, error)) sink.debug(fields, text);
    else if (level === KafkaLogLevel.ERROR && (retryTime !== undefined || text.startsWith('Crash: '))) sink.warn(fields, text);
    else if (level === KafkaLogLevel.ERROR) sink.error(fields, text);
    else if (level === KafkaLogLevel.WARN) sink.warn(fields, text);
    else if (level === KafkaLogLevel.INFO) sink.info(fields, text);
    else sink.debug(fields, text);
  };
  return new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    logLevel: LEVELS[options.logLevel ?? 'error'],
    logCreator: creator,
    connectionTimeout: options.connectionTimeoutMs ?? 3000,
    requestTimeout: options.requestTimeoutMs ?? 30000,
    // Start-up retries are the runtime's (with its own back-off and clear errors); keep kafkajs' short.
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2000 },
    ...(kafkajsSecurity(options.security) as Pick<KafkaConfig, 'ssl' | 'sasl'>),
  });
}
