import type { FastifyInstance } from 'fastify';
import { sql, type Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { createLogger } from '../../core/log.js';
import { createSecretBox } from '../../core/secret-box.js';
import { buildApp } from '../../ingest/app.js';
import { addMember, createSession, createWorkspace } from '../../domain/access/workspaces.js';
import { NO_FRAUD_RULES } from '../../domain/fraud/rules.js';
import { memoryRateLimitStore, type RateLimitStore } from '../../ingest/http/rate-limit.js';

export const FEE_BPS = 2_000;
export const DOCS_BASE_URL = 'https://docs.test.example';
/** The processor webhook secrets every test app accepts (two: a rotation in progress). */
export const PROCESSOR_SECRETS = ['whsec_test_current_secret', 'whsec_test_previous_secret'];
/** The SECRETS_KEY of every test app (sealed processor account secrets). */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7);

export async function buildTestApp(
  db: Database,
  rateLimits: RateLimitStore = memoryRateLimitStore(),
  clock?: () => number,
  warehouse?: Warehouse,
): Promise<FastifyInstance> {
  const app = await buildApp({
    db,
    rateLimits,
    clock,
    warehouse,
    logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    trustProxy: ['127.0.0.1'],
    tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
    processorWebhookSecrets: () => PROCESSOR_SECRETS,
    secretBox: createSecretBox(TEST_SECRETS_KEY),
  });
  await app.ready();
  return app;
}

/**
 * A store under which no request is ever limited: for the pipeline tests, which send hundreds of
 * sales per key in whatever clock minute they happen to run in, and whose subject is not the
 * limits (tests/ingest/tracking/limits-and-cors.test.ts tests those, in memory and on Redis).
 */
export const unlimitedRateLimits = (): RateLimitStore => ({ hit: () => 1, close: async () => {} });

/** Memory always; Redis when REDIS_URL is set, and required in CI. */
export function storeKinds(): ('memory' | 'redis')[] {
  if (process.env.CI && !process.env.REDIS_URL) throw new Error('CI is set but REDIS_URL is not: the Redis rate-limit tests cannot be skipped in CI');
  return process.env.REDIS_URL ? ['memory', 'redis'] : ['memory'];
}

let ipCounter = 0;
/** A distinct client address per call, so per-IP limits do not couple unrelated tests. */
export const freshIp = () => {
  ipCounter += 1;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
};

export interface Workspace {
  workspaceId: number;
  ownerToken: string;
  memberToken: string;
}

let unique = 0;
export async function createTestWorkspace(db: Database): Promise<Workspace> {
  unique += 1;
  const tag = `${Date.now()}-${unique}-${Math.random().toString(36).slice(2, 8)}`;
  const workspaceId = await createWorkspace(db, `Workspace ${tag}`);
  const ownerId = await addMember(db, workspaceId, `owner-${tag}@test.example`, 'owner');
  const memberId = await addMember(db, workspaceId, `member-${tag}@test.example`, 'member');
  return { workspaceId, ownerToken: await createSession(db, ownerId), memberToken: await createSession(db, memberId) };
}

export interface TestProgram {
  programId: number;
  apiKey: string;
  affCode: string;
  partnerId: number;
  workspace: Workspace;
}

/** A program created through the management API, with its key and one partner link. */
export async function createTestProgram(
  app: FastifyInstance,
  db: Database,
  settings: Record<string, unknown> = {},
  workspace?: Workspace,
): Promise<TestProgram> {
  const ws = workspace ?? (await createTestWorkspace(db));
  const auth = { authorization: `Bearer ${ws.ownerToken}` };
  const created = await app.inject({
    method: 'POST',
    url: '/api/tracking/programs',
    headers: auth,
    // The fraud rules (issue 31) are off unless a test names them: a click and its sale a few
    // milliseconds apart would otherwise hold every commission (fast_conversion).
    payload: {
      name: 'Test program', domain: 'shop.test.example', commission_type: 'percent', commission_rate: 10, ...settings,
      fraud_rules: { ...NO_FRAUD_RULES, ...(settings.fraud_rules as object | undefined) },
    },
  });
  if (created.statusCode !== 200) throw new Error(`program create failed: ${created.body}`);
  const programId = created.json().data.id as number;
  const key = await app.inject({ method: 'POST', url: `/api/tracking/programs/${programId}/api-key`, headers: auth });
  const partner = await app.inject({
    method: 'POST',
    url: `/api/tracking/programs/${programId}/partners`,
    headers: auth,
    payload: { name: 'Partner' },
  });
  if (partner.statusCode !== 200) throw new Error(`partner create failed: ${partner.body}`);
  return {
    programId,
    apiKey: key.json().data.api_key,
    affCode: partner.json().data.aff_code,
    partnerId: partner.json().data.partner_id,
    workspace: ws,
  };
}


/** Row counts of every table a tracking call may write, to prove a refused call wrote nothing. */
export interface TableCounts {
  clicks: number;
  customers: number;
  sale_events: number;
  commissions: number;
  platform_fees: number;
  refunds: number;
  tracking_logs: number;
  outbox: number;
  customer_versions: number;
  changed_sales: number;
}

export async function tableCounts(db: Database): Promise<TableCounts> {
  const row = await db.one<TableCounts>(
    sql(
      'test.table_counts',
      `SELECT (SELECT count(*) FROM clicks) AS clicks, (SELECT count(*) FROM customers) AS customers,
              (SELECT count(*) FROM sale_events) AS sale_events, (SELECT count(*) FROM commissions) AS commissions,
              (SELECT count(*) FROM platform_fees) AS platform_fees, (SELECT count(*) FROM refunds) AS refunds,
              (SELECT count(*) FROM tracking_logs) AS tracking_logs, (SELECT count(*) FROM outbox) AS outbox,
              (SELECT coalesce(sum(version), 0) FROM customers) AS customer_versions,
              (SELECT count(*) FROM sale_events WHERE status <> 'paid') AS changed_sales`,
    ),
  );
  return row!;
}
