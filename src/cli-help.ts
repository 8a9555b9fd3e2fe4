/**
 * What `iqgate --help` prints: the commands, and every environment variable with its flag and
 * its default. The variables `iqgate start` reads are src/main.ts's `envSchema`;
 * test/unit/cli/cli-help.test.ts checks that this table lists exactly those, with the defaults
 * the schema applies, so the help cannot drift from what start-up validates.
 */

export interface EnvironmentEntry {
  /** The environment variable. */
  readonly name: string;
  /** The `iqgate start` flag that sets it (a flag wins over the environment). */
  readonly flag?: string;
  /** The default, as the user reads it (free text where it depends on something else). */
  readonly default: string;
  readonly description: string;
}

/** Read by `iqgate start` (src/main.ts), each with a flag. */
export const START_ENVIRONMENT: readonly EnvironmentEntry[] = [
  { name: 'KAFKA_BROKERS', flag: 'brokers', default: 'unset: start a local broker (needs Java 17+ and Maven)', description: 'bootstrap brokers, host:port[,host:port...]' },
  { name: 'KAFKA_SECURITY_PROTOCOL', flag: 'kafka-security-protocol', default: 'PLAINTEXT', description: 'PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL, as Kafka names them' },
  { name: 'KAFKA_SASL_MECHANISM', flag: 'kafka-sasl-mechanism', default: 'unset', description: 'PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512 (OAUTHBEARER when embedded, with a token callback)' },
  { name: 'KAFKA_SASL_USERNAME', flag: 'kafka-sasl-username', default: 'unset', description: 'the SASL user' },
  { name: 'KAFKA_SASL_PASSWORD_FILE', flag: 'kafka-sasl-password-file', default: 'unset', description: "file holding the SASL user's password (a file, never a flag: ps would show it)" },
  { name: 'KAFKA_SSL_CA_FILE', flag: 'kafka-ssl-ca-file', default: "unset: the system's CAs", description: "PEM of the CA that signed the brokers' certificates" },
  { name: 'KAFKA_SSL_CERT_FILE', flag: 'kafka-ssl-cert-file', default: 'unset', description: 'PEM client certificate, for brokers that authenticate clients by TLS' },
  { name: 'KAFKA_SSL_KEY_FILE', flag: 'kafka-ssl-key-file', default: 'unset', description: "PEM key of the client certificate" },
  { name: 'KAFKA_SSL_KEY_PASSWORD_FILE', flag: 'kafka-ssl-key-password-file', default: 'unset', description: 'file holding the password of an encrypted client key' },
  { name: 'PORT', flag: 'port', default: '4000', description: 'HTTP port of /graphql, /health, /ready, /metrics (0: a free port)' },
  { name: 'HOST', flag: 'host', default: '127.0.0.1', description: 'address to listen on (0.0.0.0 in the Docker image)' },
  { name: 'IQGATE_APP', flag: 'app', default: 'unset: a demo (IQGATE_DEMO)', description: 'your application module (.js; .ts under tsx), default export defineApp({ topology })' },
  { name: 'IQGATE_APP_ID', flag: 'app-id', default: "the module's applicationId; bank or iqgate-wordcount for the demos", description: 'application id: consumer group, transactional ids, internal topic prefix' },
  { name: 'IQGATE_STATE_DIR', flag: 'state-dir', default: '.tmp/state/<app id>; a temporary directory with the local broker', description: 'LevelDB state directory' },
  { name: 'IQGATE_GUARANTEE', flag: 'guarantee', default: "the module's, else exactly_once", description: 'exactly_once | at_least_once' },
  { name: 'IQGATE_KAFKA_CLIENT', flag: 'kafka-client', default: 'auto', description: 'auto | librdkafka | kafkajs (auto: librdkafka when its native module loads)' },
  { name: 'IQGATE_LEAVE_GROUP_ON_STOP', flag: 'leave-group-on-stop', default: "the module's, else false", description: 'true: a graceful stop takes this instance out of its consumer group at once (scale-down); false: on librdkafka with a state directory (static membership) it keeps its place, so a restart takes it back without a rebalance' },
  { name: 'IQGATE_NUM_STANDBY_REPLICAS', flag: 'num-standby-replicas', default: "the module's, else 0", description: 'standby replicas of each task kept on other instances (0-16): they answer queries, with their lag, when the owner cannot, and make a move restore only the tail; needs IQGATE_ADVERTISED_URL' },
  { name: 'IQGATE_WARMUP_TIMEOUT_MS', flag: 'warmup-timeout-ms', default: "the module's, else 60000", description: 'an instance joining a running group first tails every task\'s changelogs for at most this long, so the tasks it is given open warm; 0 joins at once' },
  { name: 'IQGATE_ACCEPTABLE_RECOVERY_LAG', flag: 'acceptable-recovery-lag', default: "the module's, else 10000", description: 'records behind its changelog\'s end within which a warming task counts as caught up' },
  { name: 'IQGATE_ADVERTISED_URL', flag: 'advertised-url', default: 'unset: nothing forwarded', description: "this instance's GraphQL URL as other instances reach it" },
  { name: 'IQGATE_API_KEYS_FILE', flag: 'api-keys-file', default: 'unset', description: 'JSON file of API keys: [{"name", "key" or "sha256", "stores": ["*"] or names}]; sent as Bearer, x-api-key, or the HTTP Basic password' },
  { name: 'IQGATE_JWT_JWKS_URL', flag: 'jwt-jwks-url', default: 'unset', description: "bearer JWTs checked against this JWKS endpoint (your identity provider's)" },
  { name: 'IQGATE_JWT_PUBLIC_KEY_FILE', flag: 'jwt-public-key-file', default: 'unset', description: 'bearer JWTs checked against this PEM public key or JWKS file' },
  { name: 'IQGATE_JWT_ISSUER', flag: 'jwt-issuer', default: 'unset: not checked', description: 'required iss of a JWT' },
  { name: 'IQGATE_JWT_AUDIENCE', flag: 'jwt-audience', default: 'unset: not checked', description: 'required aud of a JWT' },
  { name: 'IQGATE_JWT_STORES_CLAIM', flag: 'jwt-stores-claim', default: 'iqgate_stores', description: 'the JWT claim listing the stores it may read (array or space-separated; * for all)' },
  { name: 'IQGATE_ANONYMOUS', flag: 'anonymous', default: 'true on 127.0.0.1 without keys or JWTs; refused beyond loopback unless set', description: 'true: callers without credentials read every store; false: credentials required' },
  { name: 'IQGATE_CLUSTER_SECRET_FILE', flag: 'cluster-secret-file', default: 'unset', description: 'file holding the secret (32+ characters; a file, never a flag or a variable, so ps and logs cannot show it) every instance shares to sign forwarded requests; needed with IQGATE_ADVERTISED_URL and authentication' },
  { name: 'IQGATE_CORS_ORIGINS', flag: 'cors-origins', default: 'unset: no cross-origin reads', description: 'origins whose pages may call the gateway, comma-separated (https://dash.example.com)' },
  { name: 'IQGATE_PRODUCTION', flag: 'production', default: 'false', description: 'true: GraphiQL and schema introspection off' },
  { name: 'IQGATE_RATE_LIMIT', flag: 'rate-limit', default: 'unset: no limit', description: 'requests per second per client (token subject, API key or address); over it: 429' },
  { name: 'IQGATE_TLS_CERT_FILE', flag: 'tls-cert-file', default: 'unset: plain HTTP', description: 'PEM certificate chain: the gateway serves HTTPS' },
  { name: 'IQGATE_TLS_KEY_FILE', flag: 'tls-key-file', default: 'unset', description: "PEM private key of the gateway's certificate" },
  { name: 'IQGATE_DESERIALIZATION_ERRORS', flag: 'deserialization-errors', default: "the module's, else fail", description: 'a record whose key or value cannot be read: fail (stop the task) | skip (log, count, go on) | dead-letter (also write it to the dead-letter topic)' },
  { name: 'IQGATE_PROCESSING_ERRORS', flag: 'processing-errors', default: "the module's, else fail", description: 'a record a processor threw on: fail | skip | dead-letter' },
  { name: 'IQGATE_DEAD_LETTER_TOPIC', flag: 'dead-letter-topic', default: '<app id>-dlq', description: 'where dead-letter records go (created with 1 partition if missing)' },
  { name: 'IQGATE_LOG_LEVEL', flag: 'log-level', default: "the module's, else info", description: 'silent | fatal | error | warn | info | debug | trace' },
  { name: 'IQGATE_LOG_FORMAT', flag: 'log-format', default: 'pretty on a terminal, else json', description: 'pretty | json' },
  { name: 'IQGATE_DEMO', flag: 'demo', default: 'bank', description: 'bank | wordcount: the demo run without IQGATE_APP' },
  { name: 'IQGATE_INPUT_TOPIC', flag: 'input-topic', default: 'bank-transfers; wordcount-input', description: "demo: the input topic (created with 4 partitions if missing)" },
  { name: 'IQGATE_OUTPUT_TOPIC', flag: 'output-topic', default: 'wordcount-output', description: "wordcount demo: the counts' topic" },
  { name: 'IQGATE_DEMO_LINES_PER_SECOND', flag: 'demo-lines-per-second', default: '20', description: 'wordcount demo: line generator rate (0 disables it)' },
  { name: 'IQGATE_BANK_TRANSFERS_PER_SECOND', flag: 'bank-transfers-per-second', default: '5', description: 'bank demo: transfer generator rate (0: the branches open, no transfer follows)' },
  { name: 'IQGATE_BANK_ABORT_FRACTION', flag: 'bank-abort-fraction', default: '0.1', description: 'bank demo: fraction of transfers marked to abort half-way (0..1)' },
  { name: 'IQGATE_BANK_BRANCHES', flag: 'bank-branches', default: '4', description: 'bank demo: branches (of 5 accounts of 1000 each)' },
];

/** Read by the local broker (`iqgate kafka`, and `iqgate start` without KAFKA_BROKERS). */
export const KAFKA_ENVIRONMENT: readonly EnvironmentEntry[] = [
  { name: 'IQGATE_KAFKA_VERSION', default: 'the version in scripts/kafka/pom.xml', description: 'Apache Kafka 4.x version of the local broker' },
  { name: 'IQGATE_CACHE_DIR', default: '~/.cache/iqgate', description: "where the broker's jars are cached" },
  { name: 'IQGATE_KAFKA_TMPDIR', default: '/dev/shm when it has 2 GiB free, else the OS temp directory', description: "where the broker's temporary data directory goes (in memory by default: its data dies with it)" },
];

/** Read when the package is installed. */
export const INSTALL_ENVIRONMENT: readonly EnvironmentEntry[] = [
  { name: 'IQGATE_SKIP_NATIVE_KAFKA', default: 'unset', description: '1: do not download or build the native Kafka client (kafkajs is used)' },
];

function table(entries: readonly EnvironmentEntry[]): string {
  return entries
    .map((entry) => `  ${entry.flag === undefined ? '' : `--${entry.flag}, `}${entry.name}\n      ${entry.description}\n      default: ${entry.default}`)
    .join('\n');
}

export function helpText(version: string, kafkaClient?: string): string {
  return `iqgate ${version}: stream processing with transactional state stores, and a GraphQL gateway over them

Usage:
  iqgate [start] [options]          run your application (--app) or the wordcount demo, and serve
                                    its stores at http://HOST:PORT/graphql
  iqgate kafka [start] [--background] | stop | fetch
                                    a local Kafka broker for development (Java 17+, Maven)
  iqgate --help, -h                 this text
  iqgate --version, -v              the version

Options of start (a flag wins over its environment variable; an empty variable counts as unset):
${table(START_ENVIRONMENT)}

Local broker:
${table(KAFKA_ENVIRONMENT)}

Installation:
${table(INSTALL_ENVIRONMENT)}
${kafkaClient === undefined ? '' : `\nNative Kafka client here: ${kafkaClient}\n`}
Exit codes: 0 stopped cleanly (SIGTERM/SIGINT), 1 failed, 2 bad command line or environment.
`;
}
