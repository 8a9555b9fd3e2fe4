/**
 * Process entry for the wordcount example (and the crash tests' child process). Configured by
 * environment:
 *   KAFKA_BROKERS (default 127.0.0.1:19092), WORDCOUNT_APP_ID (wordcount),
 *   WORDCOUNT_INPUT (wordcount-input), WORDCOUNT_OUTPUT (wordcount-output),
 *   IQGATE_STATE_DIR (default: in-memory stores), IQGATE_GUARANTEE (exactly_once | at_least_once),
 *   IQGATE_SESSION_TIMEOUT_MS, IQGATE_CACHE_MAX_BYTES, IQGATE_LOG_LEVEL,
 *   WORDCOUNT_GENERATE=<n>: first produce n lines (creating the input topic if needed),
 *   WORDCOUNT_PORT=<port>: serve the gateway on 127.0.0.1:<port> and advertise it (routing),
 *   WORDCOUNT_HOST (with WORDCOUNT_PORT): the address to listen on instead of 127.0.0.1 (beyond
 *   loopback the gateway needs IQGATE_ANONYMOUS=true: the example has no credentials),
 *   IQGATE_ADVERTISED_URL (with WORDCOUNT_PORT): the URL other instances reach this one by,
 *   default http://<host>:<port>/graphql,
 *   IQGATE_NUM_STANDBY_REPLICAS (with WORDCOUNT_PORT): standby replicas of each task,
 *   IQGATE_TRANSACTION_TIMEOUT_MS: the transaction timeout (keep it below the session timeout).
 * SIGTERM/SIGINT stop it gracefully. Compiled: `npm run build && node dist/examples/wordcount/main.js`
 * (the crash tests run this file under tsx).
 */
import '../../src/kafka/kafkajs-patches.js';
import { installShutdownHooks } from '../../src/runtime/shutdown-hooks.js';
import { runWordcount } from './run-wordcount.js';
import { produceLines } from './line-generator.js';
import { Kafka, logLevel } from 'kafkajs';

const env = process.env;
const num = (name: string): number | undefined => (env[name] === undefined || env[name] === '' ? undefined : Number(env[name]));
const brokers = (env.KAFKA_BROKERS ?? '127.0.0.1:19092').split(',');
const inputTopic = env.WORDCOUNT_INPUT ?? 'wordcount-input';
const outputTopic = env.WORDCOUNT_OUTPUT ?? 'wordcount-output';

async function ensureTopics(): Promise<void> {
  const admin = new Kafka({ clientId: 'wordcount-setup', brokers, logLevel: logLevel.ERROR }).admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const topics = [inputTopic, outputTopic].filter((t) => !existing.has(t)).map((topic) => ({ topic, numPartitions: num('WORDCOUNT_PARTITIONS') ?? 4 }));
    if (topics.length > 0) await admin.createTopics({ topics, waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}

const generate = num('WORDCOUNT_GENERATE');
if (generate !== undefined) {
  await ensureTopics();
  await produceLines({ brokers, topic: inputTopic, seed: num('WORDCOUNT_SEED') ?? 1, count: generate });
}

const sessionTimeoutMs = num('IQGATE_SESSION_TIMEOUT_MS');
const cacheMaxBytes = num('IQGATE_CACHE_MAX_BYTES');
const port = num('WORDCOUNT_PORT');
const host = env.WORDCOUNT_HOST || '127.0.0.1';
const advertisedUrl = env.IQGATE_ADVERTISED_URL || `http://${host}:${port}/graphql`;
const transactionTimeoutMs = num('IQGATE_TRANSACTION_TIMEOUT_MS');
const standbys = num('IQGATE_NUM_STANDBY_REPLICAS');
const runtime = await runWordcount({
  brokers,
  inputTopic,
  outputTopic,
  applicationId: env.WORDCOUNT_APP_ID ?? 'wordcount',
  processingGuarantee: env.IQGATE_GUARANTEE === 'at_least_once' ? 'at_least_once' : 'exactly_once',
  logLevel: (env.IQGATE_LOG_LEVEL as 'info' | undefined) ?? 'info',
  ...(env.IQGATE_STATE_DIR ? { stateDir: env.IQGATE_STATE_DIR } : {}),
  ...(sessionTimeoutMs !== undefined ? { sessionTimeoutMs, heartbeatIntervalMs: Math.max(100, Math.floor(sessionTimeoutMs / 5)) } : {}),
  ...(cacheMaxBytes !== undefined ? { cacheMaxBytes } : {}),
  ...(port !== undefined ? { advertisedUrl } : {}),
  ...(standbys !== undefined ? { numStandbyReplicas: standbys } : {}),
  ...(transactionTimeoutMs !== undefined ? { transactionTimeoutMs } : {}),
});
installShutdownHooks(runtime);
if (port !== undefined) {
  const { serve } = await import('../../src/serve.js');
  const server = await serve(runtime, { port, host, ...(env.IQGATE_ANONYMOUS === 'true' ? { auth: { anonymous: true } } : {}) });
  runtime.logger.info({ url: server.url }, 'serving');
}
runtime.done.catch(() => process.exit(1));
