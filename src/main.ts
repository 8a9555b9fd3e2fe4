/**
 * `npm start`: the iqgate demo in one process.
 *  1. a local Kafka broker (scripts/kafka/broker.ts), unless KAFKA_BROKERS names one;
 *  2. the wordcount example (examples/wordcount) on the processing runtime, exactly-once,
 *     with its `word-counts` store in LevelDB, fed by a small line generator;
 *  3. the GraphQL gateway over the runtime's stores, listening on PORT (GraphiQL at /graphql).
 * SIGTERM/SIGINT stop everything in reverse order (the runtime commits what it processed).
 *
 * Environment (validated at start-up):
 *   PORT                         4000
 *   HOST                         127.0.0.1 (0.0.0.0 in the Dockerfile)
 *   KAFKA_BROKERS                unset: start a local broker
 *   IQGATE_STATE_DIR             LevelDB directory; default .tmp/state/<app id> with an external
 *                                broker, a temporary directory with the local one (its topics
 *                                die with it, so must the state)
 *   IQGATE_APP_ID                iqgate-wordcount
 *   IQGATE_INPUT_TOPIC           wordcount-input   (created with 4 partitions if missing)
 *   IQGATE_OUTPUT_TOPIC          wordcount-output
 *   IQGATE_GUARANTEE             exactly_once | at_least_once (default exactly_once)
 *   IQGATE_DEMO_LINES_PER_SECOND 20 (0 disables the generator)
 *   IQGATE_LOG_LEVEL             info
 *   IQGATE_ADVERTISED_URL        this instance's GraphQL URL as other instances reach it
 *                                (e.g. http://10.0.0.5:4000/graphql); set it on every instance
 *                                of a group and each forwards key lookups to the owner
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import './kafka/kafkajs-patches.js';
import { startDemoFeed, type DemoFeed } from '../examples/wordcount/demo-feed.js';
import { runWordcount } from '../examples/wordcount/run-wordcount.js';
import { IqgateError } from './errors.js';
import { KafkaAdmin } from './kafka/kafka-admin.js';
import { createKafka } from './kafka/kafka-client.js';
import type { Runtime } from './runtime/runtime.js';
import { installShutdownHooks } from './runtime/shutdown-hooks.js';
import { serve } from './serve.js';

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65_535).default(4000),
  HOST: z.string().min(1).default('127.0.0.1'),
  KAFKA_BROKERS: z.string().min(1).optional(),
  IQGATE_STATE_DIR: z.string().min(1).optional(),
  IQGATE_APP_ID: z.string().regex(/^[a-zA-Z0-9._-]+$/).default('iqgate-wordcount'),
  IQGATE_INPUT_TOPIC: z.string().min(1).default('wordcount-input'),
  IQGATE_OUTPUT_TOPIC: z.string().min(1).default('wordcount-output'),
  IQGATE_GUARANTEE: z.enum(['exactly_once', 'at_least_once']).default('exactly_once'),
  IQGATE_DEMO_LINES_PER_SECOND: z.coerce.number().int().min(0).max(100_000).default(20),
  IQGATE_ADVERTISED_URL: z.string().url().optional(),
  IQGATE_LOG_LEVEL: z.enum(['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
});

function readEnv(): z.output<typeof envSchema> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([, value]) => value !== ''));
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new IqgateError('INVALID_CONFIG', `invalid environment: ${problems}`);
  }
  return parsed.data;
}

const PARTITIONS = 4;

async function main(): Promise<void> {
  const env = readEnv();
  const stops: Array<() => Promise<void>> = [];
  const stopAll = async (): Promise<void> => {
    for (const stop of stops.reverse()) await stop().catch((error: unknown) => console.error('stop failed:', error));
  };
  installShutdownHooks({ stop: stopAll });

  try {
    let brokers = env.KAFKA_BROKERS;
    let stateDir = env.IQGATE_STATE_DIR ?? join('.tmp', 'state', env.IQGATE_APP_ID);
    if (brokers === undefined) {
      // Tooling, loaded only when needed: a deployment points KAFKA_BROKERS at its cluster.
      const { startBroker } = await import('../scripts/kafka/broker.js');
      console.log('KAFKA_BROKERS is not set: starting a local Kafka broker ...');
      const broker = await startBroker({ log: (line) => console.log(line) });
      stops.push(() => broker.stop());
      brokers = broker.brokers;
      console.log(`Kafka broker ready at ${brokers} in ${broker.startupMs} ms`);
      if (env.IQGATE_STATE_DIR === undefined) {
        const temporary = mkdtempSync(join(tmpdir(), 'iqgate-state-'));
        stops.push(async () => rmSync(temporary, { recursive: true, force: true }));
        stateDir = temporary;
      }
    }
    const brokerList = brokers.split(',').map((b) => b.trim());

    const admin = new KafkaAdmin(createKafka({ brokers: brokerList, clientId: `${env.IQGATE_APP_ID}-setup` }));
    try {
      await admin.ensureTopics([
        { topic: env.IQGATE_INPUT_TOPIC, partitions: PARTITIONS, compacted: false },
        { topic: env.IQGATE_OUTPUT_TOPIC, partitions: PARTITIONS, compacted: false },
      ]);
    } finally {
      await admin.close();
    }

    let feed: DemoFeed | undefined;
    if (env.IQGATE_DEMO_LINES_PER_SECOND > 0) {
      feed = await startDemoFeed({
        brokers: brokerList,
        topic: env.IQGATE_INPUT_TOPIC,
        linesPerSecond: env.IQGATE_DEMO_LINES_PER_SECOND,
        onError: (error) => console.error('demo feed stopped:', error),
      });
      const running = feed;
      stops.push(() => running.stop());
    }

    const runtime: Runtime = await runWordcount({
      brokers: brokerList,
      applicationId: env.IQGATE_APP_ID,
      inputTopic: env.IQGATE_INPUT_TOPIC,
      outputTopic: env.IQGATE_OUTPUT_TOPIC,
      stateDir,
      processingGuarantee: env.IQGATE_GUARANTEE,
      logLevel: env.IQGATE_LOG_LEVEL,
      ...(env.IQGATE_ADVERTISED_URL === undefined ? {} : { advertisedUrl: env.IQGATE_ADVERTISED_URL }),
    });
    stops.push(() => runtime.stop());
    runtime.done.catch((error: unknown) => {
      console.error('the runtime failed:', error);
      void stopAll().then(() => process.exit(1));
    });

    const server = await serve(runtime, { port: env.PORT, host: env.HOST });
    stops.push(() => server.close());

    console.log(`iqgate is serving the wordcount store "word-counts" (${PARTITIONS} partitions, state in ${stateDir})`);
    console.log(`GraphiQL: ${server.url}`);
    console.log(`Try: { get(store: "word-counts", key: "kafka", readCommitted: false) { value position } }`);
  } catch (error) {
    await stopAll();
    throw error;
  }
}

main().catch((error: unknown) => {
  if (error instanceof IqgateError) console.error(`iqgate: ${error.code}: ${error.message}`);
  else console.error(error);
  process.exit(1);
});
