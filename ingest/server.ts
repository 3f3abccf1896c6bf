/**
 * The ingest role of a process (main.ts): the HTTP app on the stores main.ts opened, with its
 * rate-limit store, the CLI login's OpenID provider and the secrets box; once it listens, the
 * embedded start's demo.
 */
import type { Logger } from 'pino';
import type { Config } from '../core/config.js';
import type { Database } from '../core/db.js';
import { openSecretBox } from '../core/secret-box.js';
import type { Warehouse } from '../core/warehouse.js';
import { demoBannerLines, ensureDemo } from '../domain/demo.js';
import { buildApp } from './app.js';
import { memoryRateLimitStore, redisRateLimitStore, type RateLimitStore } from './http/rate-limit.js';
import { startCliLogin } from './oidc/cli-identity.js';

export interface IngestDeps {
  config: Config;
  db: Database;
  /** The dashboard's and the agent API's reads; without it those routes answer 500. */
  warehouse: Warehouse | undefined;
  logger: Logger;
}

export interface IngestServer {
  /** Listens on HTTP; the service's URL and the demo's lines for the banner (none without the demo). */
  listen(): Promise<{ url: string; demoLines: string[] }>;
  /** Stops accepting requests, then closes the OpenID provider and the rate-limit store. */
  close(): Promise<void>;
}

function rateLimitStore(config: Config['rateLimit'], logger: Logger): Promise<RateLimitStore> | RateLimitStore {
  if (config.kind === 'redis') return redisRateLimitStore(config.url);
  return memoryRateLimitStore({ onFull: (maxKeys) => logger.warn({ maxKeys }, 'rate-limit store full for this minute: new callers are counted approximately (never under their count)') });
}

/** The embedded start's demo (made on its first start), its processor secret accepted beside the configured ones. */
async function seedDemo(config: Config, db: Database, url: string): Promise<string[]> {
  if (config.database.kind !== 'pglite' || !config.seedDemo) return [];
  const demo = await ensureDemo(db, config.dataDir, new URL(url).origin);
  if (!demo) return [];
  // The app reads the list per event.
  const secret = demo.credentials.processorWebhookSecret;
  if (secret && !config.processor.webhookSecrets.includes(secret)) config.processor.webhookSecrets.push(secret);
  return demoBannerLines(url, demo);
}

export async function startIngest({ config, db, warehouse, logger }: IngestDeps): Promise<IngestServer> {
  const rateLimits = await rateLimitStore(config.rateLimit, logger);
  const cliLogin = await startCliLogin(config.identity, { publicBaseUrl: config.http.publicBaseUrl, logger, db });
  const app = await buildApp({
    db, rateLimits, logger, trustProxy: config.http.trustProxy, tracking: config.tracking, warehouse, cliIdentity: cliLogin.identity,
    processorWebhookSecrets: () => config.processor.webhookSecrets,
    clientIpv6Prefix: config.rateLimit.ipv6Prefix,
    processorWebhookRateLimit: config.rateLimit.processorWebhookPerMinute,
    // SECRETS_KEY, or the embedded start's own key, made on its first start.
    secretBox: await openSecretBox(config.secrets),
    publicBaseUrl: () => config.http.publicBaseUrl,
    webhooks: { allowPrivateUrls: config.webhooks.allowPrivateUrls },
  });
  return {
    async listen() {
      const { host, port } = config.http;
      await app.listen({ host, port });
      const address = app.server.address();
      const bound = typeof address === 'object' && address ? address.port : port;
      const url = config.http.publicBaseUrl ?? `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${bound}`;
      await cliLogin.listening(url);
      return { url, demoLines: await seedDemo(config, db, url) };
    },
    async close() {
      await app.close();
      await cliLogin.close();
      await rateLimits.close();
    },
  };
}
