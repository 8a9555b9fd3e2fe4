import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DetachedCluster } from '../../../src/kafka/kafkajs-cluster.js';
import { Kafka, logLevel } from 'kafkajs';

/** A "broker" that accepts connections and never answers: every request times out. */
async function silentBroker(): Promise<{ server: Server; port: number; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => undefined);
    socket.resume(); // reads (and drops) what the client sends, so its FIN is seen
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { server, port: typeof address === 'object' && address !== null ? address.port : 0, sockets };
}

const closed = (socket: Socket): Promise<void> => new Promise((resolve) => {
  if (socket.destroyed || socket.readableEnded) resolve();
  else socket.once('close', () => resolve());
});

let broker: Awaited<ReturnType<typeof silentBroker>> | null = null;
afterEach(async () => {
  for (const socket of broker?.sockets ?? []) socket.destroy();
  await new Promise((resolve) => broker?.server.close(resolve) ?? resolve(undefined));
  broker = null;
});

describe('DetachedCluster', () => {
  it('closes the sockets of a connect that failed part way when it is disconnected', async () => {
    broker = await silentBroker();
    const kafka = new Kafka({ clientId: 'detached-test', brokers: [`127.0.0.1:${String(broker.port)}`], logLevel: logLevel.NOTHING, requestTimeout: 300, retry: { retries: 0 } });
    const detached = new DetachedCluster(kafka, 'detached-test');
    await expect(detached.connect()).rejects.toThrow();
    expect(broker.sockets.length).toBeGreaterThan(0);
    const open = broker.sockets.filter((socket) => !socket.destroyed && !socket.readableEnded);
    expect(open.length).toBeGreaterThan(0); // the failed attempt left its connection open
    await detached.disconnect();
    await Promise.race([
      Promise.all(open.map(closed)),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`${String(open.length)} socket(s) still open after disconnect()`)), 2_000)),
    ]);
  });
});
