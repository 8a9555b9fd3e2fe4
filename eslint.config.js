// Lint: typescript-eslint's recommended rules, plus the folder dependency direction of
// DESIGN.md §2 (store ← processing/query ← kafka/runtime ← graphql), enforced with
// no-restricted-imports so that a wrong-way import fails `npm test`.
// Flat config replaces (does not merge) a rule set twice for one file, so each folder
// gets exactly one entry listing everything it may not import.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** folder → what it must not import (relative folders and packages). */
const forbidden = {
  store: ['kafka', 'processing', 'query', 'graphql', 'runtime'],
  processing: ['kafka', 'query', 'graphql', 'runtime'],
  query: ['kafka', 'processing', 'graphql', 'runtime'],
  kafka: ['query', 'graphql', 'runtime'],
  runtime: ['graphql'],
  graphql: ['kafka', 'processing'],
};
const packagesOnlyFor = { kafkajs: 'kafka', '@confluentinc/kafka-javascript': 'kafka', graphql: 'graphql', 'graphql-yoga': 'graphql' };

const layers = Object.entries(forbidden).map(([folder, folders]) => {
  const packages = Object.entries(packagesOnlyFor)
    .filter(([, owner]) => owner !== folder)
    .map(([pkg]) => pkg);
  return {
    files: [`src/${folder}/**`],
    rules: {
      'no-restricted-imports': ['error', {
        paths: packages.map((name) => ({ name, message: `src/${folder}/ may not import ${name} (DESIGN.md §2).` })),
        patterns: folders.map((f) => ({ group: [`../${f}/*`, `../../${f}/*`], message: `src/${folder}/ may not depend on src/${f}/ (DESIGN.md §2).` })),
      }],
    },
  };
});

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'coverage/**', 'bench/results/**', '.tmp/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // Node 20 defines these globals as getters on globalThis: each read is a getter call (~25 ns,
  // measured against the module import; 1.5 % of bench:processing's thread went to reading
  // `Buffer`). The imported binding is a constant the optimizer folds (docs/engine.md).
  {
    files: ['src/**/*.ts', 'bench/**/*.ts', 'examples/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      'no-restricted-globals': ['error',
        { name: 'Buffer', message: "import { Buffer } from 'node:buffer': the global is a getter, read on every use (docs/engine.md)." },
        { name: 'performance', message: "import { performance } from 'node:perf_hooks': the global is a getter, read on every use (docs/engine.md)." },
        { name: 'TextDecoder', message: "import { TextDecoder } from 'node:util': the global is a getter (docs/engine.md)." },
        { name: 'TextEncoder', message: "import { TextEncoder } from 'node:util': the global is a getter (docs/engine.md)." },
      ],
    },
  },
  ...layers,
  // The dashboard's page (src/dashboard/assets/) is plain JavaScript run by the browser.
  {
    files: ['src/dashboard/assets/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(['window', 'document', 'location', 'history', 'fetch', 'setTimeout', 'requestAnimationFrame', 'AbortController', 'TextDecoderStream', 'URLSearchParams', 'URL', 'console'].map((name) => [name, 'readonly'])),
    },
  },
);
