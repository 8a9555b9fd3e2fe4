/**
 * The load generator of bench/query-busy.ts, in a process of its own so that it shares neither
 * the event loop nor the thread being measured: `concurrency` keep-alive node:http clients, each
 * posting its next GraphQL request as soon as the previous answer is read, for a warm-up and
 * then a fixed measured window. A request counts in the window when it was sent inside it and
 * answered before it ended (so the window's last requests do not stretch it).
 *
 * Usage: node --import tsx bench/query-load.ts < { url, bodies: [{ body, variant }], concurrency, warmupMs, durationMs }
 * stdout: `window` when the measured window starts, then one JSON line: { requests, errors, seconds, p50, p99, max, from, to, variants: { <variant>: { requests, p50, p99 } }, firstError, cpu }
 * (`from`/`to`: the measured window in Date.now() milliseconds, so the caller can line it up
 * with what it sampled meanwhile; `cpu`: this process's CPU time per second of the window.) An answer is an error when its status is not 200 or its body
 * carries `"errors"`.
 */
import { Agent, request } from 'node:http';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';

interface Input {
  readonly url: string;
  readonly bodies: ReadonlyArray<{ readonly body: string; readonly variant: string }>;
  readonly concurrency: number;
  readonly warmupMs: number;
  readonly durationMs: number;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const input = JSON.parse(await readStdin()) as Input;
const target = new URL(input.url);
const agent = new Agent({ keepAlive: true, maxSockets: input.concurrency });

function post(body: string): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent,
      headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve(res.statusCode === 200 && !text.includes('"errors"') ? null : `${String(res.statusCode)} ${text.slice(0, 300)}`);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const startedAt = performance.now();
const measureFrom = startedAt + input.warmupMs;
const end = measureFrom + input.durationMs;
const latencies: number[] = [];
const byVariant = new Map<string, number[]>();
let errors = 0;
let firstError: string | null = null;
let next = 0;
let cpuAtWindow = process.cpuUsage();
setTimeout(() => {
  cpuAtWindow = process.cpuUsage();
  process.stdout.write('window\n');
}, input.warmupMs);

async function client(): Promise<void> {
  while (performance.now() < end) {
    const { body, variant } = input.bodies[next++ % input.bodies.length]!;
    const t0 = performance.now();
    const failure = await post(body);
    const t1 = performance.now();
    if (t0 < measureFrom || t1 > end) continue;
    latencies.push(t1 - t0);
    let list = byVariant.get(variant);
    if (list === undefined) byVariant.set(variant, (list = []));
    list.push(t1 - t0);
    if (failure !== null) {
      errors += 1;
      firstError ??= failure;
    }
  }
}

await Promise.all(Array.from({ length: input.concurrency }, client));
const cpu = process.cpuUsage(cpuAtWindow);
agent.destroy();

function summary(values: number[]): { requests: number; p50: number; p99: number; max: number } {
  values.sort((a, b) => a - b);
  const at = (q: number): number => values[Math.min(values.length - 1, Math.floor(q * values.length))] ?? 0;
  return { requests: values.length, p50: at(0.5), p99: at(0.99), max: values[values.length - 1] ?? 0 };
}

const epochOffset = Date.now() - performance.now();
process.stdout.write(`${JSON.stringify({
  ...summary(latencies),
  errors,
  seconds: input.durationMs / 1000,
  from: epochOffset + measureFrom,
  to: epochOffset + end,
  variants: Object.fromEntries([...byVariant].map(([variant, values]) => [variant, summary(values)])),
  firstError,
  cpu: (cpu.user + cpu.system) / 1000 / input.durationMs,
})}\n`);
