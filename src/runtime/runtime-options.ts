/**
 * Runtime options with defaults, in one place, validated at start-up with a clear message.
 * Processing options are those of src/processing/processing-options.ts; this adds where the
 * broker and the state live and the Kafka client's group settings.
 */
import { z } from 'zod';
import { IqgateError } from '../errors.js';
import { DEFAULT_HEARTBEAT_INTERVAL_MS } from '../kafka/group-settings.js';
import { kafkaSecuritySchema } from '../kafka/kafka-security.js';
import { KAFKA_CLIENTS, type KafkaClientChoice } from '../kafka/select-kafka-client.js';
import { parseProcessingOptions, processingOptionsSchema, type ProcessingOptions } from '../processing/processing-options.js';

/** An absolute http(s) URL (the GraphQL endpoint, path included). */
export function advertisedUrlSchema() {
  return z.string().url().refine(isHttpUrl, { message: 'advertisedUrl must be an absolute http or https URL' });
}

function isHttpUrl(value: string): boolean {
  try {
    return /^https?:$/.test(new URL(value).protocol);
  } catch {
    return false; // zod's url() and WHATWG URL disagree on a few inputs
  }
}

/** IQGATE_KAFKA_CLIENT, checked here so that a typo fails start-up instead of meaning auto. */
function kafkaClientFromEnv(env: NodeJS.ProcessEnv = process.env): KafkaClientChoice {
  const value = env.IQGATE_KAFKA_CLIENT;
  if (value === undefined || value === '') return 'auto';
  if ((KAFKA_CLIENTS as readonly string[]).includes(value)) return value as KafkaClientChoice;
  throw new IqgateError('INVALID_CONFIG', `IQGATE_KAFKA_CLIENT must be one of ${KAFKA_CLIENTS.join(', ')}, not ${JSON.stringify(value)}`);
}

export const runtimeOptionsSchema = processingOptionsSchema.extend({
  /** Bootstrap brokers, `host:port`; a comma-separated string is accepted (KAFKA_BROKERS style). */
  brokers: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)])
    .transform((b) => (Array.isArray(b) ? b : b.split(',').map((s) => s.trim()).filter((s) => s.length > 0))),
  /** State directory (LevelDB). Absent: in-memory stores (state is rebuilt from the changelogs on restart). */
  stateDir: z.string().min(1).optional(),
  clientId: z.string().min(1).optional(),
  /**
   * How the clients reach the brokers: security.protocol, SASL and TLS (src/kafka/kafka-security.ts),
   * for every client the runtime makes (group consumer, producers, admin, restore). Default plaintext.
   */
  kafkaSecurity: kafkaSecuritySchema.optional(),
  /**
   * This instance's GraphQL endpoint as other instances reach it, e.g. http://10.0.0.5:4000/graphql
   * (Kafka Streams' application.server). Advertised in the group metadata so that any instance can
   * forward a key query to the partition's owner. Absent: nothing is advertised or forwarded.
   */
  advertisedUrl: advertisedUrlSchema().optional(),
  /** Record cache bytes for the process (statestore.cache.max.bytes); 0 forwards every update. */
  cacheMaxBytes: z.number().int().nonnegative().optional(),
  /** KIP-892 statestore.uncommitted.max.bytes. */
  uncommittedMaxBytes: z.number().int().positive().optional(),
  sessionTimeoutMs: z.number().int().positive().default(30_000),
  /** Below Kafka's 3 s: each round of a rebalance waits for the members' next heartbeat (DEFAULT_HEARTBEAT_INTERVAL_MS). */
  heartbeatIntervalMs: z.number().int().positive().default(DEFAULT_HEARTBEAT_INTERVAL_MS),
  rebalanceTimeoutMs: z.number().int().positive().default(60_000),
  /** Fetch long-poll cap; short, because kafkajs sleeps this long when all partitions are paused. */
  maxWaitTimeMs: z.number().int().positive().default(200),
  /** Fetch size caps (kafkajs decodes a response in one synchronous go: smaller keeps the loop responsive). */
  fetchMaxBytesPerPartition: z.number().int().positive().default(262_144),
  fetchMaxBytes: z.number().int().positive().default(2_097_152),
  /**
   * transaction.timeout.ms: a transaction open longer is aborted by the broker (so a frozen
   * instance cannot hold the offsets of its partitions' new owner for long). Default: 10 s on
   * librdkafka, as Kafka Streams under exactly-once; 60 s on kafkajs (its per-task commits queue).
   */
  transactionTimeoutMs: z.number().int().positive().optional(),
  /**
   * How long stop() waits for the graceful part (last commits, leaving the group, closing tasks)
   * before it closes every client and store regardless — e.g. when the broker is gone and kafkajs
   * would retry for minutes. Nothing uncommitted reaches a store either way. Keep it below the
   * shutdown hooks' timeout (30 s), which exits the process.
   */
  stopTimeoutMs: z.number().int().positive().default(20_000),
  /**
   * How often committed repartition records are deleted (Kafka Streams'
   * repartition.purge.interval.ms): runtime/repartition-purger.ts. Default 30 s.
   */
  repartitionPurgeIntervalMs: z.number().int().positive().default(30_000),
  /**
   * Whether stop() takes this instance out of its consumer group at once. It matters under
   * static membership (librdkafka with a state directory), whose members keep their place
   * until their session times out: false (the default, as Kafka Streams' close()) lets a restart
   * on the same state directory take the place back without a rebalance; true gives the
   * partitions to the other instances now, for an instance that goes for good (a scale-down;
   * Kafka Streams' `close(CloseOptions.leaveGroup(true))`). stop({ leaveGroup }) overrides it.
   */
  leaveGroupOnStop: z.boolean().default(false),
  /**
   * The Kafka client under the ports: `librdkafka` (@confluentinc/kafka-javascript, native;
   * exactly-once v2 with one transaction per instance, cooperative rebalancing, static
   * membership), `kafkajs` (pure JavaScript; a transaction per task), or `auto`: librdkafka
   * when its native module loads and the application needs nothing only kafkajs has
   * (co-partitioned sub-topologies; routing runs on both), else kafkajs. Default: env
   * IQGATE_KAFKA_CLIENT, else auto.
   */
  kafkaClient: z.enum(KAFKA_CLIENTS).default(() => kafkaClientFromEnv()),
  kafkaLogLevel: z.enum(['nothing', 'error', 'warn', 'info', 'debug']).default('error'),
  logLevel: z.enum(['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
  /**
   * librdkafka client properties passed through, as Kafka Streams passes `consumer.`, `producer.`
   * and `admin.` prefixed ones: `{ consumer: { 'fetch.min.bytes': 1 }, producer: { 'linger.ms': 10 } }`,
   * applied over iqgate's own settings (so a property iqgate relies on can be overridden: at your
   * own risk). kafkajs takes no properties: INVALID_CONFIG with kafkaClient kafkajs.
   */
  clientProperties: z.strictObject({
    consumer: z.record(z.union([z.string(), z.number(), z.boolean()])).optional(),
    producer: z.record(z.union([z.string(), z.number(), z.boolean()])).optional(),
  }).optional(),
}).strict().refine((o) => o.heartbeatIntervalMs < o.sessionTimeoutMs, { message: 'heartbeatIntervalMs must be below sessionTimeoutMs', path: ['heartbeatIntervalMs'] });

export type RuntimeOptionsInput = z.input<typeof runtimeOptionsSchema>;

/** RuntimeConfig's keys that are not options (runtime.ts). */
const CONFIG_KEYS = new Set(['topology', 'storeEngine', 'logger', 'ports']);
type Parsed = z.output<typeof runtimeOptionsSchema>;
export type RuntimeOptions = Omit<Parsed, keyof ProcessingOptions> & ProcessingOptions & { readonly clientId: string };

/**
 * Validated options; an unknown key is INVALID_CONFIG naming it (a misspelt option must not be
 * silently ignored). `input` may carry the runtime config's own keys (topology, logger, ...),
 * which are not options.
 */
export function parseRuntimeOptions(input: RuntimeOptionsInput): RuntimeOptions {
  const options = Object.fromEntries(Object.entries(input).filter(([key]) => !CONFIG_KEYS.has(key)));
  const parsed = runtimeOptionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new IqgateError('INVALID_CONFIG', `invalid runtime options: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`, { cause: parsed.error });
  }
  const processing = parseProcessingOptions(input);
  return { ...parsed.data, ...processing, clientId: parsed.data.clientId ?? parsed.data.applicationId };
}
