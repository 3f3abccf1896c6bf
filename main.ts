/**
 * The entry point of every process: `tsx main.ts [all|ingest|relay|loader]` (or SERVICE=...).
 * Wires config to components, listens, and on SIGTERM drains in order: stop accepting requests,
 * relay what they wrote, finish the batch being loaded, close the stores.
 */
import { mkdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import { loadConfig, type Config } from './core/config.js';
import { openDatabase, type Database } from './core/db.js';
import { createLogger } from './core/log.js';
import { migrate } from './core/migrate.js';
import { createSecretBox, loadOrCreateKeyFile, requireSecretsKey } from './core/secret-box.js';
import { migrateWarehouse } from './core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from './core/warehouse.js';
import type { EmbeddedProvider } from './ingest/oidc/embedded-provider.js';
import type { CliIdentity } from './ingest/cli/routes.js';
import type { RunningService } from './processors/services.js';

/**
 * The service's modules, loaded while the stores open (main): loading them takes about a second
 * of the main thread, which the stores' own waiting (a fresh data directory is unpacked in a worker
 * thread, core/db.ts; chDB's start) partly covers.
 */
const loadModules = () =>
  Promise.all([
    import('./queries/analytics/endpoint.js'),
    import('./ingest/app.js'),
    import('./domain/demo.js'),
    import('./ingest/http/rate-limit.js'),
    import('./ingest/oidc/embedded-provider.js'),
    import('./ingest/oidc/verifier.js'),
    import('./ingest/cli/routes.js'),
    import('./processors/avro/codec.js'),
    import('./processors/embedded-pipeline.js'),
    import('./processors/metrics.js'),
  ]);

/**
 * The Kafka relay and loader, loaded only when Kafka is configured: their clients take about
 * 0.8 s of a start to load (@platformatic/kafka most of it), which the embedded start never uses.
 */
const loadKafkaServices = () => import('./processors/services.js');

function banner(url: string, mode: string, demoLines: readonly string[]): string {
  const lines = [``, `Affiliate tracking service listening on ${url}`, `  mode: ${mode}`, `  OpenAPI: ${url}/openapi.json`, `  CLI: SVC_BASE_URL=${url} svc login`, ...demoLines];
  return `${lines.join('\n')}\n\n`;
}

function describeMode(config: Config): string {
  const roles = [...config.roles];
  const parts = [config.database.kind === 'pglite' ? 'embedded Postgres (PGlite)' : 'Postgres'];
  if (roles.length === 3) {
    parts.push(`relay and loader in this process${config.kafka ? ' through Kafka' : ''}`);
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
  const needsDatabase = config.roles.has('ingest') || config.roles.has('relay');
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

async function main() {
  const config = loadConfig(undefined, { service: process.argv[2] });
  requireSecretsKey(config);
  const logger = createLogger(config.logLevel);
  const [
    { db, warehouse },
    [
      { serveSqlEndpoint },
      { buildApp },
      { demoBannerLines, ensureDemo },
      { memoryRateLimitStore, redisRateLimitStore },
      { startEmbeddedProvider },
      { createIdentityVerifier },
      { LOGIN_PAGE_PATH },
      { createAvroCodec },
      { startEmbeddedPipeline },
      { createPipelineMetrics, serveMetrics, startMetricsLog },
    ],
  ] = await Promise.all([openStores(config, logger), loadModules()]);
  const codec = createAvroCodec();
  const services: RunningService[] = [];

  const rateLimits = config.rateLimit.kind === 'redis'
      ? await redisRateLimitStore(config.rateLimit.url)
      : memoryRateLimitStore({ onFull: (maxKeys) => logger.warn({ maxKeys }, 'rate-limit store full for this minute: new callers are counted approximately (never under their count)') });
  // The CLI login's OpenID provider: the configured one, or a real one in this process (offline start).
  const { identity } = config;
  let embeddedProvider: EmbeddedProvider | undefined;
  let cliIdentity: CliIdentity | undefined;
  let serviceUrl: string | undefined = config.http.publicBaseUrl;
  if (config.roles.has('ingest') && db) {
    const { provider } = identity;
    if (provider.kind === 'embedded') {
      embeddedProvider = await startEmbeddedProvider({
        host: provider.host,
        port: provider.port,
        fallbackToFreePort: !provider.portGiven,
        clientId: identity.clientId,
      });
    }
    const issuer = provider.kind === 'external' ? provider.issuer : embeddedProvider?.issuer;
    if (issuer) {
      const verifier = createIdentityVerifier({ issuer, clientId: identity.clientId, audience: identity.audience, algorithms: identity.algorithms });
      cliIdentity = { verifier, baseUrl: () => serviceUrl };
    } else {
      logger.warn('no OIDC_ISSUER: `svc login` is unavailable on this ingest process (set OIDC_ISSUER, or OIDC_EMBEDDED_PORT for a test provider)');
    }
  }
  const app =
    config.roles.has('ingest') && db
      ? await buildApp({
          db, rateLimits, logger, trustProxy: config.http.trustProxy, tracking: config.tracking, warehouse, cliIdentity,
          processorWebhookSecrets: () => config.processor.webhookSecrets,
          clientIpv6Prefix: config.rateLimit.ipv6Prefix,
          processorWebhookRateLimit: config.rateLimit.processorWebhookPerMinute,
          // SECRETS_KEY, or the embedded start's own key, made on its first start.
          secretBox: createSecretBox(config.secrets.key ?? (await loadOrCreateKeyFile(config.secrets.keyFile))),
          publicBaseUrl: () => config.http.publicBaseUrl,
        })
      : undefined;

  // Relay and loader figures: on /metrics when METRICS_PORT is set, and in the logs every minute.
  const streams = config.roles.has('relay') || config.roles.has('loader');
  const metrics = streams ? createPipelineMetrics({ db: config.roles.has('relay') ? db : undefined, logger }) : undefined;
  const metricsServer =
    metrics && config.metrics ? await serveMetrics({ registry: metrics.registry, host: config.metrics.host, port: config.metrics.port, logger }) : undefined;
  if (metricsServer) logger.info({ url: `${metricsServer.url}/metrics` }, 'metrics served');
  const stopMetricsLog = metrics ? startMetricsLog({ metrics, logger, intervalMs: 60_000 }) : () => {};

  // The embedded warehouse is this process's alone: analysts' queries come in through its SQL endpoint.
  const sqlEndpoint =
    warehouse && config.warehouse.kind === 'chdb'
      ? await serveSqlEndpoint({ warehouse, config: config.analytics, dataDir: config.dataDir, logger })
      : undefined;
  if (sqlEndpoint) logger.info({ url: sqlEndpoint.url }, 'SQL endpoint for npm run sql served (operator token in the data directory)');

  if (config.pipeline.kind === 'embedded' && db && warehouse) {
    services.push(startEmbeddedPipeline({ db, warehouse, codec, logger, metrics }));
  }
  if (config.kafka && config.roles.has('relay') && db) {
    const { startRelayService } = await loadKafkaServices();
    services.push(await startRelayService({ db, kafka: config.kafka, relay: config.relay, codec, logger, metrics }));
  }
  if (config.kafka && config.roles.has('loader') && warehouse) {
    const { startLoaderService } = await loadKafkaServices();
    services.push(await startLoaderService({ kafka: config.kafka, loader: config.loader, warehouse, codec, logger, metrics }));
  }

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    try {
      await app?.close();
      await embeddedProvider?.close();
      for (const service of services) await service.stop();
      stopMetricsLog();
      await metricsServer?.close();
      await rateLimits.close();
      await sqlEndpoint?.close();
      await warehouse?.close();
      await db?.close();
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  if (!app || !db) {
    logger.info({ roles: [...config.roles], mode: describeMode(config) }, 'started');
    process.stdout.write(`\nAffiliate tracking ${[...config.roles].join(', ')} running\n  mode: ${describeMode(config)}\n\n`);
    return;
  }
  await app.listen({ host: config.http.host, port: config.http.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.http.port;
  const url = config.http.publicBaseUrl ?? `http://${config.http.host === '0.0.0.0' ? '127.0.0.1' : config.http.host}:${port}`;
  serviceUrl = url;
  if (embeddedProvider) {
    await embeddedProvider.attach(new URL(LOGIN_PAGE_PATH, url).toString());
    logger.info({ issuer: embeddedProvider.issuer }, 'embedded OpenID provider for svc login started');
  }
  const demo = config.database.kind === 'pglite' && config.seedDemo ? await ensureDemo(db, config.dataDir, new URL(url).origin) : undefined;
  // The demo's processor secret is accepted beside the configured ones (the app reads the list per event).
  if (demo?.credentials.processorWebhookSecret && !config.processor.webhookSecrets.includes(demo.credentials.processorWebhookSecret)) {
    config.processor.webhookSecrets.push(demo.credentials.processorWebhookSecret);
  }
  process.stdout.write(banner(url, describeMode(config), demo ? demoBannerLines(url, demo) : []));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
