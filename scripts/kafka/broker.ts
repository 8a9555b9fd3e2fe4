/**
 * A local, single-node Apache Kafka broker (KRaft, broker+controller in one JVM) for
 * development, tests, benchmarks and the demo. No Docker engine is needed: the broker's jars
 * come from Maven Central through `mvn dependency:copy-dependencies` (once, cached outside
 * git), the storage directory is formatted with Kafka's StorageTool, and the JVM is started
 * with `kafka.Kafka` on free 127.0.0.1 ports.
 *
 * Recipe: docs/architecture.md §6, checked against apache/kafka's `bin/kafka-server-start.sh` and
 * `config/server.properties`. What had to change from the recipe as first written:
 *  - kafka_2.13 pulls slf4j-api 1.7, which ignores the log4j-slf4j2 binding (the broker then
 *    logs nothing at all); the pom pins slf4j-api 2.x.
 *  - advertised.listeners, inter.broker.listener.name and listener.security.protocol.map are
 *    set explicitly so the broker never advertises the machine's hostname.
 *  - A watchdog process stops the broker if the process that started it dies without
 *    cleaning up (a killed test runner must not leave a JVM behind).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
// The readiness check's admin client is kafkajs too: without patch 3 its request queue sets a
// negative timer after each response (Node 24 warns TimeoutNegativeWarning) and loops every 1 ms.
// Before kafkajs itself: the patches that replace kafkajs files only take when they load first.
import '../../src/kafka/kafkajs-patches.js';
import kafkajs from 'kafkajs';
import { prepareSecuredListener, scramArguments, securedProperties, type SecuredListener } from './secured-listener.js';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * The Kafka version: $IQGATE_KAFKA_VERSION, else the one in scripts/kafka/pom.xml (read from
 * there, so there is one source). Each version has its own jar cache.
 */
export const KAFKA_VERSION =
  process.env.IQGATE_KAFKA_VERSION ?? /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(readFileSync(join(here, 'pom.xml'), 'utf8'))?.[1] ?? 'unknown';

export class BrokerError extends Error {
  override readonly name = 'BrokerError';
  constructor(
    readonly code: 'JAVA_MISSING' | 'MVN_MISSING' | 'FETCH_FAILED' | 'FORMAT_FAILED' | 'BIND_FAILED' | 'START_FAILED' | 'START_TIMEOUT',
    message: string,
  ) {
    super(message);
  }
}

export interface BrokerOptions {
  /** Where the jars are cached. Default: $IQGATE_CACHE_DIR or ~/.cache/iqgate. */
  cacheDir?: string;
  /**
   * Where the broker keeps its log segments. Default: a new temporary directory, removed on stop,
   * under temporaryDataParent() (in memory where the machine allows). A given directory is kept
   * on stop, and a later start on it (same `ports`) restarts the same broker with its logs,
   * offsets and transactions.
   */
  dataDir?: string;
  /** Maximum time to wait until the broker answers describeCluster. Default 90 s. */
  startTimeoutMs?: number;
  /** JVM heap. Default 512m (enough for tests; the machine has 2 cores, not much to gain). */
  heap?: string;
  /** Fixed ports instead of free ones (mostly to test the bind failure). */
  ports?: { broker: number; controller: number };
  log?: (line: string) => void;
  /**
   * Tie the broker to this process (default true): a watchdog stops it when this process
   * dies. False for `npm run kafka -- start --background`, stopped later by PID.
   */
  tiedToProcess?: boolean;
  /**
   * Also open a SASL_SSL listener (secured-listener.ts): a certificate made at start-up by a CA
   * of its own, SCRAM-SHA-256/512 and PLAIN users, and the standard authorizer, under which the
   * PLAINTEXT listener's clients stay super users and the SASL users have what ACLs grant them.
   */
  secured?: boolean;
}

export interface RunningBroker {
  /** Bootstrap address, e.g. "127.0.0.1:39092". */
  readonly brokers: string;
  readonly pid: number;
  readonly dataDir: string;
  readonly logFile: string;
  /** Milliseconds from spawning the JVM to a successful describeCluster. */
  readonly startupMs: number;
  /** The SASL_SSL listener, with `secured`. */
  readonly secured?: SecuredListener;
  stop(): Promise<void>;
}

export function cacheDirectory(options: Pick<BrokerOptions, 'cacheDir'> = {}): string {
  return options.cacheDir ?? process.env.IQGATE_CACHE_DIR ?? join(homedir(), '.cache', 'iqgate');
}

/** Whether `command args` runs and exits 0 (java -version, mvn -v). */
export function commandExists(command: string, args: string[]): boolean {
  const result = spawnSync(command, args, { stdio: 'ignore' });
  return result.error === undefined && result.status === 0;
}

/**
 * Resolves `pom`'s runtime dependencies (at KAFKA_VERSION) into `<cache>/<name>` once, through
 * `mvn dependency:copy-dependencies`; later calls return the cached directory at once.
 */
export function fetchMavenJars(pom: string, name: string, what: string, options: Pick<BrokerOptions, 'cacheDir' | 'log'> = {}): string {
  const libs = join(cacheDirectory(options), name);
  const marker = join(libs, '.complete');
  if (existsSync(marker)) return libs;
  if (!commandExists('mvn', ['-v'])) {
    throw new BrokerError('MVN_MISSING', `Maven (mvn) is not on PATH: it is needed once to fetch ${what} from Maven Central. Install Maven and retry.`);
  }
  options.log?.(`fetching ${what} into ${libs} ...`);
  rmSync(libs, { recursive: true, force: true });
  mkdirSync(libs, { recursive: true });
  const result = spawnSync('mvn', ['-B', '-q', '-f', pom, 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${libs}`, `-Dkafka.version=${KAFKA_VERSION}`], {
    encoding: 'utf8',
  });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    throw new BrokerError('FETCH_FAILED', `mvn could not fetch ${what} (exit ${String(result.status)}):\n${output}`);
  }
  writeFileSync(marker, `${new Date().toISOString()}\n`);
  return libs;
}

/** Downloads the broker jars once; later calls return the cached directory at once. */
export function fetchBrokerJars(options: Pick<BrokerOptions, 'cacheDir' | 'log'> = {}): string {
  return fetchMavenJars(join(here, 'pom.xml'), join(`kafka-${KAFKA_VERSION}`, 'libs'), `the Apache Kafka ${KAFKA_VERSION} broker jars`, options);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A random KRaft cluster id: 16 bytes in base64url. Like Kafka's own `Uuid.randomUuid()`, it
 * never starts with '-': StorageTool would read such an id as an option and fail the format
 * ("argument --cluster-id/-t: expected one argument"), once in 64 starts.
 */
export function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/**
 * The cluster id a data directory was formatted with (its `logs/meta.properties`), if any.
 * Restarting a broker on the same `dataDir` must format with that id: StorageTool's
 * `--ignore-formatted` skips a formatted directory only when the ids agree, and fails
 * ("Invalid cluster.id … Expected …, but read …") otherwise.
 */
export function formattedClusterId(dataDir: string): string | undefined {
  try {
    return /^cluster\.id=(.+)$/m.exec(readFileSync(join(dataDir, 'logs', 'meta.properties'), 'utf8'))?.[1]?.trim();
  } catch {
    return undefined;
  }
}

function serverProperties(dataDir: string, brokerPort: number, controllerPort: number, secured: SecuredListener | undefined): string {
  const securedListener = secured === undefined ? '' : `,SASL_SSL://127.0.0.1:${secured.port}`;
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${brokerPort},CONTROLLER://127.0.0.1:${controllerPort}${securedListener}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${brokerPort}${securedListener}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    `listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT${secured === undefined ? '' : ',SASL_SSL:SASL_SSL'}`,
    ...(secured === undefined ? [] : securedProperties(secured)),
    `log.dirs=${join(dataDir, 'logs')}`,
    'num.partitions=1',
    // Single node: every internal topic must have replication factor 1, or kafkajs never
    // finds a group or transaction coordinator (kafkajs issue 1752).
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=1',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=1',
    'share.coordinator.state.topic.replication.factor=1',
    'share.coordinator.state.topic.min.isr=1',
    // New groups rebalance at once instead of waiting 3 s for more members.
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=true',
    '',
  ].join('\n');
}

function javaEnv(): NodeJS.ProcessEnv {
  return { ...process.env, KAFKA_HEAP_OPTS: undefined };
}

function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no broker log)';
  }
}

async function waitUntilReady(brokers: string, child: ChildProcess, logFile: string, timeoutMs: number): Promise<void> {
  const kafka = new kafkajs.Kafka({
    clientId: 'iqgate-broker-probe',
    brokers: [brokers],
    logLevel: kafkajs.logLevel.NOTHING,
    connectionTimeout: 1000,
    // Short: during start-up something else may hold the port and accept without answering.
    requestTimeout: 2000,
    retry: { retries: 0 },
  });
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  for (;;) {
    // A taken port makes the JVM log a BindException and then take ~30 s to shut down; read
    // the log instead of waiting for the exit.
    const log = tail(logFile, 200);
    const bindFailure = /Socket server failed to bind to [^\n]*|Unable to start acceptor[^\n]*|BindException[^\n]*/.exec(log);
    if (bindFailure !== null) {
      throw new BrokerError('BIND_FAILED', `the Kafka broker could not bind its port: ${bindFailure[0]}`);
    }
    if (exited) {
      throw new BrokerError('START_FAILED', `the Kafka broker exited during start-up; the end of its log:\n${tail(logFile)}`);
    }
    const admin = kafka.admin();
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      if (cluster.brokers.length > 0) return;
    } catch {
      // not ready yet
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
    if (Date.now() > deadline) {
      throw new BrokerError('START_TIMEOUT', `the Kafka broker did not answer within ${timeoutMs} ms:\n${tail(logFile)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Starts a detached watchdog that kills `brokerPid` once `ownerPid` is gone, so a test runner
 * killed with SIGKILL cannot leave a broker behind. It exits by itself with the broker.
 */
function startWatchdog(ownerPid: number, brokerPid: number, removeDir: string | undefined): void {
  const script = `
    const cleanup = () => { ${removeDir === undefined ? '' : `try { require('node:fs').rmSync(${JSON.stringify(removeDir)}, { recursive: true, force: true }) } catch {}`} process.exit(0) };
    const alive = (pid) => { try { process.kill(pid, 0); return true } catch { return false } };
    const timer = setInterval(() => {
      if (!alive(${brokerPid})) { clearInterval(timer); return }
      if (!alive(${ownerPid})) {
        clearInterval(timer);
        try { process.kill(${brokerPid}, 'SIGTERM') } catch {}
        const deadline = Date.now() + 10000;
        const wait = setInterval(() => {
          if (!alive(${brokerPid})) { clearInterval(wait); cleanup() }
          else if (Date.now() > deadline) { try { process.kill(${brokerPid}, 'SIGKILL') } catch {} }
        }, 100);
      }
    }, 1000);`;
  const watchdog = spawn(process.execPath, ['-e', script], { detached: true, stdio: 'ignore' });
  watchdog.unref();
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/** Stops a broker by its PID: SIGTERM (a clean controlled shutdown), SIGKILL after 20 s. */
export async function stopBrokerByPid(pid: number, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
  try {
    process.kill(pid, signal);
  } catch {
    return; // already gone
  }
  if (!(await waitForExit(pid, 20_000))) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
    await waitForExit(pid, 5_000);
  }
}

export async function startBroker(options: BrokerOptions = {}): Promise<RunningBroker> {
  // Free ports are found by binding port 0 and closing it; another process can take one in
  // between, so a bind failure on ports we chose is retried with new ones.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startBrokerOnce(options);
    } catch (error) {
      const retry = error instanceof BrokerError && error.code === 'BIND_FAILED' && options.ports === undefined && attempt < 3;
      if (!retry) throw error;
      options.log?.(`${error.message}; retrying on other ports`);
    }
  }
}

/** Free space a memory file system needs before a temporary data directory goes there. */
const IN_MEMORY_MIN_FREE_BYTES = 2 * 1024 ** 3;

/**
 * Where a temporary data directory goes: $IQGATE_KAFKA_TMPDIR if set; else /dev/shm (memory)
 * where it exists with 2 GiB free; else the OS temp directory. The data of a temporary broker
 * dies with it, so nothing is lost by keeping it in memory, and on a virtual machine's disk the
 * broker's request threads stalled: every index entry it appends is a store into a memory-mapped
 * index file (two per partition, 10 MB each), and with thousands of partitions most of those
 * stores page-faulted into the file system (ext4) after writeback had cleaned the page. A
 * profile (JFR) of bench:scale's broker put 30-50 % of its request threads' samples there, and
 * transactional calls waited 10-20 s; on /dev/shm neither happened (docs/engine.md).
 */
export function temporaryDataParent(env: NodeJS.ProcessEnv = process.env): string {
  if (env.IQGATE_KAFKA_TMPDIR !== undefined && env.IQGATE_KAFKA_TMPDIR !== '') return env.IQGATE_KAFKA_TMPDIR;
  try {
    const fs = statfsSync('/dev/shm');
    if (fs.bavail * fs.bsize >= IN_MEMORY_MIN_FREE_BYTES) return '/dev/shm';
  } catch {
    // no /dev/shm (macOS, Windows): the OS temp directory
  }
  return tmpdir();
}

async function startBrokerOnce(options: BrokerOptions): Promise<RunningBroker> {
  if (!commandExists('java', ['-version'])) {
    throw new BrokerError('JAVA_MISSING', 'java is not on PATH: the Kafka broker needs a Java 17+ runtime. Install OpenJDK 17 and retry.');
  }
  const libs = fetchBrokerJars(options);
  const ownsDataDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(temporaryDataParent(), 'iqgate-kafka-'));
  mkdirSync(dataDir, { recursive: true });
  const brokerPort = options.ports?.broker ?? (await freePort());
  const controllerPort = options.ports?.controller ?? (await freePort());
  const secured = options.secured === true ? prepareSecuredListener(dataDir, await freePort()) : undefined;
  const propertiesFile = join(dataDir, 'server.properties');
  writeFileSync(propertiesFile, serverProperties(dataDir, brokerPort, controllerPort, secured));
  const classpath = `${libs}/*`;
  const log4j = `-Dlog4j2.configurationFile=${join(here, 'log4j2.properties')}`;

  const format = spawnSync('java', [log4j, '-cp', classpath, 'kafka.tools.StorageTool', 'format', '-t', formattedClusterId(dataDir) ?? clusterId(), '-c', propertiesFile, '--ignore-formatted', ...(secured === undefined ? [] : scramArguments(secured))], {
    encoding: 'utf8',
    env: javaEnv(),
  });
  if (format.status !== 0) {
    throw new BrokerError('FORMAT_FAILED', `formatting the KRaft storage failed:\n${format.stdout}${format.stderr}`);
  }

  const logFile = join(dataDir, 'broker.log');
  const logFd = openSync(logFile, 'a');
  const started = Date.now();
  const child = spawn('java', [`-Xmx${options.heap ?? '512m'}`, `-Xms${options.heap ?? '512m'}`, log4j, '-cp', classpath, 'kafka.Kafka', propertiesFile], {
    stdio: ['ignore', logFd, logFd],
    env: javaEnv(),
    detached: options.tiedToProcess === false,
  });
  closeSync(logFd);
  const pid = child.pid;
  if (pid === undefined) throw new BrokerError('START_FAILED', 'could not spawn java');
  if (options.tiedToProcess !== false) startWatchdog(process.pid, pid, ownsDataDir ? dataDir : undefined);
  const brokers = `127.0.0.1:${brokerPort}`;

  let stopped = false;
  const stop = async (signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await stopBrokerByPid(pid, signal);
    if (ownsDataDir) rmSync(dataDir, { recursive: true, force: true });
  };

  try {
    await waitUntilReady(brokers, child, logFile, options.startTimeoutMs ?? 90_000);
  } catch (error) {
    await stop('SIGKILL'); // a broker that failed to start holds nothing worth a clean shutdown
    throw error;
  }
  child.unref();
  return { brokers, pid, dataDir, logFile, startupMs: Date.now() - started, ...(secured === undefined ? {} : { secured }), stop: () => stop() };
}
