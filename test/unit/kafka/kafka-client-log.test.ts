/**
 * What kafkajs' log lines become in iqgate's logger: routine retries at debug, other retried
 * failures at warn, the rest at kafkajs' own level. Driven through the client's own logger, with
 * the messages and fields kafkajs 2.2.4 logs them with (consumer/index.js, producer/sendMessages.js,
 * consumer/runner.js, cluster/brokerPool.js).
 */
import { describe, expect, it } from 'vitest';
import { createKafka, type KafkaLogSink } from '../../../src/kafka/kafka-client.js';

type Level = keyof KafkaLogSink;

/** A client logging at kafkajs' DEBUG into a sink that records (level, namespace, message). */
function recordingClient(): { log(namespace: string, level: 'error' | 'warn' | 'info', message: string, extra?: object): void; lines: Array<[Level, string, string]> } {
  const lines: Array<[Level, string, string]> = [];
  const record = (level: Level) => (fields: Record<string, unknown>, message: string) => lines.push([level, String(fields.namespace), message]);
  const kafka = createKafka({
    brokers: ['127.0.0.1:1'],
    clientId: 'log-levels',
    logLevel: 'debug',
    log: { error: record('error'), warn: record('warn'), info: record('info'), debug: record('debug') },
  });
  return {
    lines,
    log: (namespace, level, message, extra = {}) => kafka.logger().namespace(namespace)[level](message, extra),
  };
}

describe('the kafkajs log mapping', () => {
  it('logs routine retries at debug: a coordinator still loading, CONCURRENT_TRANSACTIONS, a rebalance, a fenced producer', () => {
    const c = recordingClient();
    c.log('Consumer', 'error', "Crash: KafkaJSProtocolError: The coordinator is loading and hence can't process requests for this group", { groupId: 'g', retryCount: 0 });
    c.log('Producer', 'error', 'Failed to send messages: The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing', { retryCount: 0, retryTime: 18 });
    c.log('Runner', 'warn', 'The group is rebalancing, re-joining', { groupId: 'g', error: 'The group is rebalancing, so a rejoin is needed' });
    c.log('Runner', 'error', 'The coordinator is not aware of this member, re-joining the group', { groupId: 'g', error: 'The coordinator is not aware of this member' });
    c.log('Producer', 'error', 'Failed to send messages: There is no leader for this topic-partition as we are in the middle of a leadership election', { retryCount: 1, retryTime: 300 });
    // Fenced: the task's recovery reports it, at the level its cause deserves.
    c.log('Producer', 'error', "Producer attempted an operation with an old epoch. Either there is a newer producer with the same transactionalId, or the producer's transaction has been expired by the broker", { retryCount: 0, retryTime: 24 });
    expect(c.lines.map(([level]) => level)).toEqual(['debug', 'debug', 'debug', 'debug', 'debug', 'debug']);
  });

  it('logs other retried failures and consumer crashes at warn', () => {
    const c = recordingClient();
    c.log('Consumer', 'error', 'Restarting the consumer in 300ms', { groupId: 'g', retryCount: 0, retryTime: 300 });
    c.log('BrokerPool', 'error', 'Failed to connect to seed broker, trying another broker from the list: Connection error: connect ECONNREFUSED 127.0.0.1:1', { retryCount: 2, retryTime: 800 });
    c.log('Consumer', 'error', 'Crash: KafkaJSNumberOfRetriesExceeded: Connection error: connect ECONNREFUSED 127.0.0.1:1', { groupId: 'g', retryCount: 5 });
    expect(c.lines.map(([level]) => level)).toEqual(['warn', 'warn', 'warn']);
  });

  it('keeps kafkajs level for everything else, and Connection lines at debug', () => {
    const c = recordingClient();
    c.log('Consumer', 'error', 'Caught error when disconnecting the consumer: boom', { groupId: 'g' });
    c.log('Admin', 'warn', 'Could not delete topics', { error: 'timeout' });
    c.log('Consumer', 'info', 'Starting', { groupId: 'g' });
    c.log('Connection', 'error', 'Response Heartbeat(key: 12, version: 3)', { error: 'The group is rebalancing, so a rejoin is needed' });
    c.log('Connection', 'error', 'Response Produce(key: 0, version: 7)', { error: 'something unusual' });
    expect(c.lines).toEqual([
      ['error', 'Consumer', 'Caught error when disconnecting the consumer: boom'],
      ['warn', 'Admin', 'Could not delete topics'],
      ['info', 'Consumer', 'Starting'],
      ['debug', 'Connection', 'Response Heartbeat(key: 12, version: 3)'],
      ['debug', 'Connection', 'Response Produce(key: 0, version: 7)'],
    ]);
  });
});
