/**
 * The Docker image without Docker: its file tree rebuilt from the Dockerfile's own COPY and RUN
 * lines (image-tree.ts: the build stage compiles, the runtime stage gets what it copies and a
 * real `npm ci --omit=dev`), then its CMD started there against the test broker and its
 * HEALTHCHECK run. A file the Dockerfile forgets to copy fails the build, the install or the
 * start-up here.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postGraphQL } from '../../support/graphql.js';
import { kafkaBrokers, uniqueName, waitFor } from '../../support/kafka.js';
import { buildImageTree, type ImageTree } from './image-tree.js';
import { freePort, shipEnv } from './ship-env.js';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
const work = mkdtempSync(join(tmpdir(), 'iqgate-image-'));
let tree: ImageTree;
let server: ChildProcess | undefined;
afterAll(() => {
  if (server?.exitCode === null) server.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

beforeAll(() => {
  tree = buildImageTree({ context: root, dockerfile, into: join(work, 'image'), env: shipEnv() });
}, 400_000);

/** Files under `dir`, relative, node_modules left out. */
function filesOf(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !join(entry.parentPath, entry.name).includes(`${dir}/node_modules`))
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1));
}

/** Runs the HEALTHCHECK command as Docker would, in the image's WORKDIR with its environment. */
function healthcheck(env: NodeJS.ProcessEnv): number | null {
  const [command, ...args] = tree.healthcheck!;
  const result = spawnSync(command === 'node' ? process.execPath : command!, args, { cwd: tree.dir, env, timeout: 10_000 });
  return result.status;
}

describe('the Docker image', () => {
  it('holds compiled JavaScript and production dependencies only, runs as a non-root user, its state on a volume', () => {
    const files = filesOf(tree.dir);
    expect(files).toContain('dist/src/cli.js');
    expect(files).toContain('dist/schema.graphql');
    expect(files.filter((file) => /\.[cm]?ts$/.test(file) && !file.endsWith('.d.ts'))).toEqual([]);
    expect(existsSync(join(tree.dir, 'node_modules', 'graphql-yoga', 'package.json'))).toBe(true);
    for (const dev of ['tsx', 'typescript', 'vitest']) expect(existsSync(join(tree.dir, 'node_modules', dev)), dev).toBe(false);
    expect(tree.user).toBeDefined();
    expect(tree.user).not.toMatch(/^(root|0)(:|$)/);
    expect(tree.volumes).toContain(tree.env.IQGATE_STATE_DIR);
    expect(tree.cmd[0]).toBe('node');
    expect(tree.healthcheck?.join(' ')).toContain('/ready');
    // The native Kafka client came from the build stage, and loads here without build tools.
    expect(existsSync(join(tree.dir, 'node_modules/@confluentinc/kafka-javascript/build/Release/confluent-kafka-javascript.node'))).toBe(true);
    const load = spawnSync(process.execPath, ['-e', "console.log(require('@confluentinc/kafka-javascript').librdkafkaVersion)"], { cwd: tree.dir, encoding: 'utf8' });
    expect(load.status, load.stderr).toBe(0);
    expect(load.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('builds and runs on Node 24 LTS, no end-of-life base', () => {
    const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((match) => match[1]);
    expect(bases.length).toBeGreaterThanOrEqual(2);
    for (const base of bases) expect(base).toMatch(/^node:24-[a-z]+-slim$/);
  });

  it('starts from its CMD against the broker, turns healthy, serves queries and stops on SIGTERM', async () => {
    const app = uniqueName('image');
    const port = await freePort();
    const state = mkdtempSync(join(work, 'state-'));
    const env = shipEnv({
      ...tree.env,
      // The volume, and a free port instead of 4000; the rest is the image's ENV.
      IQGATE_STATE_DIR: state,
      PORT: String(port),
      KAFKA_BROKERS: kafkaBrokers().join(','),
      IQGATE_APP_ID: app,
      IQGATE_DEMO: 'wordcount',
      IQGATE_INPUT_TOPIC: `${app}-input`,
      IQGATE_OUTPUT_TOPIC: `${app}-output`,
      IQGATE_DEMO_LINES_PER_SECOND: '50',
      IQGATE_LOG_LEVEL: 'warn',
    });
    // Nothing listens yet: the health check must fail (so that it can).
    expect(healthcheck(env)).not.toBe(0);
    const [command, ...args] = tree.cmd;
    const executable = command === 'node' ? process.execPath : command!;

    // The image listens on 0.0.0.0: without an authentication choice it refuses to start (exit 2, before any broker call).
    const refused = spawnSync(executable, args, { cwd: tree.dir, env, timeout: 60_000, encoding: 'utf8' });
    expect(refused.status, refused.stderr).toBe(2);
    expect(refused.stderr + refused.stdout).toContain('IQGATE_ANONYMOUS=true');

    // With an API key file, as a deployment would mount one.
    const apiKey = 'image-test-key-0123456789abcdef';
    const keysFile = join(work, 'api-keys.json');
    writeFileSync(keysFile, JSON.stringify([{ name: 'image-test', key: apiKey, stores: ['*'] }]));
    env.IQGATE_API_KEYS_FILE = keysFile;

    let output = '';
    server = spawn(executable, args, { cwd: tree.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    server.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    server.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await waitFor(() => server!.exitCode !== null || healthcheck(env) === 0, 90_000, 500).catch(() => undefined);
    expect(server.exitCode, output).toBeNull();
    expect(healthcheck(env), output).toBe(0);
    // Printed once the gateway listens, which may come after the first healthy probe.
    await waitFor(() => output.includes(`GraphiQL: http://0.0.0.0:${port}/graphql`), 30_000, 100).catch(() => undefined);
    expect(output).toContain(`GraphiQL: http://0.0.0.0:${port}/graphql`);

    const url = `http://127.0.0.1:${port}/graphql`;
    const anonymous = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ stores { name } }' }) });
    expect(anonymous.status).toBe(401);
    await waitFor(async () => {
      const { get } = await postGraphQL<{ get: { value: string | null } }>(url, '{ get(store: "word-counts", key: "kafka", readCommitted: false) { value } }', {}, { authorization: `Bearer ${apiKey}` });
      return Number(get.value ?? 0) > 0;
    }, 60_000, 250);
    // On librdkafka: the image's native client, not the kafkajs fallback.
    const { instance } = await postGraphQL<{ instance: { kafkaClient: string } }>(url, '{ instance { kafkaClient } }', {}, { authorization: `Bearer ${apiKey}` });
    expect(instance.kafkaClient).toBe('librdkafka');

    const exited = new Promise<number | null>((done) => server!.once('exit', (code) => done(code)));
    server.kill('SIGTERM');
    expect(await exited, output).toBe(0);
  });

  it('is what compose.yaml runs beside the broker it advertises', () => {
    // No Docker here to run compose; the settings that must agree with the image and the broker are checked.
    const compose = readFileSync(join(root, 'compose.yaml'), 'utf8');
    const kafkaVersion = /<kafka\.version>([^<]+)</.exec(readFileSync(join(root, 'scripts', 'kafka', 'pom.xml'), 'utf8'))?.[1];
    expect(compose).toContain(`image: apache/kafka:${kafkaVersion}`);
    expect(compose).toMatch(/^ {2}iqgate:\n {4}build: \.$/m);
    const brokers = /KAFKA_BROKERS: (\S+)/.exec(compose)?.[1];
    const advertised = /KAFKA_ADVERTISED_LISTENERS: (\S+)/.exec(compose)?.[1]?.split(',').map((listener) => listener.replace(/^\w+:\/\//, ''));
    expect(advertised).toContain(brokers);
    expect(compose).toContain(`- "${tree.env.PORT}:${tree.env.PORT}"`);
    expect(compose).toContain(`- iqgate-state:${tree.env.IQGATE_STATE_DIR}`);
    // The image listens on 0.0.0.0, which refuses to start without an authentication choice.
    expect(tree.env.HOST).toBe('0.0.0.0');
    expect(compose).toMatch(/^ {6}(IQGATE_ANONYMOUS: "true"|IQGATE_API_KEYS_FILE: \S+|IQGATE_JWT_JWKS_URL: \S+)$/m);
  });

  it('fails to rebuild when the Dockerfile forgets a COPY', () => {
    // The build script: its absence fails at once (a missing source directory fails later, in tsc).
    const missing = dockerfile.replace(/^COPY scripts\/build\.mjs \.\/scripts\/\n/m, '');
    expect(missing).not.toBe(dockerfile);
    expect(() => buildImageTree({ context: root, dockerfile: missing, into: join(work, 'missing-copy'), env: shipEnv() })).toThrow(/RUN npm run build failed/);
  }, 60_000);
});
