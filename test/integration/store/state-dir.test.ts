/**
 * A state directory that cannot be used stops start-up with a coded error naming it, and
 * nothing in it (or, for a runtime, on the broker) is touched: locked by a running instance
 * (another process, or another engine in this one), or not writable by this process.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, chmodSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, type TestContext } from 'vitest';
import { StreamsBuilder } from '../../../src/processing/stream-builder.js';
import { changelogTopic } from '../../../src/processing/topic-names.js';
import { createRuntime } from '../../../src/runtime/runtime.js';
import { openLevelStoreEngine, serdes, type StoreEngine } from '../../../src/store/index.js';
import { createTopicsRetrying, kafkaBrokers, testKafka, uniqueName } from '../../support/kafka.js';

const HOLDER = fileURLToPath(new URL('./fixtures/hold-state-dir.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'iqgate-state-dir-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Every file under `dir` with its size, mtime and content hash: equal snapshots = nothing
 * touched. LOCK is never opened: closing any descriptor of a file drops every POSIX lock this
 * process holds on it, LevelDB's included.
 */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const path = join(dir, name);
    const stat = statSync(path);
    const hash = stat.isDirectory() || name === 'LOCK' ? '' : createHash('sha1').update(readFileSync(path)).digest('hex');
    out[name] = `${stat.isDirectory() ? 'dir' : stat.size} ${stat.mtimeMs} ${hash}`;
  }
  return out;
}

/** A state directory with one committed store, closed. */
async function existingStateDir(): Promise<string> {
  const dir = join(await tempDir(), 'state');
  const engine = await openLevelStoreEngine({ directory: dir });
  await engine.close();
  return dir;
}

/** Opens `dir` in a child process, which holds it until the test ends. */
async function holdInChild(dir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', HOLDER, dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  cleanups.push(() => { child.kill('SIGKILL'); });
  await new Promise<void>((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout!.on('data', (chunk: Buffer) => { if (chunk.toString().includes('open')) resolve(); });
    child.on('exit', (code) => reject(new Error(`holder exited with ${String(code)}: ${stderr}`)));
  });
  return child;
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes `dir` unwritable for this process: mode 0555, and for root (whom modes do not stop) the
 * immutable attribute. Skips the test where neither works (root without CAP_LINUX_IMMUTABLE).
 */
function makeUnwritable(context: TestContext, dir: string): void {
  chmodSync(dir, 0o555);
  cleanups.push(() => chmodSync(dir, 0o755));
  if (writable(dir) && spawnSync('chattr', ['+i', dir]).status === 0) cleanups.push(() => { spawnSync('chattr', ['-i', dir]); });
  if (writable(dir)) context.skip('cannot make a directory unwritable for this user here');
}

describe('a state directory that cannot be used', () => {
  it('held by a running instance in another process: STATE_DIR_LOCKED naming it and the holder, nothing touched', async () => {
    const dir = await existingStateDir();
    const holder = await holdInChild(dir);
    const before = snapshot(dir);
    const error = await openLevelStoreEngine({ directory: dir }).then(() => undefined, (e: unknown) => e);
    expect(error).toMatchObject({ code: 'STATE_DIR_LOCKED', details: { directory: dir } });
    expect((error as Error).message).toContain(dir);
    if (process.platform === 'linux') expect((error as { details: { pid?: number } }).details.pid).toBe(holder.pid);
    expect(snapshot(dir), 'LevelDB would have rotated the holder\'s LOG').toEqual(before);
  });

  it('held by another engine in this process: STATE_DIR_LOCKED, and that engine goes on working', async () => {
    const dir = await existingStateDir();
    const first: StoreEngine = await openLevelStoreEngine({ directory: dir });
    cleanups.push(() => first.close());
    const before = snapshot(dir);
    await expect(openLevelStoreEngine({ directory: dir })).rejects.toMatchObject({ code: 'STATE_DIR_LOCKED', details: { directory: dir } });
    expect(snapshot(dir)).toEqual(before);
    const stores = await first.openTask('0_0', [{ name: 'counts', partition: 0 }]);
    await stores.close();
  });

  it('not writable: STATE_DIR_NOT_WRITABLE naming it, its files untouched', async (context) => {
    const dir = await existingStateDir();
    makeUnwritable(context, dir);
    const before = snapshot(dir);
    const error = await openLevelStoreEngine({ directory: dir }).then(() => undefined, (e: unknown) => e);
    expect(error).toMatchObject({ code: 'STATE_DIR_NOT_WRITABLE', details: { directory: dir, path: dir } });
    expect((error as Error).message).toContain(dir);
    expect(snapshot(dir)).toEqual(before);
  });

  it('missing, under a directory that is not writable: STATE_DIR_NOT_WRITABLE naming both, nothing created', async (context) => {
    const parent = join(await tempDir(), 'parent');
    mkdirSync(parent);
    makeUnwritable(context, parent);
    const dir = join(parent, 'app', 'state');
    await expect(openLevelStoreEngine({ directory: dir })).rejects.toMatchObject({ code: 'STATE_DIR_NOT_WRITABLE', details: { directory: dir, path: parent } });
    expect(readdirSync(parent)).toEqual([]);
  });

  it('stops a runtime\'s start before any topic is created or its instance files written', async () => {
    const dir = await existingStateDir();
    await holdInChild(dir);
    const before = snapshot(dir);
    const input = uniqueName('state-dir-in');
    const admin = testKafka().admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await createTopicsRetrying(admin, [{ topic: input, numPartitions: 1 }]);
    const applicationId = uniqueName('state-dir-app');
    const builder = new StreamsBuilder();
    builder.table(input, { store: 'latest', key: serdes.string, value: serdes.string });
    const runtime = createRuntime({ applicationId, brokers: kafkaBrokers(), stateDir: dir, logLevel: 'silent', topology: builder.build(), startupMaxAttempts: 1 });
    await expect(runtime.start()).rejects.toMatchObject({ code: 'STATE_DIR_LOCKED' });
    expect(runtime.state).toBe('FAILED');
    expect(await admin.listTopics()).not.toContain(changelogTopic(applicationId, 'latest'));
    expect(snapshot(dir), 'no iqgate-instance.json or member file either').toEqual(before);
  });
});
