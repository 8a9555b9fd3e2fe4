import { afterEach, describe, expect, it } from 'vitest';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Gateway } from '../../../src/graphql/create-gateway.js';
import { listenGateway, type ListeningGateway } from '../../../src/graphql/listen-gateway.js';

let listening: ListeningGateway | null = null;
afterEach(async () => {
  await listening?.close();
  listening = null;
});

/** A stand-in gateway: /answer answers after a delay, /stream writes its head and then streams for as long as the client stays. */
function fakeGateway(): Gateway {
  const handler = (request: IncomingMessage, response: ServerResponse): void => {
    if (request.url === '/stream') {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(': ping\n\n');
      return;
    }
    setTimeout(() => response.end('{"data":{}}'), 200);
  };
  return Object.assign(handler, { graphqlEndpoint: '/graphql' }) as unknown as Gateway;
}

describe('listenGateway: which requests count as waiting (the runtime lends them the event loop)', () => {
  it('counts a request until its answer is written, and a streamed response only until it starts streaming', async () => {
    let waiting = 0;
    let started = 0;
    listening = await listenGateway(fakeGateway(), {
      port: 0,
      host: '127.0.0.1',
      onRequest: () => {
        waiting += 1;
        started += 1;
        return () => void (waiting -= 1); // listenGateway calls it once: a second call would show below
      },
    });
    const base = `http://127.0.0.1:${listening.port}`;

    const answer = fetch(`${base}/answer`);
    while (started === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(waiting).toBe(1); // the answer comes 200 ms after the request started
    expect(await (await answer).text()).toBe('{"data":{}}');
    expect(waiting).toBe(0);

    const abort = new AbortController();
    const stream = await fetch(`${base}/stream`, { signal: abort.signal });
    const reader = stream.body!.getReader();
    await reader.read(); // the stream is open and delivering
    expect(started).toBe(2);
    expect(waiting).toBe(0);
    abort.abort();
  });
});
