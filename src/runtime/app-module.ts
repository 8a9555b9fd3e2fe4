/**
 * Your application as a module, for `npm start` / the Docker image as a sidecar:
 * `IQGATE_APP=./my-app.ts npm start` runs your topology (instead of the wordcount demo) on the
 * runtime and serves its stores over GraphQL. The module's default export is an AppDefinition
 * (`defineApp` only adds type checking), or a function returning one:
 *
 * ```ts
 * import { defineApp, serdes, StreamsBuilder } from 'iqgate/app'; // or 'iqgate' (the whole API)
 * export default defineApp({
 *   applicationId: 'accounts',
 *   topology: () => {
 *     const builder = new StreamsBuilder();
 *     builder.table('accounts', { store: 'balances', key: serdes.string, value: serdes.json });
 *     return builder.build();
 *   },
 * });
 * ```
 *
 * Brokers, state directory, guarantee, advertised URL and port come from the environment (see
 * src/main.ts), which wins over `options`, so one image serves every environment.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { IqgateError } from '../errors.js';
import type { Topology } from '../processing/topology.js';
import type { RuntimeOptionsInput } from './runtime-options.js';

export interface AppDefinition {
  /** The Kafka Streams `application.id`: group id, transactional id and internal topic prefix. IQGATE_APP_ID overrides it. */
  readonly applicationId?: string;
  /** The topology, or a function building it (called once, at start-up). */
  readonly topology: Topology | (() => Topology | Promise<Topology>);
  /** Runtime options (commit interval, cache size, error policies, ...); brokers and the rest of the environment come from main.ts. */
  readonly options?: Omit<Partial<RuntimeOptionsInput>, 'applicationId' | 'brokers'>;
}

export interface LoadedApp {
  readonly applicationId: string | undefined;
  readonly topology: Topology;
  readonly options: Omit<Partial<RuntimeOptionsInput>, 'applicationId' | 'brokers'>;
}

/** Type checking for an application module's default export. */
export function defineApp(app: AppDefinition): AppDefinition {
  return app;
}

function invalid(path: string, problem: string, cause?: unknown): IqgateError {
  return new IqgateError('INVALID_CONFIG', `IQGATE_APP=${path}: ${problem}`, { ...(cause === undefined ? {} : { cause }), details: { app: path } });
}

function isTopology(value: unknown): value is Topology {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<Record<keyof Topology, unknown>>;
  return candidate.nodes instanceof Map && candidate.stores instanceof Map && Array.isArray(candidate.subTopologies) && candidate.children instanceof Map;
}

/**
 * Imports the module at `path` (relative to `cwd`; TypeScript only under tsx, `npm run dev`)
 * and checks its default export. Every problem is an INVALID_CONFIG naming the module.
 */
export async function loadApp(path: string, cwd: string = process.cwd()): Promise<LoadedApp> {
  let module: { default?: unknown };
  try {
    module = (await import(pathToFileURL(resolve(cwd, path)).href)) as { default?: unknown };
  } catch (error) {
    const missing = (error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(resolve(cwd, path));
    // Compiled iqgate runs on plain node, which does not load TypeScript (Node 20).
    const typescript = (error as { code?: string }).code === 'ERR_UNKNOWN_FILE_EXTENSION' && /\.[cm]?ts$/.test(path);
    const hint = typescript ? ' (compile the module to JavaScript, or run iqgate under `node --import tsx`)' : '';
    throw invalid(path, missing ? 'no such module' : `the module failed to load: ${String(error)}${hint}`, error);
  }
  let app = module.default;
  if (typeof app === 'function') app = await (app as () => unknown)();
  if (typeof app !== 'object' || app === null) throw invalid(path, 'its default export must be an app definition (use defineApp({ topology, ... })) or a function returning one');
  const definition = app as Partial<AppDefinition>;
  if (definition.applicationId !== undefined && (typeof definition.applicationId !== 'string' || !/^[a-zA-Z0-9._-]+$/.test(definition.applicationId))) {
    throw invalid(path, `applicationId must be letters, digits, ".", "_" or "-", got ${JSON.stringify(definition.applicationId)}`);
  }
  let topology: unknown = definition.topology;
  try {
    if (typeof topology === 'function') topology = await (topology as () => unknown)();
  } catch (error) {
    throw invalid(path, `building the topology threw: ${String(error)}`, error);
  }
  if (!isTopology(topology)) throw invalid(path, 'topology must be a Topology (StreamsBuilder#build() or TopologyBuilder#build()) or a function returning one');
  if (definition.options !== undefined && (typeof definition.options !== 'object' || definition.options === null)) throw invalid(path, 'options must be an object');
  return { applicationId: definition.applicationId, topology, options: definition.options ?? {} };
}
