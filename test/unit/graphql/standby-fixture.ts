/**
 * Standby replicas for the gateway's routing tests: standbys kept in an instance's engine whose
 * values differ from the active owner's (`{ n, standby: true }`), so every answer shows which
 * copy it came from; an instance of its own keeping standbys; owners that fail or answer late.
 */
import { createGateway } from '../../../src/graphql/create-gateway.js';
import { StaticStateProvider } from '../../../src/query/static-state-provider.js';
import { createInMemoryStoreEngine } from '../../../src/store/in-memory-engine.js';
import { serdes } from '../../../src/store/serdes.js';
import type { StoreEngine, TaskStores } from '../../../src/store/types.js';
import { close, KEYS, listen, partitionOf, STORE } from './routing-fixture.js';

/** The lag every standby here reports. */
export const LAG = { offsets: 5, timeMs: 300 };

/** Opens standbys of `partitions` in `i`'s engine, each key's value `{ n, standby: true }`. */
export async function addStandbys(i: { provider: StaticStateProvider; engine: StoreEngine }, partitions: readonly number[]): Promise<TaskStores[]> {
  const tasks: TaskStores[] = [];
  for (const p of partitions) {
    const task = await i.engine.openTask(`0_${p}`, [{ name: STORE.name, partition: p }]);
    let offset = 0;
    KEYS.forEach((key, n) => {
      if (partitionOf(key) === p) task.store(STORE.name).put(serdes.string.serialize(key), serdes.json.serialize({ n, standby: true }), { topic: 'input', partition: p, offset: offset++ });
    });
    task.flush();
    await task.commit({});
    i.provider.addTask(task, { active: false, lag: LAG });
    tasks.push(task);
  }
  return tasks;
}

/** A GraphQL endpoint that counts requests and answers HTTP 503 to each. */
export async function failing(): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const { server, url } = await listen((_req, res) => {
    hits += 1;
    res.writeHead(503, { 'content-type': 'application/json' }).end('{"errors":[{"message":"down"}]}');
  });
  return { url, hits: () => hits, close: () => close(server) };
}

/** A GraphQL endpoint that relays each request to `target` after `delayMs` (a slow owner or host); `onRequest` hears of each as it comes. */
export async function slow(target: string, delayMs: number, onRequest?: () => void): Promise<{ url: string; close: () => Promise<void> }> {
  const { server, url } = await listen((req, res) => {
    onRequest?.();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => setTimeout(() => void (async () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string' && !['host', 'content-length', 'connection'].includes(name)) headers[name] = value;
      const answer = await fetch(target, { method: 'POST', headers, body: Buffer.concat(chunks) });
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(await answer.text());
    })().catch(() => res.destroy()), delayMs)); // (the target gone: a late relay after its test ended)
  });
  return { url, close: () => close(server) };
}

/** An instance of its own keeping standbys of `partitions` (values `{ n, standby: true }`), listening and counting requests. */
export async function standbyHost(partitions: readonly number[]): Promise<{ url: string; hits: () => number; dispose: () => Promise<void> }> {
  const engine = createInMemoryStoreEngine();
  const provider = new StaticStateProvider({ stores: [STORE] });
  const tasks = await addStandbys({ provider, engine }, partitions);
  const gateway = createGateway({ provider, logging: false });
  let hits = 0;
  const { server, url } = await listen((req, res) => {
    hits += 1;
    void gateway(req, res);
  });
  provider.setSelfUrl(url);
  return {
    url,
    hits: () => hits,
    dispose: async () => {
      await close(server);
      await gateway.dispose();
      for (const task of tasks) await task.close();
      await engine.close();
    },
  };
}
