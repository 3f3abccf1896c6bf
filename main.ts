/**
 * The entry point of every process: `tsx main.ts [all|ingest|relay|loader]` (or SERVICE=...).
 * Wires config to the roles (ingest/server.ts, processors/start.ts, the SQL endpoint), listens,
 * and on SIGTERM drains in order: stop accepting requests, relay what they wrote, finish the
 * batch being loaded, close the stores.
 */
import { mkdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import { loadConfig, type Config } from './core/config.js';
import { openDatabase, type Database } from './core/db.js';
import { createLogger } from './core/log.js';
import { migrate } from './core/migrate.js';
import { requireSecretsKey } from './core/secret-box.js';
import { migrateWarehouse } from './core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from './core/warehouse.js';

/**
 * The roles' modules, loaded while the stores open (main): loading them takes about a second
 * of the main thread, which the stores' own waiting (a fresh data directory is unpacked in a worker
 * thread, core/db.ts; chDB's start) partly covers.
 */
const loadModules = () =>
  Promise.all([import('./ingest/server.js'), import('./processors/start.js'), import('./queries/analytics/endpoint.js'), import('./ingest/operator/endpoint.js')]);

function banner(url: string, mode: string, demoLines: readonly string[]): string {
  const lines = [
    ``,
    `Affiliate tracking service listening on ${url}`,
    `  dashboard: ${url}/dashboard`,
    `  mode: ${mode}`,
    `  OpenAPI: ${url}/openapi.json`,
    `  CLI: SVC_BASE_URL=${url} svc login`,
    ...demoLines,
  ];
  return `${lines.join('\n')}\n\n`;
}

function describeMode(config: Config): string {
  const roles = [...config.roles];
  const parts = [config.database.kind === 'pglite' ? 'embedded Postgres (PGlite)' : 'Postgres'];
  if (config.roles.has('ingest') && config.roles.has('relay') && config.roles.has('loader')) {
    parts.push(`relay, loader and webhook dispatcher in this process${config.kafka ? ' through Kafka' : ''}`);
  } else {
    parts.push(`${roles.join(', ')} only`);
  }
  if (config.roles.has('loader') || config.roles.has('ingest')) {
    parts.push(config.warehouse.kind === 'chdb' ? 'embedded warehouse (chDB)' : 'ClickHouse');
  }
  return parts.join(', ');
}

/**
 * Both stores at once: a fresh PGlite data directory is unpacked in a worker thread (core/db.ts),
 * and chDB's start and migrations use that time instead of following it.
 */
async function openStores(config: Config, logger: Logger) {
  const needsDatabase = config.roles.has('ingest') || config.roles.has('relay') || config.roles.has('webhooks');
  if (config.database.kind === 'pglite') await mkdir(config.dataDir, { recursive: true });
  const openDb = async (): Promise<Database | undefined> => {
    if (!needsDatabase) return undefined;
    const db = await openDatabase(config.database, {
      onConnectionError: (err) => logger.error({ err }, 'idle database connection failed; replaced'),
    });
    const applied = await migrate(db);
    if (applied.length) logger.info({ applied }, 'migrations applied');
    return db;
  };
  // chDB is a directory one process opens: an ingest-only process reads it only when it also loads it.
  const needsWarehouse = config.roles.has('loader') || (config.roles.has('ingest') && config.warehouse.kind === 'http');
  const openWh = async (): Promise<Warehouse | undefined> => {
    if (!needsWarehouse) return undefined;
    const warehouse = await openWarehouse(config.warehouse);
    const applied = await migrateWarehouse(warehouse);
    if (applied.length) logger.info({ applied }, 'warehouse migrations applied');
    return warehouse;
  };
  const [db, warehouse] = await Promise.all([openDb(), openWh()]);
  return { db, warehouse };
}

/** What a signal closes, in this order; undefined where the process does not run it. */
type Closing = { close(): Promise<void> } | { stop(): Promise<void> } | undefined;

function closeOnSignals(logger: Logger, inOrder: readonly Closing[]): void {
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    try {
      for (const part of inOrder) await (part && 'stop' in part ? part.stop() : part?.close());
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

async function main() {
  const config = loadConfig(undefined, { service: process.argv[2] });
  requireSecretsKey(config);
  const logger = createLogger(config.logLevel);
  const [{ db, warehouse }, [{ startIngest }, { startProcessors }, { serveSqlEndpoint }, { serveOpsEndpoint }]] = await Promise.all([
    openStores(config, logger),
    loadModules(),
  ]);
  const ingest = config.roles.has('ingest') && db ? await startIngest({ config, db, warehouse, logger }) : undefined;
  const processors = await startProcessors({ config, db, warehouse, logger });
  // The embedded warehouse is this process's alone: analysts' queries come in through its SQL endpoint.
  const sqlEndpoint =
    warehouse && config.warehouse.kind === 'chdb'
      ? await serveSqlEndpoint({ warehouse, config: config.analytics, dataDir: config.dataDir, logger })
      : undefined;
  if (sqlEndpoint) logger.info({ url: sqlEndpoint.url }, 'SQL endpoint for npm run sql served (operator token in the data directory)');
  // Likewise the embedded database: `npm run ops` runs its commands through this process.
  const opsEndpoint = db && config.database.kind === 'pglite' ? await serveOpsEndpoint({ db, dataDir: config.dataDir, logger }) : undefined;
  closeOnSignals(logger, [ingest, processors, sqlEndpoint, opsEndpoint, warehouse, db]);

  if (!ingest) {
    logger.info({ roles: [...config.roles], mode: describeMode(config) }, 'started');
    process.stdout.write(`\nAffiliate tracking ${[...config.roles].join(', ')} running\n  mode: ${describeMode(config)}\n\n`);
    return;
  }
  const { url, demoLines } = await ingest.listen();
  process.stdout.write(banner(url, describeMode(config), demoLines));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
