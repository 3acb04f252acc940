/** Test peers, all on loopback with ephemeral ports. */
import { spawn } from 'node:child_process';
import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';

export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface Receiver {
  readonly port: number;
  readonly url: string;
  /** Requests whose body fully arrived. */
  readonly requests: Received[];
  /** Every TCP connection accepted, including ones that never carried a request. */
  readonly sockets: Socket[];
  close(): Promise<void>;
}

export type Handle = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void;

/** A webhook receiver that records what reached it. */
export async function startReceiver(handle: Handle, host = '127.0.0.1', port = 0): Promise<Receiver> {
  const requests: Received[] = [];
  const sockets: Socket[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handle(req, res, body);
    });
  });
  server.on('connection', (socket) => {
    sockets.push(socket);
    socket.on('error', () => {}); // resets provoked by the tests
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    requests,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on: bind an ephemeral port, then release it. */
export { freePort as closedPort } from '../support/ports.ts';

/** A TCP server that hands the socket to `onData` once request bytes arrive: for malformed replies. */
export async function startRawReceiver(
  onData: (socket: Socket) => void,
): Promise<{ port: number; close(): Promise<void> }> {
  const sockets: Socket[] = [];
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    socket.once('data', () => onData(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A listener in a child process that never accepts (its event loop is blocked), with a backlog of 1,
 * then filled: further connection attempts hang in SYN-SENT, which is how a connect timeout looks.
 * Returns undefined when this kernel keeps accepting anyway.
 */
export async function startUnacceptingListener(): Promise<{ port: number; close(): void } | undefined> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const s = require('node:net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
        process.stdout.write(String(s.address().port) + '\\n');
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
      });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (data: Buffer) => resolve(Number(data.toString().trim())));
    child.once('error', reject);
  });
  const fillers: Socket[] = [];
  const close = () => {
    for (const socket of fillers) socket.destroy();
    child.kill('SIGKILL');
  };
  for (let i = 0; i < 16; i++) {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    fillers.push(socket);
    const connected = await new Promise<boolean>((resolve) => {
      socket.once('connect', () => resolve(true));
      setTimeout(() => resolve(false), 500);
    });
    if (!connected) return { port, close };
  }
  close();
  return undefined;
}
