import { isIP } from 'node:net';
import { z } from 'zod';
import type { DatabaseConfig } from './db.js';
import { decodeSecretsKey, type SecretsConfig } from './secret-box.js';
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
  // IPv6 clients are rate limited per network of this many bits (a subscriber gets a /64 or more).
  RATE_LIMIT_IPV6_PREFIX: z.coerce.number().int().min(16).max(128).default(64),
  // Processor webhook requests a minute per client address, refused ones included (ours; a 429 is retried).
  PROCESSOR_WEBHOOK_RATE_LIMIT: z.coerce.number().int().min(1).max(1_000_000).default(6_000),
  CLICKHOUSE_URL: z.string().optional(),
  PIPELINE: z.enum(['on', 'off']).default('on'),
  SERVICE: z.enum(['all', 'ingest', 'relay', 'loader', 'webhooks']).optional(),
  KAFKA_BROKERS: z.string().optional(),
  KAFKA_CLIENT: z.enum(['kafkajs', 'platformatic']).default('kafkajs'),
  KAFKA_CLIENT_ID: z.string().min(1).default('affiliate-tracking'),
  KAFKA_TOPIC_PREFIX: z.string().regex(/^[A-Za-z0-9._-]*$/).default(''),
  KAFKA_TOPIC_PARTITIONS: z.coerce.number().int().min(1).max(1_000).default(3),
  KAFKA_REPLICATION_FACTOR: z.coerce.number().int().min(1).max(10).default(1),
  RELAY_BATCH_SIZE: z.coerce.number().int().min(1).max(100_000).default(2_000),
  RELAY_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(100),
  LOADER_GROUP_ID: z.string().min(1).default('ats-loader'),
  LOADER_FLUSH_MS: z.coerce.number().int().min(10).max(60_000).default(500),
  LOADER_MIN_BATCH_BYTES: z.coerce.number().int().min(1).max(64 * 1024 * 1024).default(256 * 1024),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  // Outgoing webhooks (issue 32): private, loopback, link-local and metadata addresses (and http://)
  // are refused unless this is true (tests and local use); the dispatcher's consumer group; how long
  // one attempt may take, connecting included.
  WEBHOOK_ALLOW_PRIVATE_URLS: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  WEBHOOKS_GROUP_ID: z.string().min(1).default('ats-webhooks'),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // The proxies in front of ingest, by address or CIDR (`10.0.0.5,10.1.0.0/16`); `false`: none.
  // `true` (trust every hop) lets any client pick its address with X-Forwarded-For, so it is refused.
  TRUST_PROXY: z
    .string()
    .default('false')
    .transform((v, ctx) => {
      const value = v.trim();
      if (value === 'false' || value === '') return false as const;
      const addresses = value.split(',').map((a) => a.trim()).filter(Boolean);
      const wrong = addresses.filter((a) => !isAddressOrCidr(a));
      if (value === 'true' || wrong.length) {
        ctx.addIssue({
          code: 'custom',
          message:
            `must be false or a comma-separated list of the proxies' addresses or CIDR ranges (e.g. 10.0.0.5,10.1.0.0/16)` +
            (value === 'true' ? `; true would trust every hop, so any client could choose its own address with X-Forwarded-For` : `; not an address: ${wrong.join(', ')}`),
        });
        return z.NEVER;
      }
      return addresses;
    }),
  EMBEDDED_FSYNC: z
    .enum(['on', 'off'])
    .default('on')
    .transform((v) => v === 'on'),
  // Embedded Postgres's buffer cache, inside the process's memory (core/db.ts says why it is small).
  EMBEDDED_SHARED_BUFFERS: z
    .string()
    .regex(/^[1-9]\d{0,5}(kB|MB|GB)$/, 'EMBEDDED_SHARED_BUFFERS must be a size such as 32MB')
    .default('32MB'),
  PLATFORM_FEE_BPS: z.coerce.number().int().min(0).max(10_000).default(2_000),
  DOCS_BASE_URL: z.url().default('https://docs.affiliate-tracking.dev'),
  // The payment processor's webhook signing secrets (issue 12), comma-separated: several during a rotation.
  PROCESSOR_WEBHOOK_SECRETS: z
    .string()
    .default('')
    .transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean)),
  // The key that seals secrets the service must read back (issue 27: processor accounts' webhook
  // secrets): 32 random bytes, base64. The embedded start keeps one in <DATA_DIR>/secrets.key.
  SECRETS_KEY: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return undefined;
      const key = decodeSecretsKey(v);
      if (typeof key === 'string') {
        ctx.addIssue({ code: 'custom', message: key });
        return z.NEVER;
      }
      return key;
    }),
  // CLI browser login (issue 16). Without OIDC_ISSUER the service runs its own OpenID provider
  // in-process (the demo account), on OIDC_EMBEDDED_PORT or PORT+1.
  OIDC_ISSUER: z.url().optional(),
  OIDC_CLIENT_ID: z.string().min(1).default('svc-cli'),
  OIDC_AUDIENCE: z.string().min(1).optional(),
  OIDC_ALGORITHMS: z
    .string()
    .default('RS256,ES256')
    .transform((v) => v.split(',').map((a) => a.trim()).filter(Boolean))
    .pipe(z.array(z.enum(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'])).min(1)),
  OIDC_EMBEDDED_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  SQL_HOST: z.string().default('127.0.0.1'),
  SQL_PORT: z.coerce.number().int().min(0).max(65535).default(0),
  SQL_MAX_EXECUTION_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  SQL_MAX_MEMORY_BYTES: z.coerce.number().int().min(1_000_000).default(2_000_000_000),
  SEED_DEMO: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
});

/** Every variable the service reads (docker-compose.yml's services are checked against it: tests/docker-compose.test.ts). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(EnvSchema.shape);

/** An IPv4 or IPv6 address, optionally with a /prefix. */
function isAddressOrCidr(value: string): boolean {
  const [address, prefix, ...rest] = value.split('/');
  const version = isIP(address ?? '');
  if (!version || rest.length) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d{1,3}$/.test(prefix) && bits <= (version === 4 ? 32 : 128);
}

/** Which proxies may set X-Forwarded-For: none, or these addresses and ranges. */
export type TrustProxy = false | string[];

/**
 * Where the counts live (one process's memory, or Redis shared by the ingest processes), the IPv6
 * prefix a client is counted under, and the processor webhook's limit per address and minute.
 */
export type RateLimitConfig = ({ kind: 'memory' } | { kind: 'redis'; url: string }) & { ipv6Prefix: number; processorWebhookPerMinute: number };

export interface HttpConfig {
  host: string;
  port: number;
  trustProxy: TrustProxy;
  publicBaseUrl: string | undefined;
}

/** Who signs people in for `svc login`: an external OpenID provider, or the embedded one. */
export interface IdentityConfig {
  clientId: string;
  /** The id_token's required `aud`; the client id unless set. */
  audience: string;
  /** The only signing algorithms an id_token may use. */
  algorithms: string[];
  provider:
    | { kind: 'external'; issuer: string }
    /** portGiven: OIDC_EMBEDDED_PORT was set, so a taken port fails the start instead of moving. */
    | { kind: 'embedded'; host: string; port: number; portGiven: boolean }
    /** Distributed mode without OIDC_ISSUER: the CLI login answers 500 until one is configured. */
    | { kind: 'none' };
}

export interface TrackingConfig {
  platformFeeBps: number;
  docsBaseUrl: string;
}

export interface ProcessorConfig {
  /** Accepted webhook signing secrets; the embedded start adds the one it generated for the demo. */
  webhookSecrets: string[];
}

/**
 * The stream half in this process. Embedded: relay and loader run inside the ingest process,
 * publishing straight into the warehouse. Off: ingest only (the distributed relay and loader are
 * separate processes).
 */
export type PipelineConfig = { kind: 'embedded'; warehouse: WarehouseConfig } | { kind: 'off' };

export type ServiceRole = 'ingest' | 'relay' | 'loader' | 'webhooks';

/** Outgoing webhooks (issue 32): who may be sent to, the dispatcher's consumer group, an attempt's time limit. */
export interface WebhooksConfig {
  allowPrivateUrls: boolean;
  groupId: string;
  timeoutMs: number;
}

export interface KafkaConfig {
  brokers: string[];
  /** kafkajs (the named client) or @platformatic/kafka behind the same event-log seam. */
  client: 'kafkajs' | 'platformatic';
  clientId: string;
  /** Put before every topic name (tests and side-by-side installs use their own topics). */
  topicPrefix: string;
  /** Used when the service creates its topics at start. */
  topics: { partitions: number; replicationFactor: number };
}

export interface RelayConfig {
  batchSize: number;
  pollIntervalMs: number;
}

export interface LoaderConfig {
  groupId: string;
  /** A batch is loaded when it holds minBatchBytes or flushIntervalMs has passed, whichever comes first. */
  flushIntervalMs: number;
  minBatchBytes: number;
}

export interface AnalyticsConfig {
  /** The SQL endpoint of the process that holds the embedded warehouse (port 0: any free port). */
  endpoint: { host: string; port: number };
  limits: { maxExecutionSeconds: number; maxMemoryBytes: number };
}

export interface Config {
  env: 'development' | 'production' | 'test';
  logLevel: string;
  dataDir: string;
  seedDemo: boolean;
  http: HttpConfig;
  database: DatabaseConfig;
  rateLimit: RateLimitConfig;
  tracking: TrackingConfig;
  processor: ProcessorConfig;
  secrets: SecretsConfig;
  identity: IdentityConfig;
  pipeline: PipelineConfig;
  /** What this process runs: all three in the embedded mode, one each in the distributed mode. */
  roles: ReadonlySet<ServiceRole>;
  /** The event log between relay and loader; without it both run in one process on the in-process log. */
  kafka: KafkaConfig | undefined;
  /** The warehouse the loader fills and the dashboard reads. */
  warehouse: WarehouseConfig;
  relay: RelayConfig;
  loader: LoaderConfig;
  webhooks: WebhooksConfig;
  /** Analysts' SQL (analytics/): the operator endpoint of the embedded process, the limits of every query. */
  analytics: AnalyticsConfig;
  /** Where the relay and loader serve /metrics; undefined: not served. */
  metrics: { host: string; port: number } | undefined;
}

const ROLES: Record<'all' | ServiceRole, ServiceRole[]> = {
  all: ['ingest', 'relay', 'loader', 'webhooks'],
  ingest: ['ingest'],
  relay: ['relay'],
  loader: ['loader'],
  webhooks: ['webhooks'],
};

/**
 * service: the role named on the command line (`main.ts relay`), which wins over SERVICE. Without
 * either, the embedded mode (no DATABASE_URL) runs everything and the distributed mode runs ingest.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, options: { service?: string } = {}): Config {
  const parsed = EnvSchema.safeParse(options.service ? { ...env, SERVICE: options.service } : env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  const dataDir = e.DATA_DIR.replace(/\/$/, '');
  const service = e.SERVICE ?? (e.DATABASE_URL ? 'ingest' : e.PIPELINE === 'off' ? 'ingest' : 'all');
  const roles = new Set(ROLES[service]);
  const brokers = (e.KAFKA_BROKERS ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  const problems: string[] = [];
  // PGlite is a directory one process opens; the in-process log connects relay and loader only inside one process.
  if (!e.DATABASE_URL && service === 'relay') {
    problems.push(`  SERVICE=relay needs DATABASE_URL: the embedded Postgres (PGlite) lives in one process, so run SERVICE=all`);
  }
  if (!e.DATABASE_URL && service === 'webhooks') {
    problems.push(`  SERVICE=webhooks needs DATABASE_URL: the embedded Postgres (PGlite) lives in one process, so run SERVICE=all`);
  }
  if (!brokers.length && (service === 'relay' || service === 'loader' || service === 'webhooks')) {
    problems.push(`  SERVICE=${service} needs KAFKA_BROKERS: without Kafka the relay and the loader run together in one process (SERVICE=all)`);
  }
  if (problems.length) throw new Error(`Invalid configuration:\n${problems.join('\n')}`);
  const warehouse: WarehouseConfig = e.CLICKHOUSE_URL ? { kind: 'http', url: e.CLICKHOUSE_URL } : { kind: 'chdb', path: `${dataDir}/ch` };
  return {
    roles,
    kafka: brokers.length
      ? {
          brokers,
          client: e.KAFKA_CLIENT,
          clientId: e.KAFKA_CLIENT_ID,
          topicPrefix: e.KAFKA_TOPIC_PREFIX,
          topics: { partitions: e.KAFKA_TOPIC_PARTITIONS, replicationFactor: e.KAFKA_REPLICATION_FACTOR },
        }
      : undefined,
    warehouse,
    relay: { batchSize: e.RELAY_BATCH_SIZE, pollIntervalMs: e.RELAY_POLL_MS },
    loader: { groupId: e.LOADER_GROUP_ID, flushIntervalMs: e.LOADER_FLUSH_MS, minBatchBytes: e.LOADER_MIN_BATCH_BYTES },
    webhooks: { allowPrivateUrls: e.WEBHOOK_ALLOW_PRIVATE_URLS, groupId: e.WEBHOOKS_GROUP_ID, timeoutMs: e.WEBHOOK_TIMEOUT_MS },
    analytics: {
      endpoint: { host: e.SQL_HOST, port: e.SQL_PORT },
      limits: { maxExecutionSeconds: e.SQL_MAX_EXECUTION_SECONDS, maxMemoryBytes: e.SQL_MAX_MEMORY_BYTES },
    },
    metrics: e.METRICS_PORT === undefined ? undefined : { host: e.HOST, port: e.METRICS_PORT },
    env: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    dataDir: e.DATA_DIR,
    seedDemo: e.SEED_DEMO,
    http: { host: e.HOST, port: e.PORT, trustProxy: e.TRUST_PROXY, publicBaseUrl: e.PUBLIC_BASE_URL },
    database: e.DATABASE_URL
      ? { kind: 'postgres', url: e.DATABASE_URL, poolSize: e.DATABASE_POOL_SIZE }
      : { kind: 'pglite', dataDir: `${e.DATA_DIR.replace(/\/$/, '')}/pg`, durable: e.EMBEDDED_FSYNC, sharedBuffers: e.EMBEDDED_SHARED_BUFFERS },
    rateLimit: {
      ...(e.REDIS_URL ? { kind: 'redis' as const, url: e.REDIS_URL } : { kind: 'memory' as const }),
      ipv6Prefix: e.RATE_LIMIT_IPV6_PREFIX,
      processorWebhookPerMinute: e.PROCESSOR_WEBHOOK_RATE_LIMIT,
    },
    tracking: { platformFeeBps: e.PLATFORM_FEE_BPS, docsBaseUrl: e.DOCS_BASE_URL },
    processor: { webhookSecrets: e.PROCESSOR_WEBHOOK_SECRETS },
    secrets: { key: e.SECRETS_KEY, keyFile: `${dataDir}/secrets.key` },
    identity: {
      clientId: e.OIDC_CLIENT_ID,
      audience: e.OIDC_AUDIENCE ?? e.OIDC_CLIENT_ID,
      algorithms: e.OIDC_ALGORITHMS,
      // The in-process provider belongs to the embedded start (or where a port is given for it):
      // ingest processes behind a load balancer name a real provider.
      provider: e.OIDC_ISSUER
        ? { kind: 'external', issuer: e.OIDC_ISSUER }
        : !e.DATABASE_URL || e.OIDC_EMBEDDED_PORT !== undefined
          ? {
              kind: 'embedded',
              host: e.HOST,
              port: e.OIDC_EMBEDDED_PORT ?? (e.PORT === 0 || e.PORT === 65535 ? 0 : e.PORT + 1),
              portGiven: e.OIDC_EMBEDDED_PORT !== undefined,
            }
          : { kind: 'none' },
    },
    pipeline: roles.has('relay') && roles.has('loader') && !brokers.length ? { kind: 'embedded', warehouse } : { kind: 'off' },
  };
}
