/**
 * `npm start`: iqgate in one process.
 *  1. a local Kafka broker (scripts/kafka/broker.ts), unless KAFKA_BROKERS names one;
 *  2. your application (IQGATE_APP, a module whose default export is `defineApp({ topology })`,
 *     see src/runtime/app-module.ts) or, without it, a demo (IQGATE_DEMO): the bank
 *     (examples/bank, its `balances` store fed by a transfer generator that marks a fraction of
 *     transfers to abort half-way) or the wordcount (examples/wordcount, its `word-counts`
 *     store fed by a small line generator), on the processing runtime with its stores in LevelDB;
 *  3. the GraphQL gateway over the runtime's stores, listening on PORT (GraphiQL at /graphql,
 *     the dashboard at /dashboard).
 * SIGTERM/SIGINT stop everything in reverse order (the runtime commits what it processed).
 *
 * Environment (validated at start-up; for IQGATE_APP it wins over the module's options):
 *   PORT                         4000
 *   HOST                         127.0.0.1 (0.0.0.0 in the Dockerfile)
 *   KAFKA_BROKERS                unset: start a local broker
 *   IQGATE_APP                   path of your application module (.ts or .js); unset: the demo
 *   IQGATE_DEMO                  bank (default) | wordcount; ignored with IQGATE_APP
 *   IQGATE_STATE_DIR             LevelDB directory; default the module's stateDir, else
 *                                .tmp/state/<app id> with an external broker, a temporary
 *                                directory with the local one (its topics die with it, so must
 *                                the state)
 *   IQGATE_APP_ID                the module's applicationId; iqgate-bank / iqgate-wordcount for the demos
 *   IQGATE_INPUT_TOPIC           demo: bank-transfers / wordcount-input (created with 4 partitions
 *                                if missing; an existing one is used with the partitions it has)
 *   IQGATE_OUTPUT_TOPIC          wordcount demo: wordcount-output (likewise)
 *   IQGATE_GUARANTEE             exactly_once | at_least_once (default: the module's, else exactly_once)
 *   IQGATE_DEMO_LINES_PER_SECOND wordcount demo: 20 (0 disables the generator)
 *   IQGATE_BANK_TRANSFERS_PER_SECOND bank demo: 5 (0: the branches open, no transfer follows)
 *   IQGATE_BANK_ABORT_FRACTION   bank demo: 0.1, the fraction of transfers marked to abort half-way
 *   IQGATE_BANK_BRANCHES         bank demo: 4 branches (of 5 accounts of 1000 each)
 *   IQGATE_KAFKA_CLIENT          auto | librdkafka | kafkajs (default auto: librdkafka when its
 *                                native module loads, see src/kafka/select-kafka-client.ts)
 *   IQGATE_LOG_LEVEL             default: the module's, else info
 *   IQGATE_LOG_FORMAT            pretty | json; default pretty when stdout is a terminal, json
 *                                otherwise (one JSON object per line, for log collectors)
 *   IQGATE_ADVERTISED_URL        this instance's GraphQL URL as other instances reach it
 *                                (e.g. http://10.0.0.5:4000/graphql); set it on every instance
 *                                of a group and each forwards key lookups to the owner
 *   IQGATE_LEAVE_GROUP_ON_STOP   true | false (default: the module's, else false): whether a
 *                                graceful stop takes the instance out of its consumer group at
 *                                once (a scale-down) or keeps its place for a restart (librdkafka)
 *   IQGATE_NUM_STANDBY_REPLICAS  standby replicas of each task on other instances (default: the
 *                                module's, else 0); needs IQGATE_ADVERTISED_URL on every instance
 *   IQGATE_WARMUP_TIMEOUT_MS     how long an instance joining a running group first tails every
 *                                task's changelogs (default 60000; 0 joins at once)
 *   IQGATE_ACCEPTABLE_RECOVERY_LAG  records behind within which a warming task counts as caught
 *                                up (default 10000)
 *   IQGATE_ANONYMOUS, IQGATE_API_KEYS_FILE, IQGATE_JWT_*, IQGATE_CLUSTER_SECRET_FILE,
 *   IQGATE_CORS_ORIGINS, IQGATE_PRODUCTION, IQGATE_RATE_LIMIT, IQGATE_TLS_CERT_FILE/KEY_FILE
 *                                who may call the gateway and how: src/gateway-env.ts,
 *                                docs/security.md; src/cli-help.ts has each one's default
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import './kafka/kafkajs-patches.js';
import type { DemoFeed } from '../examples/wordcount/demo-feed.js';
import { IqgateError } from './errors.js';
import { gatewaySecurityFromEnv } from './gateway-env.js';
import { kafkaSecurityFromEnv } from './kafka-security-env.js';
import { SASL_MECHANISMS, SECURITY_PROTOCOLS, type KafkaSecurity } from './kafka/kafka-security.js';
import { KafkaAdmin } from './kafka/kafka-admin.js';
import { KAFKA_CLIENTS } from './kafka/select-kafka-client.js';
import { createKafka } from './kafka/kafka-client.js';
import { loadApp, type LoadedApp } from './runtime/app-module.js';
import { createLogger, LOG_FORMATS } from './runtime/create-logger.js';
import { errorPolicySchema } from './processing/processing-options.js';
import { createRuntime, type Runtime, type RuntimeConfig } from './runtime/runtime.js';
import type { RuntimeOptionsInput } from './runtime/runtime-options.js';
import { installShutdownHooks } from './runtime/shutdown-hooks.js';

/** One of `values` in any case, as Kafka's own settings are written; the value is kept as given. */
function oneOf(values: readonly string[], message: string) {
  return z.string().refine((value) => values.includes(value.toUpperCase()), message);
}

/** The environment main() reads; `iqgate --help` (src/cli-help.ts) describes every key. */
export const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65_535).default(4000),
  HOST: z.string().min(1).default('127.0.0.1'),
  KAFKA_BROKERS: z.string().min(1).optional(),
  IQGATE_STATE_DIR: z.string().min(1).optional(),
  IQGATE_APP: z.string().min(1).optional(),
  IQGATE_APP_ID: z.string().regex(/^[a-zA-Z0-9._-]+$/).optional(),
  IQGATE_DEMO: z.enum(['bank', 'wordcount']).default('bank'),
  IQGATE_INPUT_TOPIC: z.string().min(1).optional(),
  IQGATE_OUTPUT_TOPIC: z.string().min(1).default('wordcount-output'),
  IQGATE_GUARANTEE: z.enum(['exactly_once', 'at_least_once']).optional(),
  IQGATE_DEMO_LINES_PER_SECOND: z.coerce.number().int().min(0).max(100_000).default(20),
  IQGATE_BANK_TRANSFERS_PER_SECOND: z.coerce.number().min(0).max(100_000).default(5),
  IQGATE_BANK_ABORT_FRACTION: z.coerce.number().min(0).max(1).default(0.1),
  IQGATE_BANK_BRANCHES: z.coerce.number().int().min(1).max(10_000).default(4),
  IQGATE_ADVERTISED_URL: z.string().url().optional(),
  IQGATE_LOG_LEVEL: z.enum(['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace']).optional(),
  IQGATE_LOG_FORMAT: z.enum(LOG_FORMATS).optional(),
  IQGATE_KAFKA_CLIENT: z.enum(KAFKA_CLIENTS).optional(),
  IQGATE_LEAVE_GROUP_ON_STOP: z.enum(['true', 'false']).optional(),
  IQGATE_NUM_STANDBY_REPLICAS: z.coerce.number().int().min(0).max(16).optional(),
  IQGATE_WARMUP_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).optional(),
  IQGATE_ACCEPTABLE_RECOVERY_LAG: z.coerce.number().int().min(0).optional(),
  // What a record that cannot be read (deserialization) or processed (a processor threw) does.
  IQGATE_DESERIALIZATION_ERRORS: errorPolicySchema.optional(),
  IQGATE_PROCESSING_ERRORS: errorPolicySchema.optional(),
  IQGATE_DEAD_LETTER_TOPIC: z.string().min(1).optional(),
  // How the Kafka clients reach the brokers (src/kafka-security-env.ts reads the files).
  KAFKA_SECURITY_PROTOCOL: oneOf(SECURITY_PROTOCOLS, 'PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL').optional(),
  KAFKA_SASL_MECHANISM: oneOf(SASL_MECHANISMS.filter((m) => m !== 'OAUTHBEARER'), 'PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (OAUTHBEARER: embedded, with a token callback)').optional(),
  KAFKA_SASL_USERNAME: z.string().min(1).optional(),
  KAFKA_SASL_PASSWORD_FILE: z.string().min(1).optional(),
  KAFKA_SSL_CA_FILE: z.string().min(1).optional(),
  KAFKA_SSL_CERT_FILE: z.string().min(1).optional(),
  KAFKA_SSL_KEY_FILE: z.string().min(1).optional(),
  KAFKA_SSL_KEY_PASSWORD_FILE: z.string().min(1).optional(),
  // Who may call the gateway (src/gateway-env.ts reads the files; docs/security.md).
  IQGATE_ANONYMOUS: z.enum(['true', 'false']).optional(),
  IQGATE_API_KEYS_FILE: z.string().min(1).optional(),
  IQGATE_JWT_JWKS_URL: z.string().url().optional(),
  IQGATE_JWT_PUBLIC_KEY_FILE: z.string().min(1).optional(),
  IQGATE_JWT_ISSUER: z.string().min(1).optional(),
  IQGATE_JWT_AUDIENCE: z.string().min(1).optional(),
  IQGATE_JWT_STORES_CLAIM: z.string().min(1).optional(),
  IQGATE_CLUSTER_SECRET_FILE: z.string().min(1).optional(),
  IQGATE_CORS_ORIGINS: z.string().min(1).optional(),
  IQGATE_PRODUCTION: z.enum(['true', 'false']).optional(),
  IQGATE_RATE_LIMIT: z.coerce.number().positive().max(1_000_000).optional(),
  IQGATE_TLS_CERT_FILE: z.string().min(1).optional(),
  IQGATE_TLS_KEY_FILE: z.string().min(1).optional(),
});


/** Secrets come from files (a value shows in `ps` and in dumps of the environment): these, set as values, are refused with the name to use. */
const SECRET_VALUES = ['KAFKA_SASL_PASSWORD', 'KAFKA_SSL_KEY_PASSWORD', 'IQGATE_CLUSTER_SECRET', 'IQGATE_API_KEYS'] as const;

/** A value as an error may show it: a URL's user and password left out. */
function shown(value: string | undefined): string {
  return JSON.stringify(value?.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1…@'));
}

function readEnv(): z.output<typeof envSchema> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([, value]) => value !== ''));
  const asValue = SECRET_VALUES.filter((name) => env[name] !== undefined);
  if (asValue.length > 0) {
    throw new IqgateError('INVALID_CONFIG', `invalid environment: ${asValue.map((name) => `${name} is read from a file: put it in one and set ${name}_FILE to its path`).join('; ')}`, { details: { exitCode: 2 } });
  }
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message} (got ${shown(env[String(issue.path[0])])})`).join('; ');
    // exitCode: bad input exits 2, as a usage error does (src/cli.ts).
    throw new IqgateError('INVALID_CONFIG', `invalid environment: ${problems}`, { details: { exitCode: 2 } });
  }
  return parsed.data;
}

const PARTITIONS = 4;

export async function main(): Promise<void> {
  const env = readEnv();
  // Security settings first: a gateway that would serve anyone beyond loopback, or a key file
  // that does not parse, stops start-up before a broker or a runtime starts.
  const security = gatewaySecurityFromEnv(env);
  const kafkaSecurity = kafkaSecurityFromEnv(env);
  const stops: Array<() => Promise<void>> = [];
  // Once, whoever asks first (a signal, a fatal error): a second call waits for the first, and
  // `stops` is not reversed in place under it (the two ran the list in opposite orders).
  let stopping: Promise<void> | null = null;
  const stopAll = (): Promise<void> => (stopping ??= (async () => {
    for (const stop of [...stops].reverse()) await stop().catch((error: unknown) => console.error('stop failed:', error));
  })());
  installShutdownHooks({ stop: stopAll });

  try {
    // The application first: a module that does not load should fail before a broker starts.
    const app = env.IQGATE_APP === undefined ? undefined : await loadApp(env.IQGATE_APP);
    const applicationId = env.IQGATE_APP_ID ?? (app === undefined ? `iqgate-${env.IQGATE_DEMO}` : app.applicationId);
    if (applicationId === undefined) {
      throw new IqgateError('INVALID_CONFIG', `IQGATE_APP=${env.IQGATE_APP ?? ''}: the module has no applicationId; export one or set IQGATE_APP_ID`);
    }
    let brokers = env.KAFKA_BROKERS;
    // IQGATE_STATE_DIR, else the module's own stateDir, else a default.
    let stateDir = env.IQGATE_STATE_DIR ?? app?.options.stateDir ?? join('.tmp', 'state', applicationId);
    if (brokers === undefined) {
      // Tooling, loaded only when needed: a deployment points KAFKA_BROKERS at its cluster.
      const { startBroker } = await import('../scripts/kafka/broker.js');
      console.log('KAFKA_BROKERS is not set: starting a local Kafka broker ...');
      const broker = await startBroker({ log: (line) => console.log(line) });
      stops.push(() => broker.stop());
      brokers = broker.brokers;
      console.log(`Kafka broker ready at ${brokers} in ${broker.startupMs} ms`);
      if (env.IQGATE_STATE_DIR === undefined && app?.options.stateDir === undefined) {
        const temporary = mkdtempSync(join(tmpdir(), 'iqgate-state-'));
        stops.push(async () => rmSync(temporary, { recursive: true, force: true }));
        stateDir = temporary;
      }
    }
    const brokerList = brokers.split(',').map((b) => b.trim());

    const logLevel = env.IQGATE_LOG_LEVEL ?? app?.options.logLevel ?? 'info';
    const common = {
      brokers: brokerList,
      applicationId,
      stateDir,
      logLevel,
      logger: createLogger({ level: logLevel, ...(env.IQGATE_LOG_FORMAT === undefined ? {} : { format: env.IQGATE_LOG_FORMAT }) }),
      ...(env.IQGATE_GUARANTEE === undefined ? {} : { processingGuarantee: env.IQGATE_GUARANTEE }),
      ...(env.IQGATE_ADVERTISED_URL === undefined ? {} : { advertisedUrl: env.IQGATE_ADVERTISED_URL }),
      ...(env.IQGATE_LEAVE_GROUP_ON_STOP === undefined ? {} : { leaveGroupOnStop: env.IQGATE_LEAVE_GROUP_ON_STOP === 'true' }),
      ...(env.IQGATE_NUM_STANDBY_REPLICAS === undefined ? {} : { numStandbyReplicas: env.IQGATE_NUM_STANDBY_REPLICAS }),
      ...(env.IQGATE_WARMUP_TIMEOUT_MS === undefined ? {} : { warmupTimeoutMs: env.IQGATE_WARMUP_TIMEOUT_MS }),
      ...(env.IQGATE_ACCEPTABLE_RECOVERY_LAG === undefined ? {} : { acceptableRecoveryLag: env.IQGATE_ACCEPTABLE_RECOVERY_LAG }),
      ...(kafkaSecurity === undefined ? {} : { kafkaSecurity }),
      ...(env.IQGATE_DESERIALIZATION_ERRORS === undefined ? {} : { deserializationErrors: env.IQGATE_DESERIALIZATION_ERRORS }),
      ...(env.IQGATE_PROCESSING_ERRORS === undefined ? {} : { processingErrors: env.IQGATE_PROCESSING_ERRORS }),
      ...(env.IQGATE_DEAD_LETTER_TOPIC === undefined ? {} : { deadLetterTopic: env.IQGATE_DEAD_LETTER_TOPIC }),
    };
    // The gateway's modules (graphql-yoga and friends, ~600 files) load while the runtime opens
    // its state directory and joins its group, not before (bench:restart; an application module
    // that imports 'iqgate/app' rather than 'iqgate' does not load them either).
    const gatewayModule = import('./serve.js');
    gatewayModule.catch(() => undefined);
    const runtime = app !== undefined ? await startApp(app, common)
      : env.IQGATE_DEMO === 'bank' ? await startBankDemo(env, common, stops) : await startDemo(env, common, stops);
    stops.push(() => runtime.stop());
    runtime.done.catch((error: unknown) => {
      console.error('the runtime failed:', error);
      void stopAll().then(() => process.exit(1));
    });

    const { serve } = await gatewayModule;
    const server = await serve(runtime, { port: env.PORT, host: env.HOST, ...security });
    stops.push(() => server.close());

    const stores = runtime.storeDefinitions().map((store) => `"${store.storeName}"`).join(', ');
    console.log(`iqgate is serving ${applicationId}: stores ${stores} (state in ${stateDir})`);
    console.log(`GraphiQL: ${server.url}`);
    console.log(`Dashboard: ${new URL('/dashboard', server.url).href}`);
    if (app === undefined && env.IQGATE_DEMO === 'wordcount') console.log(`Try: { get(store: "word-counts", key: "kafka", readCommitted: false) { value position } }`);
    if (app === undefined && env.IQGATE_DEMO === 'bank') console.log(`Try: { get(store: "balances", key: "branch-00", readCommitted: false) { value position } }`);
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** What the environment decides, for the demo and for IQGATE_APP alike. */
type CommonOptions = Pick<RuntimeOptionsInput, 'processingGuarantee' | 'logLevel' | 'advertisedUrl' | 'leaveGroupOnStop' | 'numStandbyReplicas' | 'warmupTimeoutMs' | 'acceptableRecoveryLag' | 'deserializationErrors' | 'processingErrors' | 'deadLetterTopic'> & Pick<RuntimeConfig, 'logger'> & {
  /** Validated already (kafkaSecurityFromEnv): the setup admin client takes it as it is. */
  readonly kafkaSecurity?: KafkaSecurity;
  readonly brokers: string[];
  readonly applicationId: string;
  readonly stateDir: string;
};

/** Your application: its topology and options, the environment's settings on top. */
async function startApp(app: LoadedApp, common: CommonOptions): Promise<Runtime> {
  const runtime = createRuntime({ ...app.options, ...common, topology: app.topology });
  await runtime.start();
  return runtime;
}

/** The demo: wordcount's topics (created if missing), the line generator, the wordcount runtime. */
async function startDemo(env: z.output<typeof envSchema>, common: CommonOptions, stops: Array<() => Promise<void>>): Promise<Runtime> {
  const brokerList = common.brokers;
  const inputTopic = env.IQGATE_INPUT_TOPIC ?? 'wordcount-input';
  const security = common.kafkaSecurity === undefined ? {} : { security: common.kafkaSecurity };
  const admin = new KafkaAdmin(createKafka({ brokers: brokerList, clientId: `${common.applicationId}-setup`, ...security }));
  try {
    // Created with PARTITIONS when missing; existing ones are used with the partitions they have.
    await admin.ensureExternalTopics([
      { topic: inputTopic, partitions: PARTITIONS, compacted: false },
      { topic: env.IQGATE_OUTPUT_TOPIC, partitions: PARTITIONS, compacted: false },
    ]);
  } finally {
    await admin.close();
  }
  // The demo's own modules, only for the demo.
  const [{ startDemoFeed }, { runWordcount }] = await Promise.all([import('../examples/wordcount/demo-feed.js'), import('../examples/wordcount/run-wordcount.js')]);
  if (env.IQGATE_DEMO_LINES_PER_SECOND > 0) {
    const feed: DemoFeed = await startDemoFeed({
      brokers: brokerList,
      ...security,
      topic: inputTopic,
      linesPerSecond: env.IQGATE_DEMO_LINES_PER_SECOND,
      onError: (error) => console.error('demo feed stopped:', error),
    });
    stops.push(() => feed.stop());
  }
  return runWordcount({ ...common, inputTopic, outputTopic: env.IQGATE_OUTPUT_TOPIC });
}

/**
 * The bank demo (examples/bank/start-bank-demo.ts): its transfers topic (created if missing),
 * the transfer generator (opens the branches, then transfers, a fraction marked to abort
 * half-way), the bank runtime.
 */
async function startBankDemo(env: z.output<typeof envSchema>, common: CommonOptions, stops: Array<() => Promise<void>>): Promise<Runtime> {
  const { startBankDemo: startBank } = await import('../examples/bank/start-bank-demo.js');
  const demo = await startBank({
    ...common,
    transfersTopic: env.IQGATE_INPUT_TOPIC ?? 'bank-transfers',
    partitions: PARTITIONS,
    feed: {
      transfersPerSecond: env.IQGATE_BANK_TRANSFERS_PER_SECOND,
      shape: { branches: env.IQGATE_BANK_BRANCHES, abortFraction: env.IQGATE_BANK_ABORT_FRACTION },
      onError: (error) => console.error('bank feed stopped:', error),
    },
  });
  if (demo.feed !== null) stops.push(() => demo.feed!.stop());
  return demo.runtime;
}

/** Runs main() as the process: a failure is printed (with its code) and exits 1, or 2 for bad input. */
export function runMain(): void {
  main().catch((error: unknown) => {
    if (error instanceof IqgateError) console.error(`iqgate: ${error.code}: ${error.message}`);
    else console.error(error);
    process.exit(error instanceof IqgateError && typeof error.details.exitCode === 'number' ? error.details.exitCode : 1);
  });
}

// Started as a program (`node dist/src/main.js`, `node --import tsx src/main.ts`); `iqgate start`
// (src/cli.ts) imports this module and calls runMain() itself.
function startedAsProgram(): boolean {
  try {
    return process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false; // argv[1] is not a file (node -e ...)
  }
}
if (startedAsProgram()) runMain();
