import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What a scripted endpoint does with the n-th request (1-based) for one webhook-id. */
export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** Answered once this settles: a request held open until the test lets it go. */
  after?: Promise<unknown>;
}
export type Script = (attempt: number) => Reply | { reset: true } | { hang: true };

export interface SeenRequest {
  path: string;
  webhookId: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  at: number;
}

/**
 * One loopback server for many endpoints (path /ep/<name>), each following a script per message.
 * It measures what a receiver can: every request, concurrency per endpoint and per webhook-id.
 */
export class ScriptedReceiver {
  readonly seen: SeenRequest[] = [];
  readonly maxConcurrent = new Map<string, number>();
  /** Highest number of simultaneous requests carrying the same webhook-id (must stay 1). */
  maxSameId = 0;
  private readonly scripts = new Map<string, Script>();
  private readonly concurrent = new Map<string, number>();
  private readonly sameId = new Map<string, number>();
  private readonly attemptsById = new Map<string, number>();
  private readonly sockets = new Set<Socket>();
  private server!: http.Server;
  url = '';

  script(name: string, script: Script): string {
    this.scripts.set(name, script);
    return `${this.url}/ep/${name}`;
  }

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 60_000;
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  requestsFor(webhookId: string, name?: string): SeenRequest[] {
    return this.seen.filter((r) => r.webhookId === webhookId && (!name || r.path === `/ep/${name}`));
  }

  private bump(map: Map<string, number>, key: string, by: number): number {
    const value = (map.get(key) ?? 0) + by;
    map.set(key, value);
    return value;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = req.url ?? '';
    const name = path.replace(/^\/ep\//, '');
    const webhookId = String(req.headers['webhook-id'] ?? '');
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.seen.push({ path, webhookId, headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
      const now = this.bump(this.concurrent, path, 1);
      this.maxConcurrent.set(path, Math.max(this.maxConcurrent.get(path) ?? 0, now));
      const key = `${path} ${webhookId}`;
      this.maxSameId = Math.max(this.maxSameId, this.bump(this.sameId, key, 1));
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        this.bump(this.concurrent, path, -1);
        this.bump(this.sameId, key, -1);
      };
      res.on('close', finish);
      const attempt = this.bump(this.attemptsById, key, 1);
      const action = (this.scripts.get(name) ?? (() => ({ status: 404 })))(attempt);
      if ('reset' in action) {
        finish();
        req.socket.destroy();
        return;
      }
      if ('hang' in action) return; // the sender's timeout ends it
      const answer: Reply = action;
      const reply = () => {
        res.writeHead(answer.status, answer.headers);
        res.end('{"ok":true}');
      };
      if (answer.after) void answer.after.finally(reply);
      else reply();
    });
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
