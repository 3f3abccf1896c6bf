/**
 * What each process of the distributed topology is given, beyond the environment it inherits:
 * the one list `npm run start:distributed` starts its processes with and docker-compose.yml's
 * services are checked against (tests/docker-compose.test.ts), so the two cannot drift apart.
 */
export interface TopologySettings {
  host: string;
  /** ingest-1 listens on it, ingest-2 on the next port. */
  port: number;
  databaseUrl: string;
  redisUrl: string;
  kafkaBrokers: string;
  clickhouseUrl: string;
  /** base64, the same for every ingest process (core/secret-box.ts). */
  secretsKey: string;
  /** The processor webhook secrets the ingest processes accept (the demo's among them). */
  processorWebhookSecrets: string[];
}

export const INGEST_PROCESSES = 2;
export const LOADER_PROCESSES = 2;

/** The variables every role of the topology is given (docker-compose.yml gives its services the same). */
export const SHARED_VARIABLES = ['DATABASE_URL', 'REDIS_URL', 'KAFKA_BROKERS', 'CLICKHOUSE_URL', 'SECRETS_KEY', 'HOST'] as const;
/** Set for the ingest processes only (and PROCESSOR_WEBHOOK_SECRETS when there are any: the demo's). */
export const INGEST_VARIABLES = ['PORT'] as const;

type Role = 'ingest' | 'relay' | 'loader' | 'webhooks';

/**
 * The role's variables. Every role gets the same stores (a relay never reads Redis, a loader never
 * Postgres, but one list is what docker-compose.yml's services share too); `index` numbers the
 * ingest processes from 0, each on its own port.
 */
export function roleEnvironment(settings: TopologySettings, role: Role, index = 0): Record<string, string> {
  const shared: Record<(typeof SHARED_VARIABLES)[number], string> = {
    DATABASE_URL: settings.databaseUrl,
    REDIS_URL: settings.redisUrl,
    KAFKA_BROKERS: settings.kafkaBrokers,
    CLICKHOUSE_URL: settings.clickhouseUrl,
    SECRETS_KEY: settings.secretsKey,
    HOST: settings.host,
  };
  if (role !== 'ingest') return shared;
  const ingest: Record<(typeof INGEST_VARIABLES)[number], string> = { PORT: String(settings.port + index) };
  const secrets: Record<string, string> = settings.processorWebhookSecrets.length ? { PROCESSOR_WEBHOOK_SECRETS: settings.processorWebhookSecrets.join(',') } : {};
  return { ...shared, ...ingest, ...secrets };
}
