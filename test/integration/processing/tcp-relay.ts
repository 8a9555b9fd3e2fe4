/**
 * A plain TCP relay: every connection accepted on `listen` is piped to a new connection to
 * `target`, byte for byte, both ways. The network-cut test runs one in the test process and one
 * inside a network namespace, so a wordcount child in the namespace reaches the broker (which
 * listens on the host's 127.0.0.1 and advertises that address) over a veth link the test can cut.
 *
 * Run as a script (`node --import tsx tcp-relay.ts <listenHost> <listenPort> <targetHost>
 * <targetPort>`), it prints one `relaying` line once listening and runs until killed.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

export interface Endpoint {
  readonly host: string;
  readonly port: number;
}

export interface TcpRelay {
  readonly server: Server;
  /** Stops listening and destroys every relayed connection. */
  close(): Promise<void>;
}

export async function startTcpRelay(listen: Endpoint, target: Endpoint): Promise<TcpRelay> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const server = createServer((client) => {
    const upstream = createConnection({ host: target.host, port: target.port });
    track(client);
    track(upstream);
    // Either side failing (a cut link answers ENETUNREACH, a peer resets) ends both: the client
    // sees its connection close, as it would a broker going away.
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  return {
    server,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [listenHost, listenPort, targetHost, targetPort] = process.argv.slice(2);
  if (listenHost === undefined || targetHost === undefined || listenPort === undefined || targetPort === undefined) {
    throw new TypeError('usage: tcp-relay.ts <listenHost> <listenPort> <targetHost> <targetPort>');
  }
  await startTcpRelay({ host: listenHost, port: Number(listenPort) }, { host: targetHost, port: Number(targetPort) });
  console.log('relaying');
}
