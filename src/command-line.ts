/**
 * The `iqgate` command line (src/cli.ts is the package.json `bin`): `iqgate [start]` runs src/main.ts, `iqgate kafka`
 * the local broker launcher (scripts/kafka/cli.ts), `iqgate --help` lists every option and
 * environment variable with its default (src/cli-help.ts).
 *
 * The command line is checked before anything starts: an unknown command or flag, a missing
 * flag value, is an INVALID_CONFIG naming it, and exit code 2 — as is a bad environment value,
 * which main() checks first thing (its readEnv). Each start flag only sets its environment
 * variable, so flags and environment are validated by the same schema.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { helpText, START_ENVIRONMENT } from './cli-help.js';
import { IqgateError } from './errors.js';
import { describeLibrdkafka } from './kafka/select-kafka-client.js';

/** Bad input on the command line or in the environment exits 2, as usage errors conventionally do. */
export const USAGE_EXIT_CODE = 2;

export type Command =
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  /** `env`: the variables the flags set. */
  | { readonly kind: 'start'; readonly env: Readonly<Record<string, string>> }
  /** `args`: what scripts/kafka/cli.ts reads from its argv. */
  | { readonly kind: 'kafka'; readonly args: readonly string[] };

function usageError(message: string, cause?: unknown): IqgateError {
  return new IqgateError('INVALID_CONFIG', `${message} (see iqgate --help)`, { details: { exitCode: USAGE_EXIT_CODE }, ...(cause === undefined ? {} : { cause }) });
}

/** parseArgs' own messages name the flag and say what is wrong; they become usage errors. */
function parse<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    // Node's message for an unknown flag goes on about positionals; name the flag instead.
    const unknown = (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /'([^']+)'/.exec((error as Error).message)?.[1] : undefined;
    throw usageError(unknown === undefined ? (error as Error).message : `unknown option ${unknown}`, error);
  }
}

/** Reads the command line (without `node` and the script); throws a usage error on bad input. */
export function parseCommandLine(argv: readonly string[]): Command {
  const [first, ...rest] = argv;
  if (first === 'kafka') return parseKafka(rest);
  if (first !== undefined && first !== 'start' && !first.startsWith('-')) throw usageError(`unknown command "${first}": use start or kafka`);
  const tokens = first === 'start' ? rest : argv;
  const options = Object.fromEntries(START_ENVIRONMENT.filter((entry) => entry.flag !== undefined).map((entry) => [entry.flag!, { type: 'string' as const }]));
  const { values, positionals } = parse({
    args: [...tokens],
    strict: true,
    allowPositionals: true,
    options: { ...options, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } },
  });
  if (values.help === true) return { kind: 'help' };
  if (values.version === true) return { kind: 'version' };
  if (positionals.length > 0) throw usageError(`unexpected argument "${positionals[0]}"`);
  const env: Record<string, string> = {};
  for (const entry of START_ENVIRONMENT) {
    const value = entry.flag === undefined ? undefined : (values as Record<string, unknown>)[entry.flag];
    if (typeof value === 'string') env[entry.name] = value;
  }
  return { kind: 'start', env };
}

function parseKafka(argv: readonly string[]): Command {
  const { values, positionals } = parse({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: { background: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help === true) return { kind: 'help' };
  const [command = 'start', ...extra] = positionals;
  if (!['start', 'stop', 'fetch'].includes(command)) throw usageError(`unknown kafka command "${command}": use start, stop or fetch`);
  if (extra.length > 0) throw usageError(`unexpected argument "${extra[0]}"`);
  if (values.background === true && command !== 'start') throw usageError(`--background goes with kafka start, not kafka ${command}`);
  return { kind: 'kafka', args: values.background === true ? [command, '--background'] : [command] };
}

/** package.json's version, from src/ (development) or dist/src/ (the build). */
function packageVersion(): string {
  for (const relative of ['../package.json', '../../package.json']) {
    const path = fileURLToPath(new URL(relative, import.meta.url));
    if (!existsSync(path)) continue;
    const json = JSON.parse(readFileSync(path, 'utf8')) as { name?: string; version?: string };
    if (json.name === 'iqgate' && json.version !== undefined) return json.version;
  }
  return 'unknown';
}

/** Runs the command `argv` (without `node` and the script) names; exits 2 on bad input. */
export async function runCommandLine(argv: readonly string[]): Promise<void> {
  let command: Command;
  try {
    command = parseCommandLine(argv);
  } catch (error) {
    if (!(error instanceof IqgateError)) throw error;
    console.error(`iqgate: ${error.code}: ${error.message}`);
    process.exit(USAGE_EXIT_CODE);
  }
  switch (command.kind) {
    case 'help':
      process.stdout.write(helpText(packageVersion(), describeLibrdkafka()));
      return;
    case 'version':
      console.log(packageVersion());
      return;
    case 'start': {
      Object.assign(process.env, command.env);
      const { runMain } = await import('./main.js');
      runMain();
      return;
    }
    case 'kafka':
      // The launcher reads its own argv and runs on import.
      process.argv = [process.argv[0]!, process.argv[1]!, ...command.args];
      await import('../scripts/kafka/cli.js');
      return;
  }
}
