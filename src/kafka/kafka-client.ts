/**
 * Builds the kafkajs client. src/kafka/ is the only importer of kafkajs (lint enforces it).
 * kafkajs' logs go through a caller's structured logger (KAFKAJS-NOTES §7: kafkajs filters
 * levels itself before calling the logCreator).
 */
// Must precede the first kafkajs import (see the module's comment).
import { assertKafkajsPatched } from './kafkajs-patches.js';
import { Kafka, logLevel as KafkaLogLevel, type logCreator } from 'kafkajs';

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
  const creator: logCreator = () => ({ namespace, level, log }) => {
    if (sink === undefined) return;
    const { message, ...extra } = log;
    const fields = { namespace, ...extra };
    // The Connection namespace logs every error response at ERROR (rebalance in progress,
    // concurrent transactions, …); the callers retry or surface what matters themselves.
    if (namespace === 'Connection') sink.debug(fields, String(message));
    else if (level === KafkaLogLevel.ERROR) sink.error(fields, String(message));
    else if (level === KafkaLogLevel.WARN) sink.warn(fields, String(message));
    else if (level === KafkaLogLevel.INFO) sink.info(fields, String(message));
    else sink.debug(fields, String(message));
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
  });
}
