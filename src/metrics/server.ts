import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../logger.ts';
import type { CourierMetrics } from './metrics.ts';

export interface MetricsServer {
  /** http://host:port, the port chosen when 0 was asked for. */
  address: string;
  close(): Promise<void>;
}

/**
 * GET /metrics in Prometheus' text format, on its own port: a worker has no other HTTP server,
 * and the API's port may face the internet, which the process figures are not for.
 */
export async function serveMetrics(
  metrics: CourierMetrics,
  where: { host: string; port: number },
  logger: Logger,
): Promise<MetricsServer> {
  const server = createServer((request, response) => {
    const path = request.url?.split('?')[0];
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at /metrics\n');
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('GET /metrics\n');
      return;
    }
    // A HEAD reads no series: collecting would cost a scrape's work, and would mark new endpoint series as shown (endpoint-attempts.ts).
    if (request.method === 'HEAD') {
      response.writeHead(200, { 'content-type': metrics.registry.contentType }).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (error: unknown) => {
        logger.error({ err: error }, 'could not collect the metrics');
        response.writeHead(500, { 'content-type': 'text/plain' }).end('could not collect the metrics\n');
      },
    );
  });
  // A scraper that connects and says nothing must not hold the shutdown.
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(where.port, where.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    address: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
