/**
 * Query benchmark (docs/architecture.md §7): GraphQL key lookups/s and p99 over HTTP with concurrent
 * clients, and DataLoader-batched multi-key queries in keys/s — each for the yoga gateway and
 * for a bare graphql-js `execute` of the same query over node:http, in the same run, on the
 * same LevelDB-backed store. The load generator runs in a child process so clients and servers
 * use both cores and this process's CPU time is the servers' (query.*.cpu.*: CPU per request).
 * Servers bind 127.0.0.1 only. Prints one line per figure and writes
 * bench/results/query.json as [{ name, unit, value }].
 *
 *   npm run bench:query            (BENCH_SECONDS=3 per run, best of BENCH_ROUNDS=2 interleaved runs; ~40 s)
 *   BENCH_QUERY_YOGA=1 npm run bench:query   also measures the same gateway without its fast path
 *                                  (yoga's node:http handler for every request): query.*.yoga.*
 *   BENCH_QUERY_AUTH=1 npm run bench:query   also measures a gateway that authenticates every
 *                                  request (src/graphql/gate/): a bearer ES256 JWT (query.*.jwt.*)
 *                                  and an API key (query.key.apikey.*), against the same baseline
 */
import { Figures } from './figures.js';
import { fork } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DocumentNode } from 'graphql';
import { Registry } from 'prom-client';
import type { Serde, TaskStores } from '../src/store/types.js';
import { Buffer } from 'node:buffer';

// As a production server runs: graphql-js skips its development-only instanceof checks. Set
// before graphql is first loaded, hence the dynamic imports below.
process.env.NODE_ENV ??= 'production';
const { execute, parse, validate } = await import('graphql');
const { createContextFactory, createGateway, createGatewaySchema } = await import('../src/graphql/create-gateway.js');
const { fastPathStats } = await import('../src/graphql/node-fast-path.js');
const { resolveGatewayOptions } = await import('../src/graphql/gateway-options.js');
const { anonymous } = await import('../src/graphql/gate/principal.js');
const { partitionForKey } = await import('../src/murmur2.js');
const { StaticStateProvider } = await import('../src/query/static-state-provider.js');
const { openLevelStoreEngine } = await import('../src/store/level-engine.js');
const { serdes } = await import('../src/store/serdes.js');

const PARTITIONS = 4;
const KEYS = 20_000;
const BATCH = 100;
const CONCURRENCY = 32;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
// The machine is shared: each figure is measured in ROUNDS runs interleaved with its baseline
// and the best run is kept, so a burst of foreign load does not decide the ratio.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const WARMUP_MS = 1000;
const WITH_YOGA = process.env.BENCH_QUERY_YOGA === '1';
const WITH_AUTH = process.env.BENCH_QUERY_AUTH === '1';
const BENCH_API_KEY = 'bench-api-key-0123456789abcdef';

interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  p50: number;
  p99: number;
  /** CPU time (user + system, µs) the bench process — the servers, alone — used in the window. */
  cpuMicros: number;
}

// The load generator: plain CommonJS in a child process (no TypeScript loader needed), so that
// this process's CPU time is the servers' alone: on a shared machine, CPU per request is the
// figure other processes disturb least (throughput follows whatever CPU we are given). It
// says when its measured window starts and ends, and then its result.
const LOAD_GENERATOR = `
const http = require('node:http');
process.once('message', ({ port, bodies, concurrency, durationMs, warmupMs, headers }) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  function post(body) {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path: '/graphql', method: 'POST', agent,
        headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve(res.statusCode === 200 && !Buffer.concat(chunks).includes('"errors"')));
      });
      req.on('error', reject);
      req.end(body);
    });
  }
  (async () => {
    const start = performance.now();
    const measureFrom = start + warmupMs;
    const end = measureFrom + durationMs;
    // The window's end is sent by a timer or, when the last client finishes first, before the result.
    let ended = false;
    const sendEnd = () => {
      if (!ended) process.send({ type: 'window-end' });
      ended = true;
    };
    setTimeout(() => process.send({ type: 'window-start' }), measureFrom - performance.now());
    setTimeout(sendEnd, end - performance.now());
    const latencies = [];
    let errors = 0;
    let next = 0;
    async function client() {
      while (performance.now() < end) {
        const body = bodies[next++ % bodies.length];
        const t0 = performance.now();
        const ok = await post(body);
        if (t0 >= measureFrom && performance.now() <= end) {
          latencies.push(performance.now() - t0);
          if (!ok) errors++;
        }
      }
    }
    await Promise.all(Array.from({ length: concurrency }, client));
    sendEnd();
    agent.destroy();
    latencies.sort((a, b) => a - b);
    const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
    process.send({ type: 'result', result: { requests: latencies.length, errors, seconds: durationMs / 1000, p50: at(0.5), p99: at(0.99) } }, () => process.exit(0));
  })().catch((error) => { console.error(error); process.exit(1); });
});
`;

function runLoad(generator: string, port: number, bodies: string[], headers: Record<string, string>): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = fork(generator, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let windowStart: NodeJS.CpuUsage | undefined;
    let cpuMicros = 0;
    child.on('message', (message: { type: string; result?: Omit<LoadResult, 'cpuMicros'> }) => {
      if (message.type === 'window-start') windowStart = process.cpuUsage();
      else if (message.type === 'window-end' && windowStart !== undefined) {
        const used = process.cpuUsage(windowStart);
        cpuMicros = used.user + used.system;
      } else if (message.type === 'result' && message.result !== undefined) resolve({ ...message.result, cpuMicros });
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`load generator exited with ${code}`));
    });
    child.send({ port, bodies, concurrency: CONCURRENCY, durationMs: SECONDS * 1000, warmupMs: WARMUP_MS, headers });
  });
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function main(): Promise<void> {
  const directory = await mkdtemp(join(tmpdir(), 'iqgate-bench-query-'));
  const engine = await openLevelStoreEngine({ directory });
  const provider = new StaticStateProvider({
    stores: [{ name: 'bench', keySerde: serdes.string as Serde<unknown>, valueSerde: serdes.json, partitions: PARTITIONS }],
  });
  const tasks: TaskStores[] = [];
  for (let p = 0; p < PARTITIONS; p++) {
    const task = await engine.openTask(`0_${p}`, [{ name: 'bench', partition: p }]);
    tasks.push(task);
    provider.addTask(task);
  }
  const keys = Array.from({ length: KEYS }, (_, i) => `user-${String(i).padStart(6, '0')}`);
  const offsets = new Array<number>(PARTITIONS).fill(0);
  for (const key of keys) {
    const bytes = Buffer.from(key);
    const p = partitionForKey(bytes, PARTITIONS);
    tasks[p]!.store('bench').put(bytes, serdes.json.serialize({ key, balance: offsets[p]! * 3 }), { topic: 'accounts', partition: p, offset: offsets[p]!++ });
  }
  for (const task of tasks) await task.commit({});

  const single = 'query($k: Key!) { get(store: "bench", key: $k) { value } }';
  const batched = 'query($ks: [Key!]!) { getMany(store: "bench", keys: $ks) { entries { value } } }';
  const shuffled = [...keys].sort(() => Math.random() - 0.5);
  const singleBodies = shuffled.slice(0, 2000).map((k) => JSON.stringify({ query: single, variables: { k } }));
  const batchBodies = Array.from({ length: 200 }, (_, i) => JSON.stringify({ query: batched, variables: { ks: shuffled.slice(i * BATCH, (i + 1) * BATCH) } }));

  // The gateway: yoga + armor + masking + the /metrics registry, as serve() builds it. Its
  // node:http entry answers known queries on the fast path (src/graphql/node-fast-path.ts);
  // the first request of each query text goes through yoga, which validates it.
  const gateway = createGateway({ provider, logging: false, metrics: new Registry() });
  const gatewayServer = createServer(gateway);
  // Optional: yoga's own node:http handler, every request through its whole pipeline.
  const yogaServer = createServer((request, response) => void gateway.requestListener(request, response));
  // The baseline: the same executable schema and context, graphql-js parse (cached)/validate/execute.
  const options = resolveGatewayOptions({ provider, logging: false });
  const schema = createGatewaySchema();
  const contextFor = createContextFactory(options);
  const benchPrincipal = anonymous('127.0.0.1');
  const documents = new Map<string, DocumentNode>();
  const baselineServer = createServer((request: IncomingMessage, response: ServerResponse) => {
    void (async () => {
      const { query, variables } = JSON.parse(await readBody(request)) as { query: string; variables: Record<string, unknown> };
      let document = documents.get(query);
      if (document === undefined) {
        document = parse(query);
        const errors = validate(schema, document);
        if (errors.length > 0) throw errors[0];
        documents.set(query, document);
      }
      const result = await execute({ schema, document, variableValues: variables, contextValue: contextFor(benchPrincipal) });
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(result));
    })().catch((error: unknown) => {
      response.writeHead(500);
      response.end(String(error));
    });
  });
  const [gatewayPort, baselinePort, yogaPort] = await Promise.all([listen(gatewayServer), listen(baselineServer), listen(yogaServer)]);
  // Optional: the same gateway authenticating each request (an ES256 JWT, or an API key).
  let auth: { gateway: typeof gateway; server: Server; port: number; token: string } | undefined;
  if (WITH_AUTH) {
    const { exportSPKI, generateKeyPair, SignJWT } = await import('jose');
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const authGateway = createGateway({
      provider, logging: false, metrics: new Registry(),
      auth: { jwt: { publicKey: await exportSPKI(publicKey) }, apiKeys: [{ name: 'bench', key: BENCH_API_KEY, stores: ['bench'] }] },
    });
    const token = await new SignJWT({ iqgate_stores: ['bench'] }).setProtectedHeader({ alg: 'ES256' }).setSubject('bench').setExpirationTime('1h').sign(privateKey);
    const server = createServer(authGateway);
    auth = { gateway: authGateway, server, port: await listen(server), token };
  }

  // Sanity: both servers answer the benchmark queries correctly before anything is timed.
  for (const port of [gatewayPort, baselinePort, yogaPort]) {
    const response = await fetch(`http://127.0.0.1:${port}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: batchBodies[0]! });
    const json = (await response.json()) as { data?: { getMany: { entries: Array<{ value: unknown }> } }; errors?: unknown };
    if (json.errors !== undefined || json.data?.getMany.entries.filter((e) => e.value !== null).length !== BATCH) {
      throw new Error(`server on port ${port} answered wrongly: ${JSON.stringify(json).slice(0, 300)}`);
    }
  }

  const generator = join(directory, 'load-generator.cjs');
  await writeFile(generator, LOAD_GENERATOR);
  const figures = new Figures();
  const report = figures.report.bind(figures);
  const measure = async (label: string, port: number, bodies: string[], keysPerRequest: number, headers: Record<string, string>): Promise<LoadResult> => {
    const result = await runLoad(generator, port, bodies, headers);
    if (result.errors > 0) throw new Error(`${label}: ${result.errors} failed requests`);
    return { ...result, requests: result.requests * keysPerRequest };
  };

  // Per figure, every round's result: the best rate, and the least CPU per request (key).
  const runs = new Map<string, LoadResult[]>();
  const run = async (label: string, port: number, bodies: string[], keysPerRequest: number, headers: Record<string, string> = {}): Promise<void> => {
    const list = runs.get(label) ?? [];
    list.push(await measure(label, port, bodies, keysPerRequest, headers));
    runs.set(label, list);
  };
  for (let round = 0; round < ROUNDS; round++) {
    await run('gateway single', gatewayPort, singleBodies, 1);
    await run('baseline single', baselinePort, singleBodies, 1);
    await run('gateway batched', gatewayPort, batchBodies, BATCH);
    await run('baseline batched', baselinePort, batchBodies, BATCH);
    if (WITH_YOGA) {
      await run('yoga single', yogaPort, singleBodies, 1);
      await run('yoga batched', yogaPort, batchBodies, BATCH);
    }
    if (auth !== undefined) {
      await run('jwt single', auth.port, singleBodies, 1, { authorization: `Bearer ${auth.token}` });
      await run('jwt batched', auth.port, batchBodies, BATCH, { authorization: `Bearer ${auth.token}` });
      await run('apikey single', auth.port, singleBodies, 1, { authorization: `Bearer ${BENCH_API_KEY}` });
    }
  }
  const best = (label: string): LoadResult => {
    const list = runs.get(label);
    if (list === undefined) throw new Error(`no runs of ${label}`);
    return list.reduce((a, b) => (b.requests > a.requests ? b : a));
  };
  /** CPU µs the server process spent per request (or per key), the least of the rounds. */
  const cpu = (label: string): number => Math.min(...(runs.get(label) ?? []).map((r) => r.cpuMicros / Math.max(1, r.requests)));
  const gwSingle = best('gateway single');
  const bareSingle = best('baseline single');
  const gwBatch = best('gateway batched');
  const bareBatch = best('baseline batched');

  report('query.key.gateway.rate', 'queries/s', gwSingle.requests / gwSingle.seconds);
  report('query.key.gateway.p99', 'ms', gwSingle.p99);
  report('query.key.baseline.rate', 'queries/s', bareSingle.requests / bareSingle.seconds);
  report('query.key.baseline.p99', 'ms', bareSingle.p99);
  report('query.key.ratio', 'gateway/baseline', gwSingle.requests / bareSingle.requests);
  report('query.batched.gateway.rate', 'keys/s', gwBatch.requests / gwBatch.seconds);
  report('query.batched.gateway.p99', 'ms', gwBatch.p99);
  report('query.batched.baseline.rate', 'keys/s', bareBatch.requests / bareBatch.seconds);
  report('query.batched.ratio', 'gateway/baseline', gwBatch.requests / bareBatch.requests);
  // The same comparison in server CPU per request: baseline µs ÷ gateway µs, so that, like the
  // rate ratios, 1 is parity and less is a slower gateway. Steadier than rates on a busy machine.
  report('query.key.gateway.cpu', 'µs/query', cpu('gateway single'));
  report('query.key.baseline.cpu', 'µs/query', cpu('baseline single'));
  report('query.key.cpu.ratio', 'baseline/gateway CPU', cpu('baseline single') / cpu('gateway single'));
  report('query.batched.gateway.cpu', 'µs/key', cpu('gateway batched'));
  report('query.batched.baseline.cpu', 'µs/key', cpu('baseline batched'));
  report('query.batched.cpu.ratio', 'baseline/gateway CPU', cpu('baseline batched') / cpu('gateway batched'));
  if (WITH_YOGA) {
    const yogaSingle = best('yoga single');
    const yogaBatch = best('yoga batched');
    report('query.key.yoga.rate', 'queries/s', yogaSingle.requests / yogaSingle.seconds);
    report('query.key.yoga.ratio', 'yoga/baseline', yogaSingle.requests / bareSingle.requests);
    report('query.key.yoga.cpu.ratio', 'baseline/yoga CPU', cpu('baseline single') / cpu('yoga single'));
    report('query.batched.yoga.rate', 'keys/s', yogaBatch.requests / yogaBatch.seconds);
    report('query.batched.yoga.ratio', 'yoga/baseline', yogaBatch.requests / bareBatch.requests);
    report('query.batched.yoga.cpu.ratio', 'baseline/yoga CPU', cpu('baseline batched') / cpu('yoga batched'));
  }
  if (auth !== undefined) {
    const jwtSingle = best('jwt single');
    const jwtBatch = best('jwt batched');
    const keySingle = best('apikey single');
    report('query.key.jwt.rate', 'queries/s', jwtSingle.requests / jwtSingle.seconds);
    report('query.key.jwt.ratio', 'jwt gateway/baseline', jwtSingle.requests / bareSingle.requests);
    report('query.key.jwt.cpu.ratio', 'baseline/jwt gateway CPU', cpu('baseline single') / cpu('jwt single'));
    report('query.batched.jwt.rate', 'keys/s', jwtBatch.requests / jwtBatch.seconds);
    report('query.batched.jwt.ratio', 'jwt gateway/baseline', jwtBatch.requests / bareBatch.requests);
    report('query.key.apikey.rate', 'queries/s', keySingle.requests / keySingle.seconds);
    report('query.key.apikey.ratio', 'api-key gateway/baseline', keySingle.requests / bareSingle.requests);
    report('query.key.apikey.cpu.ratio', 'baseline/api-key gateway CPU', cpu('baseline single') / cpu('apikey single'));
    const authStats = fastPathStats(auth.gateway);
    report('query.auth.fast_path_share', 'fraction', authStats === undefined ? 0 : authStats.answered / Math.max(1, authStats.answered + authStats.handedToYoga));
  }
  // Which share of the gateway's requests the fast path answered (the rest went through yoga):
  // near 1, or the figures above measure yoga's full pipeline instead.
  const stats = fastPathStats(gateway);
  report('query.gateway.fast_path_share', 'fraction', stats === undefined ? 0 : stats.answered / Math.max(1, stats.answered + stats.handedToYoga));

  await figures.write('query');

  await Promise.all([close(gatewayServer), close(baselineServer), close(yogaServer), ...(auth === undefined ? [] : [close(auth.server)])]);
  await gateway.dispose();
  await auth?.gateway.dispose();
  for (const task of tasks) await task.close();
  await engine.close();
  await rm(directory, { recursive: true, force: true });
}

await main();
