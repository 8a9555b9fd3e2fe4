/**
 * `createLogger(options)`: iqgate's pino logger. A person at a terminal gets one readable line
 * per record (pino-pretty); anything else — a pipe, a file, a container's log collector — gets
 * pino's JSON lines, one object per line, which log shippers parse. `format` overrides the
 * choice (IQGATE_LOG_FORMAT in src/main.ts).
 */
import { createRequire } from 'node:module';
import { pino, type LevelWithSilent, type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';

export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface LoggerOptions {
  /** Default `info`. */
  readonly level?: LevelWithSilent;
  /** Default: `pretty` when the destination is a terminal, `json` otherwise (see logFormatFor). */
  readonly format?: LogFormat;
  /** Where the lines go. Default: standard output. */
  readonly destination?: NodeJS.WritableStream & { readonly isTTY?: boolean };
}

/** The configured format, else pretty for a terminal and JSON for everything else. */
export function logFormatFor(configured: LogFormat | undefined, isTerminal: boolean): LogFormat {
  return configured ?? (isTerminal ? 'pretty' : 'json');
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  // A second line of defence: nothing logs a secret on purpose (kafka-security.ts logs the
  // settings' description only), and a field that carries one anyway is censored.
  const redact = { paths: REDACTED_PATHS, censor: '[redacted]' };
  const isTerminal = (options.destination ?? process.stdout).isTTY === true;
  if (logFormatFor(options.format, isTerminal) === 'json') {
    return options.destination === undefined ? pino({ level, redact }) : pino({ level, redact }, options.destination);
  }
  const pretty = loadPinoPretty()({
    // Synchronous, in this thread: no worker to start, and nothing lost when the process exits
    // right after a line (a failed start-up). Pretty output is for people, not for throughput.
    destination: options.destination ?? 1,
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    // One line per record, the fields after the message; an error's stack still gets its lines.
    singleLine: true,
    colorize: isTerminal && pinoPrettyColors(),
  });
  return pino({ level, redact }, pretty);
}

/** Fields that hold secrets wherever they appear in a log record's object (two levels deep). */
/**
 * Fields that hold secrets, wherever they sit in a logged object up to four levels down: as
 * iqgate names them (`kafkaSecurity.sasl.password`, `kafkaSecurity.ssl.key`), as librdkafka's
 * properties name them (`sasl.password`, `ssl.key.pem`), and HTTP's. A backstop: nothing logs
 * such objects on purpose.
 */
const SECRET_FIELDS = ['password', 'keyPassword', 'authorization', 'clusterSecret', '["sasl.password"]', '["ssl.key.pem"]', '["ssl.key.password"]', '["sasl.oauthbearer.client.secret"]', 'ssl.key'];
const REDACTED_PATHS = SECRET_FIELDS.flatMap((field) => [0, 1, 2, 3, 4].map((depth) => `${'*.'.repeat(depth)}${field}`.replace('.[', '[')));

// Loaded only for pretty output (a CommonJS package, so synchronously through require): JSON
// deployments do not pay its ~25 ms of module loading at every start.
const require = createRequire(import.meta.url);

function loadPinoPretty(): typeof PinoPretty {
  return require('pino-pretty') as typeof PinoPretty;
}

/** pino-pretty's own answer (colorette: NO_COLOR, FORCE_COLOR, TERM=dumb, …). */
function pinoPrettyColors(): boolean {
  return loadPinoPretty().isColorSupported;
}
