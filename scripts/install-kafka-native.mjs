#!/usr/bin/env node
// Root `postinstall`: makes the optional native Kafka client, @confluentinc/kafka-javascript
// (librdkafka), loadable — or leaves it unloadable and says so; it never fails the install.
//
// Why this script and not the package's own install script: that script
// (`node-pre-gyp install --fallback-to-build`) downloads a prebuilt binary from GitHub and
// otherwise builds from source with librdkafka's default static linking, whose configure step
// downloads OpenSSL, zlib, zstd and curl sources. Where GitHub is unreachable (our development
// and CI machines reach only package registries) both fail, npm then deletes the optional
// dependency, and nothing can pass the one setting that works there, `CKJS_LINKING=dynamic`
// (build against the system OpenSSL and zlib), to a dependency's install script. So
// package.json's `allowScripts` denies the package's own script and this script does its job:
//   1. the package is absent (`--omit=optional`, unsupported platform): nothing to do;
//   2. it already loads (a repeated `npm install`): nothing to do;
//   3. `IQGATE_SKIP_NATIVE_KAFKA=1`: do nothing (iqgate then uses kafkajs);
//   4. download the prebuilt binary, as the package itself would (`node-pre-gyp install`);
//      with normal internet access this is where it ends and nothing is built;
//   5. otherwise build from the bundled librdkafka source with `CKJS_LINKING=dynamic` (unless
//      CKJS_LINKING is set: then as set); needs python3, make, a C/C++ compiler, libssl-dev,
//      zlib1g-dev; about 2 minutes on 2 cores. Output goes to a log file, its errors on failure;
//   6. if that fails too: a warning and exit 0 — the package stays installed but does not
//      load, and iqgate's runtime falls back to kafkajs (it decides by loading the module).
// Run it again by hand with `npm run postinstall`.
/* global process, console */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE = '@confluentinc/kafka-javascript';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const started = Date.now();

const say = (message) => console.log(`[kafka-native] ${message}`);
const warn = (message) => console.warn(`[kafka-native] WARNING: ${message}`);
const seconds = () => `${Math.round((Date.now() - started) / 1000)} s`;

/** Loads the package in a fresh process (a failed load must not be cached); null when it loads. */
function loadError() {
  const result = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(PACKAGE)})`], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (result.status === 0) return null;
  const lines = `${result.stderr ?? ''}${result.error ? String(result.error) : ''}`.split('\n');
  return lines.find((line) => /Error/.test(line))?.trim() ?? `exit ${result.status}`;
}

/** Runs node-pre-gyp in the package's directory, output captured; returns { ok, output }. */
function nodePreGyp(packageDir, args, env, timeoutMs) {
  const requireFromPackage = createRequire(join(packageDir, 'package.json'));
  const bin = requireFromPackage.resolve('@mapbox/node-pre-gyp/bin/node-pre-gyp');
  const result = spawnSync(process.execPath, [bin, ...args], {
    cwd: packageDir,
    env,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    timeout: timeoutMs,
  });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? `\n${result.error}\n` : ''}`;
  return { ok: result.status === 0, output };
}

function main() {
  let packageDir;
  try {
    packageDir = dirname(createRequire(join(root, 'package.json')).resolve(`${PACKAGE}/package.json`));
  } catch {
    say(`${PACKAGE} is not installed (optional dependency omitted); iqgate uses kafkajs.`);
    return;
  }
  const { version } = createRequire(import.meta.url)(join(packageDir, 'package.json'));
  const name = `${PACKAGE}@${version}`;

  if (loadError() === null) {
    say(`${name} loads; nothing to do.`);
    return;
  }
  if (/^(1|true|yes)$/i.test(process.env.IQGATE_SKIP_NATIVE_KAFKA ?? '')) {
    say(`IQGATE_SKIP_NATIVE_KAFKA is set: ${name} left without its native binary; iqgate uses kafkajs.`);
    return;
  }

  const download = nodePreGyp(packageDir, ['install'], process.env, 180_000);
  if (download.ok && loadError() === null) {
    say(`${name}: prebuilt binary downloaded (${seconds()}).`);
    return;
  }
  const reason = download.output.split('\n').find((line) => /\[error\]|ENOTFOUND|ECONNREFUSED|ETIMEDOUT|404/.test(line));
  const linking = process.env.CKJS_LINKING || 'dynamic';
  say(`${name}: no prebuilt binary (${reason?.trim() ?? 'download failed'}).`);
  say(`building librdkafka from source with CKJS_LINKING=${linking} (about 2 minutes on 2 cores)...`);

  const build = nodePreGyp(packageDir, ['install', '--build-from-source'], { ...process.env, CKJS_LINKING: linking }, 30 * 60_000);
  const logDir = join(root, 'node_modules', '.cache', 'iqgate');
  const logFile = join(logDir, 'kafka-native-build.log');
  try {
    mkdirSync(logDir, { recursive: true });
    writeFileSync(logFile, build.output);
  } catch {
    // The log is a convenience; its tail is printed below on failure anyway.
  }
  const error = build.ok ? loadError() : 'the build failed';
  if (error === null) {
    say(`${name} built and loads (${seconds()}; build log: ${relative(root, logFile)}).`);
    return;
  }
  const errors = build.output.split('\n')
    .filter((line) => /error|not found|failed/i.test(line) && !/stack at |^\s+at /.test(line))
    .slice(0, 8)
    // eslint-disable-next-line no-control-regex -- strips the terminal colours of configure's output
    .map((line) => `  ${line.replace(/\x1b(\[[0-9;]*m|\(B)/g, '').trim().slice(0, 300)}`);
  console.warn(errors.join('\n'));
  warn(`${name} could not be built (${error}); iqgate will use kafkajs.`);
  warn(`The build needs python3, make, a C/C++ compiler, libssl-dev and zlib1g-dev. Full log: ${relative(root, logFile)}.`);
  warn('After installing them, run `npm run postinstall` again.');
}

try {
  main();
} catch (error) {
  warn(`unexpected failure (${error?.stack ?? error}); iqgate will use kafkajs.`);
}
process.exit(0);
