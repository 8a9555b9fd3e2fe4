#!/usr/bin/env node
// `npm run build`: the package's JavaScript in dist/ — tsc with tsconfig.build.json (JavaScript,
// .d.ts and source maps with their sources inlined, the repository layout kept: dist/src,
// dist/examples, dist/scripts/kafka), then the files the code reads at run time next to it:
//   - schema.graphql → dist/schema.graphql (src/graphql/load-schema.ts looks two folders up);
//   - every file under src/ that is not TypeScript (e.g. src/dashboard/assets/**) → dist/src/;
//   - scripts/kafka/pom.xml and log4j2.properties → dist/scripts/kafka/ (the local broker).
// dist/ is removed first, so nothing stale ships.
/* global process, console */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const started = Date.now();

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
if (compiled.status !== 0) process.exit(compiled.status ?? 1);

const copy = (from) => {
  const target = join(dist, relative(root, from));
  mkdirSync(dirname(target), { recursive: true });
  cpSync(from, target);
};

copy(join(root, 'schema.graphql'));
for (const file of ['pom.xml', 'log4j2.properties']) copy(join(root, 'scripts', 'kafka', file));
let assets = 0;
for (const entry of readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || /\.[cm]?ts$/.test(entry.name)) continue;
  copy(join(entry.parentPath, entry.name));
  assets++;
}
chmodSync(join(dist, 'src', 'cli.js'), 0o755);
console.log(`built dist/ in ${Date.now() - started} ms (${assets} asset file(s) from src/)`);
