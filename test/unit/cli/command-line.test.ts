/**
 * The iqgate command line: `--help` lists exactly the environment main() validates, with the
 * defaults its schema applies, and bad input is an INVALID_CONFIG naming the flag, exit code 2.
 */
import { describe, expect, it } from 'vitest';
import { helpText, START_ENVIRONMENT } from '../../../src/cli-help.js';
import { parseCommandLine, USAGE_EXIT_CODE } from '../../../src/command-line.js';
import { IqgateError } from '../../../src/errors.js';
import { envSchema } from '../../../src/main.js';

function usageErrorOf(argv: string[]): IqgateError {
  try {
    parseCommandLine(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(IqgateError);
    return error as IqgateError;
  }
  throw new Error(`${argv.join(' ')} was accepted`);
}

describe('iqgate --help', () => {
  it('lists every variable main() reads, and only those, each with a flag', () => {
    expect(START_ENVIRONMENT.map((entry) => entry.name).sort()).toEqual(Object.keys(envSchema.shape).sort());
    const flags = START_ENVIRONMENT.map((entry) => entry.flag);
    expect(flags.every((flag) => flag !== undefined)).toBe(true);
    expect(new Set(flags).size).toBe(flags.length);
    const text = helpText('1.2.3');
    for (const entry of START_ENVIRONMENT) expect(text).toContain(`--${entry.flag}, ${entry.name}\n`);
  });

  it('shows the defaults the schema applies', () => {
    const defaults = envSchema.parse({}) as Record<string, unknown>;
    const withDefaults = Object.entries(defaults).filter(([, value]) => value !== undefined);
    expect(withDefaults.length).toBeGreaterThan(0);
    for (const [name, value] of withDefaults) {
      expect(START_ENVIRONMENT.find((entry) => entry.name === name)?.default, name).toBe(String(value));
    }
  });
});

describe('parseCommandLine', () => {
  it('maps start flags to their environment variables', () => {
    expect(parseCommandLine(['start', '--port', '0', '--brokers=k:9092', '--app', './app.js'])).toEqual({
      kind: 'start',
      env: { PORT: '0', KAFKA_BROKERS: 'k:9092', IQGATE_APP: './app.js' },
    });
    expect(parseCommandLine([])).toEqual({ kind: 'start', env: {} });
    expect(parseCommandLine(['--log-level', 'debug'])).toEqual({ kind: 'start', env: { IQGATE_LOG_LEVEL: 'debug' } });
    // The record-error policies and Kafka's security, by flag as by variable, validated alike.
    const { env } = parseCommandLine(['--processing-errors', 'dead-letter', '--deserialization-errors=skip', '--kafka-security-protocol', 'sasl_ssl']) as { env: Record<string, string> };
    expect(env).toEqual({ IQGATE_PROCESSING_ERRORS: 'dead-letter', IQGATE_DESERIALIZATION_ERRORS: 'skip', KAFKA_SECURITY_PROTOCOL: 'sasl_ssl' });
    expect(envSchema.parse(env)).toMatchObject({ IQGATE_PROCESSING_ERRORS: 'dead-letter', IQGATE_DESERIALIZATION_ERRORS: 'skip' });
    expect(envSchema.safeParse({ IQGATE_PROCESSING_ERRORS: 'ignore' }).success).toBe(false);
    expect(envSchema.safeParse({ KAFKA_SECURITY_PROTOCOL: 'tls' }).success).toBe(false);
  });

  it('knows help, version and the broker commands', () => {
    expect(parseCommandLine(['--help'])).toEqual({ kind: 'help' });
    expect(parseCommandLine(['start', '-h'])).toEqual({ kind: 'help' });
    expect(parseCommandLine(['-v'])).toEqual({ kind: 'version' });
    expect(parseCommandLine(['kafka'])).toEqual({ kind: 'kafka', args: ['start'] });
    expect(parseCommandLine(['kafka', 'start', '--background'])).toEqual({ kind: 'kafka', args: ['start', '--background'] });
    expect(parseCommandLine(['kafka', 'fetch'])).toEqual({ kind: 'kafka', args: ['fetch'] });
  });

  it.each([
    [['start', '--prot', '4000'], 'unknown option --prot'],
    [['--port'], "'--port <value>' argument missing"],
    [['serve'], 'unknown command "serve"'],
    [['start', 'extra'], 'unexpected argument "extra"'],
    [['kafka', 'restart'], 'unknown kafka command "restart"'],
    [['kafka', 'stop', '--background'], '--background goes with kafka start'],
    [['kafka', '--port', '1'], 'unknown option --port'],
  ])('rejects %j with a usage error naming it', (argv, message) => {
    const error = usageErrorOf(argv);
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.message).toContain(message);
    expect(error.details.exitCode).toBe(USAGE_EXIT_CODE);
  });
});
