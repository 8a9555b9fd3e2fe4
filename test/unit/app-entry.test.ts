import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as app from '../../src/app.js';
import * as api from '../../src/index.js';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** The modules `entry` loads at run time (type-only imports and exports left out): src files and packages. */
function runtimeImports(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/^(?:import|export)\s+(?!type\b)(?:[^'";]*?\sfrom\s+)?'([^']+)'/gm)) {
      const specifier = match[1]!;
      if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
      else packages.add(specifier);
    }
  };
  visit(join(SRC, entry));
  return { files, packages };
}

describe("'iqgate/app', the entry for application modules", () => {
  it('exports what an application module needs, as the whole API does', () => {
    for (const name of ['defineApp', 'StreamsBuilder', 'TopologyBuilder', 'serdes', 'IqgateError'] as const) {
      expect(app[name], name).toBeDefined();
      expect(app[name], name).toBe(api[name]);
    }
  });

  it('loads neither the gateway, the query engine, the runtime nor a Kafka client or LevelDB', () => {
    const { files, packages } = runtimeImports('app.ts');
    const heavy = [...files].map((f) => f.slice(SRC.length)).filter((f) => /^(graphql|query|kafka)\/|^runtime\/runtime\.ts$|^store\/level/.test(f));
    expect(heavy).toEqual([]);
    expect([...packages].filter((p) => !p.startsWith('node:'))).toEqual([]);
    // The check sees imports at all: the whole API's graph holds the gateway.
    expect([...runtimeImports('index.ts').packages]).toContain('graphql-yoga');
  });

  it('is exported by the package', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { exports: Record<string, unknown> };
    expect(Object.keys(pkg.exports)).toContain('./app');
  });
});
