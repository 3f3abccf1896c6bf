import { mkdir } from 'node:fs/promises';
import { loadConfig } from '../core/config.js';
import { openDatabase } from '../core/db.js';
import { createLogger } from '../core/log.js';
import { migrate } from '../core/migrate.js';
import { startEmbeddedPipeline } from '../processors/embedded-pipeline.js';
import { buildApp } from './app.js';
import { ensureDemo, type DemoCredentials } from './demo.js';
import { memoryRateLimitStore, redisRateLimitStore } from './http/rate-limit.js';

function banner(url: string, mode: string, demo: DemoCredentials | undefined): string {
  const lines = [
    ``,
    `Affiliate tracking service listening on ${url}`,
    `  mode: ${mode}`,
    `  OpenAPI: ${url}/openapi.json`,
  ];
  if (demo) {
    lines.push(
      `  demo program id:      ${demo.programId}`,
      `  demo API key:         ${demo.apiKey}`,
      `  demo aff code:        ${demo.affCode}`,
      `  demo dashboard token: ${demo.dashboardToken}`,
      ``,
      `  try: curl -s ${url}/api/v1/track/click -H 'content-type: application/json' \\`,
      `         -d '{"affiliate_url":"https://shop.demo.example/?aff=${demo.affCode}"}'`,
    );
  }
  return `${lines.join('\n')}\n\n`;
}

async function main() {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const embedded = config.database.kind === 'pglite';
  if (embedded) await mkdir(config.dataDir, { recursive: true });
  const db = await openDatabase(config.database, {
    onConnectionError: (err) => logger.error({ err }, 'idle database connection failed; replaced'),
  });
  const applied = await migrate(db);
  if (applied.length) logger.info({ applied }, 'migrations applied');
  const rateLimits = config.rateLimit.kind === 'redis' ? await redisRateLimitStore(config.rateLimit.url) : memoryRateLimitStore();
  const app = await buildApp({ db, rateLimits, logger, trustProxy: config.http.trustProxy, tracking: config.tracking });
  const pipeline =
    config.pipeline.kind === 'embedded'
      ? await startEmbeddedPipeline({ db, warehouse: config.pipeline.warehouse, logger })
      : undefined;

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    // Stop accepting, let in-flight requests commit, relay what they wrote, then release the stores.
    await app.close();
    await pipeline?.stop();
    await rateLimits.close();
    await db.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({ host: config.http.host, port: config.http.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.http.port;
  const url = config.http.publicBaseUrl ?? `http://${config.http.host === '0.0.0.0' ? '127.0.0.1' : config.http.host}:${port}`;
  const demo = embedded && config.seedDemo ? await ensureDemo(db, config.dataDir, new URL(url).origin) : undefined;
  const mode = [
    embedded ? 'embedded Postgres (PGlite)' : 'Postgres',
    pipeline ? `relay and loader in this process, into ${config.pipeline.kind === 'embedded' && config.pipeline.warehouse.kind === 'chdb' ? 'the embedded warehouse (chDB)' : 'ClickHouse'}` : 'ingest only',
  ].join(', ');
  process.stdout.write(banner(url, mode, demo));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
