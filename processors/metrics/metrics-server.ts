/** The relay and loader processes' figures for Prometheus, and their health. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

export interface MetricsServer {
  /** http://host:port, with the port actually bound (port 0 picks a free one). */
  url: string;
  close(): Promise<void>;
}

/**
 * GET /metrics (Prometheus text format) and GET /healthz for the relay and loader processes,
 * which have no HTTP server of their own. healthy() (optional) makes /healthz answer 503 when false.
 */
export async function serveMetrics(deps: {
  registry: Registry;
  host: string;
  port: number;
  logger?: Logger;
  healthy?: () => boolean | Promise<boolean>;
}): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'text/plain; charset=utf-8', 'Method Not Allowed\n');
    if (path === '/metrics') {
      deps.registry.metrics().then(
        (text) => send(200, deps.registry.contentType, text),
        (error: unknown) => {
          deps.logger?.error({ err: error }, 'metrics could not be collected');
          send(500, 'text/plain; charset=utf-8', 'metrics could not be collected\n');
        },
      );
      return;
    }
    if (path === '/healthz') {
      Promise.resolve(deps.healthy ? deps.healthy() : true).then(
        (ok) => send(ok ? 200 : 503, 'text/plain; charset=utf-8', ok ? 'ok\n' : 'unhealthy\n'),
        () => send(503, 'text/plain; charset=utf-8', 'unhealthy\n'),
      );
      return;
    }
    send(404, 'text/plain; charset=utf-8', 'Not Found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.port, deps.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = deps.host.includes(':') ? `[${deps.host}]` : deps.host;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  deps.logger?.info({ url: `${url}/metrics` }, 'metrics served');
  return {
    url,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
