/**
 * iqgate as a user gets it: `npm pack` (its prepack builds dist/), the tarball installed into a
 * fresh project outside the repository, and there, with plain `node` — no tsx, no sources — an
 * embedded application against the test broker queried over HTTP, the `iqgate` command (help,
 * bad input, and `iqgate start` on an application module), and a TypeScript consumer type-checked
 * against the shipped declarations.
 *
 * The install omits optional dependencies: the native Kafka client would otherwise run its own
 * install script in the user's project (a download, else a 2-minute build); kafkajs serves here.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTopicsRetrying, kafkaBrokers, testKafka, uniqueName, waitFor } from '../../support/kafka.js';
import { shipEnv } from './ship-env.js';
import { balancesAt, sendAccounts } from '../../fixtures/apps/accounts-data.js';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const work = mkdtempSync(join(tmpdir(), 'iqgate-pack-'));
const project = join(work, 'consumer');
let tarball: string;
let installLog = '';
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = shipEnv(), timeout = 240_000): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout });
  return { status: result.status, stdout: result.stdout, stderr: `${result.stderr}${result.error ? String(result.error) : ''}` };
}

/** Runs `command`, throwing with its output when it fails; returns what it printed, stdout then stderr. */
function succeed(command: string, args: string[], cwd: string): string {
  const result = run(command, args, cwd);
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${String(result.status)}):\n${result.stdout}${result.stderr}`.slice(-4000));
  return `${result.stdout}${result.stderr}`;
}

beforeAll(() => {
  succeed('npm', ['pack', '--pack-destination', work], root);
  const packed = readdirSync(work).filter((file) => file.endsWith('.tgz'));
  expect(packed).toHaveLength(1);
  tarball = join(work, packed[0]!);
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'iqgate-consumer', version: '1.0.0', private: true, type: 'module' }, null, 2));
  installLog = succeed('npm', ['install', tarball, '--omit=optional', '--no-audit', '--no-fund'], project);
}, 400_000);

/** Starts `node <args>` in the consumer project; resolves the first URL it prints after `marker`. */
async function startInProject(args: string[], env: Record<string, string>, marker: RegExp): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  let output = '';
  const child = spawn(process.execPath, args, { cwd: project, env: shipEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitFor(() => marker.test(output) || child.exitCode !== null, 90_000, 100).catch(() => undefined);
  const url = marker.exec(output)?.[1];
  if (url === undefined) throw new Error(`no URL from node ${args.join(' ')} (exit ${String(child.exitCode)}):\n${output}`);
  return { child, url, output: () => output };
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  child.kill('SIGTERM');
  return exited;
}

async function createTopicWithAccounts(topic: string): Promise<void> {
  const kafka = testKafka();
  const admin = kafka.admin();
  await admin.connect();
  await createTopicsRetrying(admin, [{ topic, numPartitions: 2 }]);
  await admin.disconnect();
  await sendAccounts(kafka, topic);
}

describe('the packed package, installed in a fresh project', () => {
  it(`installs on Node ${process.versions.node} without an engine warning, and says which Node lines it supports`, () => {
    expect(installLog).not.toMatch(/EBADENGINE/);
    const { engines } = JSON.parse(readFileSync(join(project, 'node_modules', 'iqgate', 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(engines.node).toBe('^22.15.0 || ^24.0.0 || ^26.0.0');
  });

  it('ships compiled JavaScript, declarations, source maps and the files they read, not the sources', () => {
    const listing = run('tar', ['-tzf', tarball], work).stdout.split('\n').filter((line) => line !== '');
    for (const file of ['package/package.json', 'package/dist/src/index.js', 'package/dist/src/index.d.ts', 'package/dist/src/index.js.map', 'package/dist/src/cli.js', 'package/dist/schema.graphql', 'package/scripts/install-kafka-native.mjs', 'package/dist/scripts/kafka/pom.xml']) {
      expect(listing, file).toContain(file);
    }
    expect(listing.filter((file) => /\.[cm]?ts$/.test(file) && !file.endsWith('.d.ts'))).toEqual([]);
    expect(listing.filter((file) => file.startsWith('package/test/') || file.startsWith('package/bench/'))).toEqual([]);
  });

  it('runs an embedded application with plain node against the broker, queried over HTTP', async () => {
    const topic = uniqueName('packed-accounts');
    await createTopicWithAccounts(topic);
    writeFileSync(join(project, 'embedded.mjs'), `
import { createRuntime, installShutdownHooks, serdes, serve, StreamsBuilder } from 'iqgate';
const builder = new StreamsBuilder();
builder.table(process.env.TOPIC, { store: 'balances', key: serdes.string, value: serdes.json });
const runtime = createRuntime({ applicationId: process.env.APP_ID, brokers: process.env.KAFKA_BROKERS, stateDir: process.env.STATE_DIR, topology: builder.build(), logLevel: 'warn', commitIntervalMs: 50 });
await runtime.start();
const server = await serve(runtime, { port: 0 });
installShutdownHooks({ stop: async () => { await server.close(); await runtime.stop(); } });
console.log('serving at ' + server.url);
`);
    const embedded = await startInProject(['embedded.mjs'], {
      TOPIC: topic,
      APP_ID: uniqueName('packed-embedded'),
      KAFKA_BROKERS: kafkaBrokers().join(','),
      STATE_DIR: mkdtempSync(join(work, 'state-')),
    }, /serving at (\S+)/);
    expect(await balancesAt(embedded.url), embedded.output()).toEqual({ alice: { value: { balance: 12 } }, bob: { value: { balance: 5 } } });
    expect(await stop(embedded.child), embedded.output()).toBe(0);
  });

  it('runs `iqgate start` on an application module, with flags', async () => {
    const topic = uniqueName('packed-sidecar');
    await createTopicWithAccounts(topic);
    writeFileSync(join(project, 'accounts-app.mjs'), `
import { defineApp, serdes, StreamsBuilder } from 'iqgate';
export default defineApp({
  applicationId: 'accounts',
  topology: () => {
    const builder = new StreamsBuilder();
    builder.table(process.env.TOPIC, { store: 'balances', key: serdes.string, value: serdes.json });
    return builder.build();
  },
  options: { commitIntervalMs: 50 },
});
`);
    const bin = join(project, 'node_modules', 'iqgate', 'dist', 'src', 'cli.js');
    const sidecar = await startInProject(
      [bin, 'start', '--app', './accounts-app.mjs', '--port', '0', '--brokers', kafkaBrokers().join(','), '--app-id', uniqueName('packed-sidecar'), '--state-dir', mkdtempSync(join(work, 'state-')), '--log-level', 'warn'],
      { TOPIC: topic },
      /GraphiQL: (\S+)/,
    );
    expect(await balancesAt(sidecar.url), sidecar.output()).toEqual({ alice: { value: { balance: 12 } }, bob: { value: { balance: 5 } } });
    expect(await stop(sidecar.child), sidecar.output()).toBe(0);
  });

  it('answers `npx iqgate --help` with every option and its default, and bad input with exit code 2', () => {
    // npm_config_yes=false: npx must find the installed bin, never fetch a package named iqgate.
    const npx = (args: string[], env: Record<string, string> = {}) => run('npx', ['iqgate', ...args], project, shipEnv({ npm_config_yes: 'false', ...env }));
    const help = npx(['--help']);
    expect(help.status, help.stderr).toBe(0);
    for (const line of ['--brokers, KAFKA_BROKERS', '--port, PORT', '--state-dir, IQGATE_STATE_DIR', 'default: 4000', 'IQGATE_SKIP_NATIVE_KAFKA']) expect(help.stdout).toContain(line);

    const flag = npx(['start', '--prot', '4000']);
    expect(flag.status).toBe(2);
    expect(flag.stderr).toContain('iqgate: INVALID_CONFIG: unknown option --prot');

    const environment = npx(['start'], { PORT: 'eighty', KAFKA_BROKERS: '127.0.0.1:1' });
    expect(environment.status).toBe(2);
    expect(environment.stderr).toContain('iqgate: INVALID_CONFIG: invalid environment: PORT');
    expect(environment.stderr).toContain('"eighty"');
  });

  it('type-checks a TypeScript consumer against the shipped declarations', () => {
    writeFileSync(join(project, 'consumer.ts'), `
import { createRuntime, serdes, StreamsBuilder, type Runtime } from 'iqgate';
const builder = new StreamsBuilder();
builder.table('accounts', { store: 'balances', key: serdes.string, value: serdes.json });
export const runtime: Runtime = createRuntime({ applicationId: 'a', brokers: 'k:9092', topology: builder.build() });
// @ts-expect-error applicationId must be a string: the declarations carry the option types
createRuntime({ applicationId: 1, brokers: 'k:9092', topology: builder.build() });
`);
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, typeRoots: [join(root, 'node_modules', '@types')], types: ['node'] },
      files: ['consumer.ts'],
    }));
    const tsc = run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project], project);
    expect(tsc.status, `${tsc.stdout}${tsc.stderr}`).toBe(0);
  });
});
