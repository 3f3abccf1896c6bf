import { z } from 'zod';
import type { WarehouseConfig } from './warehouse.js';

/**
 * The only place that reads the environment. Every component receives the slice it needs.
 */
const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  PUBLIC_BASE_URL: z.url().optional(),
  DATA_DIR: z.string().default('./data'),
  DATABASE_URL: z.string().optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(20),
  REDIS_URL: z.string().optional(),
  CLICKHOUSE_URL: z.string().optional(),
  PIPELINE: z.enum(['on', 'off']).default('on'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  TRUST_PROXY: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  PLATFORM_FEE_BPS: z.coerce.number().int().min(0).max(10_000).default(2_000),
  DOCS_BASE_URL: z.url().default('https://docs.affiliate-tracking.dev'),
  SEED_DEMO: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
});

export type DatabaseConfig =
  | { kind: 'pglite'; dataDir: string | undefined }
  | { kind: 'postgres'; url: string; poolSize: number };

export type RateLimitConfig = { kind: 'memory' } | { kind: 'redis'; url: string };

export interface HttpConfig {
  host: string;
  port: number;
  trustProxy: boolean;
  publicBaseUrl: string | undefined;
}

export interface TrackingConfig {
  platformFeeBps: number;
  docsBaseUrl: string;
}

/**
 * The stream half in this process. Embedded: relay and loader run inside the ingest process,
 * publishing straight into the warehouse. Off: ingest only (the distributed relay and loader are
 * separate processes).
 */
export type PipelineConfig = { kind: 'embedded'; warehouse: WarehouseConfig } | { kind: 'off' };

export interface Config {
  env: 'development' | 'production' | 'test';
  logLevel: string;
  dataDir: string;
  seedDemo: boolean;
  http: HttpConfig;
  database: DatabaseConfig;
  rateLimit: RateLimitConfig;
  tracking: TrackingConfig;
  pipeline: PipelineConfig;
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  return {
    env: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    dataDir: e.DATA_DIR,
    seedDemo: e.SEED_DEMO,
    http: { host: e.HOST, port: e.PORT, trustProxy: e.TRUST_PROXY, publicBaseUrl: e.PUBLIC_BASE_URL },
    database: e.DATABASE_URL
      ? { kind: 'postgres', url: e.DATABASE_URL, poolSize: e.DATABASE_POOL_SIZE }
      : { kind: 'pglite', dataDir: `${e.DATA_DIR.replace(/\/$/, '')}/pg` },
    rateLimit: e.REDIS_URL ? { kind: 'redis', url: e.REDIS_URL } : { kind: 'memory' },
    tracking: { platformFeeBps: e.PLATFORM_FEE_BPS, docsBaseUrl: e.DOCS_BASE_URL },
    // Until the Kafka relay lands, the stream half runs only embedded, beside PGlite.
    pipeline:
      e.PIPELINE === 'on' && !e.DATABASE_URL
        ? {
            kind: 'embedded',
            warehouse: e.CLICKHOUSE_URL
              ? { kind: 'http', url: e.CLICKHOUSE_URL }
              : { kind: 'chdb', path: `${e.DATA_DIR.replace(/\/$/, '')}/ch` },
          }
        : { kind: 'off' },
  };
}
