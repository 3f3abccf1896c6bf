import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Svc, renewalSale, type RetryNotice, type ServerSdkOptions } from '../../clients/server-sdk/src/index.js';
import { delayMs, retryable, DEFAULT_RETRY } from '../../clients/server-sdk/src/transport.js';
import { openDatabase, sql, type Database } from '../../core/db.js';
import { createLogger } from '../../core/log.js';
import { migrate } from '../../core/migrate.js';
import { buildApp } from '../../ingest/app.js';
import { markKeyForRotation } from '../../domain/programs/api-keys.js';
import { memoryRateLimitStore } from '../../ingest/http/rate-limit.js';
import { DOCS_BASE_URL, FEE_BPS, createTestProgram, freshIp, tableCounts, unlimitedRateLimits, type TestProgram } from '../support/app.js';
import { createTestDatabase, databaseKinds, type DatabaseKind } from '../support/databases.js';

/**
 * The server SDK against the real service, listening on a real port, on PGlite and on Postgres.
 * Failures are real: a 429 from the real rate limiter, a 500 from a database that is down, a
 * connection refused from a port nobody listens on.
 */

const MINUTE = 60_000;
const SALE_PATH = '/api/v1/track/sale';

/** A database that can be taken down and brought back while the service runs on it. */
interface FaultyDatabase {
  db: Database;
  stop(): Promise<void>;
  restore(): Promise<void>;
  drop(): Promise<void>;
}

/** PGlite on disk, behind a handle the service holds: stopped (closed), then opened again on the same files. */
async function faultyPglite(): Promise<FaultyDatabase> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sdk-pglite-'));
  let current = await openDatabase({ kind: 'pglite', dataDir });
  await migrate(current);
  let stopped = false;
  const db: Database = {
    kind: 'pglite',
    many: (query, params) => current.many(query, params),
    one: (query, params) => current.one(query, params),
    transaction: (fn) => current.transaction(fn),
    close: () => current.close(),
  };
  return {
    db,
    async stop() {
      stopped = true;
      await current.close();
    },
    async restore() {
      if (!stopped) return;
      stopped = false;
      current = await openDatabase({ kind: 'pglite', dataDir });
    },
    async drop() {
      if (!stopped) await current.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A test database on the real server: its connections refused and the service's ones terminated, then allowed again. */
async function faultyPostgres(): Promise<FaultyDatabase> {
  const t = await createTestDatabase('postgres');
  const name = new URL(t.url!).pathname.slice(1);
  const admin = async (text: string, params: unknown[] = []) => {
    const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    try {
      await client.query(text, params);
    } finally {
      await client.end();
    }
  };
  const restore = () => admin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
  return {
    db: t.db,
    async stop() {
      await admin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [name]);
    },
    restore,
    async drop() {
      await restore();
      await t.drop();
    },
  };
}

const q = {
  salesOf: sql(
    't.sdk_sales_of',
    `SELECT amount_cents, currency, is_recurring, sale_type, subscription_id, status FROM sale_events WHERE transaction_id = $1`,
  ),
  customer: sql('t.sdk_customer', `SELECT status, customer_key, email FROM customers WHERE id = $1`),
};

let serial = 0;
const unique = (prefix: string) => `${prefix}-${Date.now()}-${++serial}`;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const run = promisify(execFile);

/**
 * What a brand installs: `npm pack` of clients/server-sdk (its prepare script builds dist/ with tsc),
 * unpacked into a fresh node_modules, next to a script that imports `@svc/server-sdk`. Built
 * once for the whole file.
 */
let packed: Promise<{ dir: string; files: string[] }> | undefined;
function packedPackage() {
  packed ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-brand-'));
    await run('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: join(import.meta.dirname, '../../clients/server-sdk') });
    const tarball = (await readdir(dir)).find((f) => f.endsWith('.tgz'))!;
    const installed = join(dir, 'node_modules/@svc/server-sdk');
    await mkdir(installed, { recursive: true });
    await run('tar', ['-xzf', join(dir, tarball), '-C', installed, '--strip-components=1']);
    const { stdout } = await run('tar', ['-tzf', join(dir, tarball)]);
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'brand', private: true, type: 'module' }));
    await writeFile(
      join(dir, 'sale.mjs'),
      `import { Svc } from '@svc/server-sdk';
const [baseUrl, apiKey, customerExternalId, invoiceId, amount] = process.argv.slice(2);
const svc = new Svc({ apiKey, baseUrl });
console.log(JSON.stringify(await svc.trackSale({ customerExternalId, invoiceId, amount: Number(amount) })));
`,
    );
    return { dir, files: stdout.trim().split('\n').sort() };
  })();
  return packed;
}

afterAll(async () => {
  if (packed) await rm((await packed).dir, { recursive: true, force: true });
});

it('npm ci builds the package (its prepare script), so plain Node imports @svc/server-sdk with no build step', async () => {
  const manifest = JSON.parse(await readFile(join(import.meta.dirname, '../../clients/server-sdk/package.json'), 'utf8'));
  expect(manifest.scripts.prepare).toBe('npm run build');
  const { stdout } = await run('node', ['-e', "import('@svc/server-sdk').then((m) => console.log(typeof m.Svc))"], { cwd: join(import.meta.dirname, '../..') });
  expect(stdout.trim()).toBe('function');
});

describe.each(databaseKinds())('server SDK against the real service on %s', (kind: DatabaseKind) => {
  let faulty: FaultyDatabase;
  let db: Database;
  let app: FastifyInstance;
  let baseUrl: string;
  let program: TestProgram;
  /** The service's own clock, shifted forward only, to place a rate-limit window where a test needs it. */
  let clockOffset = 0;
  const clock = () => Date.now() + clockOffset;
  /** Every request the service logged: how a test proves the SDK sent nothing, or sent it twice. */
  const logLines: { msg?: string; req?: { url?: string } }[] = [];
  const requestsTo = (path: string) => logLines.filter((l) => l.msg === 'incoming request' && l.req?.url === path).length;

  const sdk = (options: Partial<ServerSdkOptions> = {}) => new Svc({ apiKey: program.apiKey, baseUrl, ...options });

  beforeAll(async () => {
    faulty = kind === 'pglite' ? await faultyPglite() : await faultyPostgres();
    db = faulty.db;
    app = await buildApp({
      db,
      rateLimits: memoryRateLimitStore(),
      clock,
      logger: createLogger('info', { write: (line: string) => void logLines.push(JSON.parse(line)) }),
      trustProxy: ['127.0.0.1'],
      tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    program = await createTestProgram(app, db);
  });
  afterAll(async () => {
    await app?.close();
    await faulty?.drop();
  });

  const click = async (p: TestProgram = program) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/track/click',
      headers: { 'x-forwarded-for': freshIp() },
      payload: { affiliate_url: `https://shop.test.example/?aff=${p.affCode}` },
    });
    expect(res.statusCode).toBe(200);
    return res.json().click_id as string;
  };
  /** A customer with a click and a server-mode lead recorded through the SDK: ready to buy. */
  const customer = async (svc = sdk()) => {
    const customerExternalId = unique('user');
    const lead = await svc.trackLead({ customerExternalId, clickId: await click() });
    expect(lead).toMatchObject({ ok: true, status: 200 });
    return customerExternalId;
  };
  const salesOf = (invoiceId: string) => db.many<Record<string, unknown>>(q.salesOf, [invoiceId]);

  it('trackLead records a server-mode lead with the customer key and email; a repeat is refused with 400 and not retried', async () => {
    const clickId = await click();
    const customerExternalId = unique('user');
    const lead = await sdk().trackLead({ customerExternalId, clickId, email: 'buyer@shop.test.example' });
    expect(lead).toMatchObject({
      ok: true,
      status: 200,
      error: null,
      attempts: 1,
      warnings: [],
      data: { program_id: program.programId, click_id: clickId, status: 'lead' },
    });
    expect(lead.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(lead.data!.provisional).toBeUndefined();
    expect(await db.one(q.customer, [lead.data!.customer_id])).toEqual({ status: 'lead', customer_key: customerExternalId, email: 'buyer@shop.test.example' });

    const again = await sdk().trackLead({ customerExternalId, clickId });
    expect(again).toMatchObject({
      ok: false,
      status: 400,
      data: null,
      attempts: 1,
      error: { message: 'Customer status cannot be updated to lead. Current status: lead' },
    });
  });

  it('a lead no click id or known customer key resolves gives 400 and records nothing', async () => {
    const before = await tableCounts(db);
    const lead = await sdk().trackLead({ customerExternalId: unique('stranger'), clickId: null });
    expect(lead).toMatchObject({ ok: false, status: 400, attempts: 1, error: { message: 'Customer not found. Provide a valid click_id or customer_key.' } });
    expect(await tableCounts(db)).toEqual(before);
  });

  it('trackSale records the sale with its options; the same invoiceId again is status 409 with the first sale id, recorded once', async () => {
    const customerExternalId = await customer();
    const invoiceId = unique('in');
    const sale = await sdk().trackSale({ customerExternalId, amount: 4_900, invoiceId, isRecurring: true, saleType: 'subscription', subscriptionId: 'sub_123' });
    expect(sale).toMatchObject({
      ok: true,
      status: 200,
      attempts: 1,
      data: { transaction_id: invoiceId, amount_cents: 4_900, currency: 'USD', status: 'paid', conversion: true, test_mode: false },
    });
    if (!sale.ok || sale.alreadyRecorded) throw new Error('the first sale must be recorded');
    expect(sale.data.commission).toMatchObject({ partner_id: program.partnerId, amount_cents: 490 });
    expect(await salesOf(invoiceId)).toEqual([
      { amount_cents: 4_900, currency: 'USD', is_recurring: true, sale_type: 'subscription', subscription_id: 'sub_123', status: 'paid' },
    ]);

    // The 409 names this program's own sale: already recorded, a success.
    const duplicate = await sdk().trackSale({ customerExternalId, amount: 4_900, invoiceId, currency: 'eur' });
    expect(duplicate).toMatchObject({
      ok: true,
      alreadyRecorded: true,
      status: 409,
      attempts: 1,
      error: null,
      data: { sale_id: sale.data!.sale_id, transaction_id: invoiceId, already_recorded: true },
    });
    expect(await salesOf(invoiceId)).toHaveLength(1);
  });

  it("a 409 for another program's transaction_id is a failure the caller sees (transaction_id_collision), never 'already recorded'", async () => {
    const other = await createTestProgram(app, db);
    const invoiceId = unique('in');
    const first = await new Svc({ apiKey: other.apiKey, baseUrl }).trackLead({ customerExternalId: 'theirs', clickId: await click(other) });
    expect(first).toMatchObject({ ok: true });
    const theirs = await new Svc({ apiKey: other.apiKey, baseUrl }).trackSale({ customerExternalId: 'theirs', amount: 1_000, invoiceId });
    expect(theirs).toMatchObject({ ok: true, alreadyRecorded: false, status: 200 });

    const customerExternalId = await customer();
    const before = await tableCounts(db);
    const mine = await sdk().trackSale({ customerExternalId, amount: 4_900, invoiceId });
    expect(mine).toMatchObject({ ok: false, alreadyRecorded: false, status: 409, data: null, attempts: 1, error: { code: 'transaction_id_collision', details: {} } });
    expect(mine.error!.message).toContain('this sale was NOT recorded');
    // Only the other program's sale exists under that id; this program's sale was not recorded.
    expect(await salesOf(invoiceId)).toEqual([expect.objectContaining({ amount_cents: 1_000 })]);
    expect(await tableCounts(db)).toEqual(before);
  });

  it('refuses a non-positive or non-integer amount before any request: nothing reaches the service, nothing is written', async () => {
    const customerExternalId = await customer();
    const before = await tableCounts(db);
    const sent = requestsTo(SALE_PATH);
    for (const amount of [0, -100, 12.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '4900' as unknown as number, undefined as unknown as number]) {
      const invoiceId = unique('in');
      const result = await sdk().trackSale({ customerExternalId, amount, invoiceId });
      expect(result).toMatchObject({ ok: false, status: 0, data: null, attempts: 0, requestId: null, error: { code: 'invalid_amount' } });
      expect(result.error!.message).toMatch(/^amount must be a positive integer number of cents; got .+\. No request was sent\.$/);
      expect(await salesOf(invoiceId)).toEqual([]);
    }
    expect(requestsTo(SALE_PATH)).toBe(sent);
    expect(await tableCounts(db)).toEqual(before);
  });

  it('trackRefund refunds the sale; a repeat answers the first refund; an unknown invoice is 404', async () => {
    const customerExternalId = await customer();
    const invoiceId = unique('in');
    expect((await sdk().trackSale({ customerExternalId, amount: 10_000, invoiceId })).ok).toBe(true);
    const refund = await sdk().trackRefund({ invoiceId, reason: 'chargeback', refundReason: 'disputed' });
    expect(refund).toMatchObject({ ok: true, status: 200, attempts: 1, data: { transaction_id: invoiceId, reason: 'chargeback', sale_status: 'chargeback', commission_reversed: true } });
    const again = await sdk().trackRefund({ invoiceId });
    expect(again).toMatchObject({ ok: true, status: 200, data: { refund_id: refund.data!.refund_id } });
    expect(await salesOf(invoiceId)).toMatchObject([{ status: 'chargeback' }]);

    const missing = await sdk().trackRefund({ invoiceId: unique('never') });
    expect(missing).toMatchObject({ ok: false, status: 404, attempts: 1, error: { code: 'not_found', message: 'Sale not found for transaction_id' } });
  });

  it('a wrong key is a 401 result, not retried; a key marked for rotation surfaces the warnings', async () => {
    const wrong = await new Svc({ apiKey: 'aff_not_a_key', baseUrl }).trackRefund({ invoiceId: 'x' });
    expect(wrong).toMatchObject({ ok: false, status: 401, attempts: 1, error: { code: 'unauthorized', message: 'Invalid API token' } });

    const marked = await createTestProgram(app, db);
    const deadline = new Date(Date.now() + 7 * 86_400_000);
    await markKeyForRotation(db, marked.programId, deadline);
    const refund = await new Svc({ apiKey: marked.apiKey, baseUrl }).trackRefund({ invoiceId: unique('never') });
    expect(refund).toMatchObject({ ok: false, status: 404 });
    expect(refund.warnings).toEqual([
      {
        code: 'api_key_rotation_required',
        message: expect.any(String),
        hint: expect.any(String),
        rotate_by: deadline.toISOString(),
        docs_url: `${DOCS_BASE_URL}/errors#api_key_rotation_required`,
      },
    ]);
  });

  it('trackRenewal turns an invoice.paid renewal into one recurring sale, and skips what is no renewal without a request', async () => {
    const customerExternalId = await customer();
    const invoiceId = unique('in');
    const event = {
      type: 'invoice.paid',
      data: {
        object: {
          id: invoiceId,
          billing_reason: 'subscription_cycle',
          amount_paid: 2_500,
          currency: 'eur',
          parent: { type: 'subscription_details', subscription_details: { subscription: 'sub_new', metadata: { svc_customer_key: customerExternalId } } },
        },
      },
    };
    const renewal = await sdk().trackRenewal(event);
    expect(renewal).toMatchObject({ skipped: false, ok: true, status: 200, data: { transaction_id: invoiceId, amount_cents: 2_500, currency: 'EUR' } });
    expect(await salesOf(invoiceId)).toEqual([
      { amount_cents: 2_500, currency: 'EUR', is_recurring: true, sale_type: 'subscription', subscription_id: 'sub_new', status: 'paid' },
    ]);

    const sent = requestsTo(SALE_PATH);
    const first = { ...event.data.object, id: unique('in'), billing_reason: 'subscription_create' };
    expect(await sdk().trackRenewal(first)).toEqual({ skipped: true, reason: 'not_subscription_cycle', message: 'billing_reason is subscription_create, not subscription_cycle' });
    expect(await sdk().trackRenewal({ ...event.data.object, id: unique('in'), amount_paid: 0 })).toMatchObject({ skipped: true, reason: 'nothing_paid' });
    expect(requestsTo(SALE_PATH)).toBe(sent);
  });

  it('a 429 from the real limit is retried after Retry-After within the budget; one that does not fit the budget is returned at once', async () => {
    // The service's clock jumps (forward only) to the start of a rate-limit window, so the 120
    // requests of the sale/refund budget all land in it, however slow this machine is.
    const windowStart = Math.floor(clock() / MINUTE) * MINUTE + MINUTE;
    clockOffset += windowStart + 100 - clock();
    const customerExternalId = await customer();
    for (let batch = 0; batch < 6; batch += 1) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          app.inject({ method: 'POST', url: '/api/v1/track/refund', headers: { authorization: `Bearer ${program.apiKey}` }, payload: { transaction_id: unique('none') } }),
        ),
      );
      expect(answers.map((a) => a.statusCode)).toEqual(Array(20).fill(404));
    }
    // 50 seconds into the window: the limit holds for about 10 more seconds.
    expect(clock()).toBeLessThan(windowStart + 50_000);
    clockOffset += windowStart + 50_000 - clock();

    const tight: RetryNotice[] = [];
    const tooLong = unique('in');
    const refused = await sdk({ retry: { budgetMs: 3_000 }, onRetry: (n) => tight.push(n) }).trackSale({ customerExternalId, amount: 1_000, invoiceId: tooLong });
    expect(refused).toMatchObject({ ok: false, status: 429, attempts: 1, error: { code: 'rate_limited' } });
    expect(refused.error!.retry_after_seconds).toBeGreaterThan(3);
    expect(tight).toEqual([]);
    expect(await salesOf(tooLong)).toEqual([]);

    const notices: RetryNotice[] = [];
    const invoiceId = unique('in');
    const sent = requestsTo(SALE_PATH);
    const sale = await sdk({ retry: { budgetMs: 45_000 }, onRetry: (n) => notices.push(n) }).trackSale({ customerExternalId, amount: 1_000, invoiceId });
    expect(sale).toMatchObject({ ok: true, status: 200, attempts: 2, data: { transaction_id: invoiceId } });
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({ call: 'trackSale', attempt: 1, status: 429, error: { code: 'rate_limited' } });
    // Retry-After was honoured: the wait was at least what the service asked for.
    expect(notices[0]!.delayMs).toBeGreaterThanOrEqual(notices[0]!.error.retry_after_seconds! * 1000);
    expect(requestsTo(SALE_PATH) - sent).toBe(2);
    expect(await salesOf(invoiceId)).toHaveLength(1);
  }, 120_000);

  it('a 500 from a database that is down is retried with backoff once it is back, and the sale is recorded exactly once', async () => {
    const customerExternalId = await customer();
    const invoiceId = unique('in');
    const notices: RetryNotice[] = [];
    let restoring: Promise<void> | undefined;
    const svc = sdk({
      retry: { budgetMs: 60_000, maxAttempts: 8, baseDelayMs: 1_000 },
      onRetry: (n) => {
        notices.push(n);
        restoring ??= faulty.restore();
      },
    });
    const sent = requestsTo(SALE_PATH);
    await faulty.stop();
    const sale = await svc.trackSale({ customerExternalId, amount: 7_700, invoiceId });
    await restoring;
    expect(notices[0]).toMatchObject({ call: 'trackSale', attempt: 1, status: 500, error: { code: 'internal_error', message: 'Sale tracking failed' } });
    expect(sale).toMatchObject({ ok: true, status: 200, data: { transaction_id: invoiceId, amount_cents: 7_700 } });
    expect(sale.attempts).toBe(notices.length + 1);
    expect(requestsTo(SALE_PATH) - sent).toBe(sale.attempts);
    expect(await salesOf(invoiceId)).toHaveLength(1);
  }, 120_000);

  it('the packed package, installed on its own, records a sale and refuses a bad amount', async () => {
    const { dir, files } = await packedPackage();
    expect(files).toEqual(
      ['README.md', 'client.d.ts', 'client.js', 'index.d.ts', 'index.js', 'package.json', 'renewals.d.ts', 'renewals.js', 'transport.d.ts', 'transport.js', 'types.d.ts', 'types.js', 'wire.d.ts', 'wire.js']
        .map((f) => `package/${f.endsWith('.md') || f === 'package.json' ? '' : 'dist/'}${f}`)
        .sort(),
    );
    const customerExternalId = await customer();
    const sale = async (invoiceId: string, amount: number) =>
      JSON.parse((await run('node', ['sale.mjs', baseUrl, program.apiKey, customerExternalId, invoiceId, String(amount)], { cwd: dir })).stdout);
    const invoiceId = unique('in');
    expect(await sale(invoiceId, 1_234)).toMatchObject({ ok: true, status: 200, attempts: 1, data: { transaction_id: invoiceId, amount_cents: 1_234 } });
    const refused = unique('in');
    expect(await sale(refused, -1)).toMatchObject({ ok: false, status: 0, attempts: 0, error: { code: 'invalid_amount' } });
    expect(await salesOf(invoiceId)).toHaveLength(1);
    expect(await salesOf(refused)).toEqual([]);
  }, 120_000);

  it('a network error resolves to status 0 after bounded retries, never a throw; a service that comes up is reached by the retry', async () => {
    const port = await freePort();
    const nowhere = new Svc({ apiKey: program.apiKey, baseUrl: `http://127.0.0.1:${port}`, retry: { baseDelayMs: 100, maxAttempts: 3 } });
    const lost = await nowhere.trackSale({ customerExternalId: 'anyone', amount: 100, invoiceId: unique('in') });
    expect(lost).toMatchObject({ ok: false, status: 0, data: null, requestId: null, attempts: 3, error: { code: 'network_error' } });
    expect(lost.error!.message).toContain(`Could not reach http://127.0.0.1:${port}/api/v1/track/sale: ECONNREFUSED`);

    const customerExternalId = await customer();
    const invoiceId = unique('in');
    const second = await buildApp({
      db,
      rateLimits: unlimitedRateLimits(),
      logger: createLogger('silent'),
      trustProxy: ['127.0.0.1'],
      tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
    });
    try {
      let listening: Promise<string> | undefined;
      const notices: RetryNotice[] = [];
      const svc = new Svc({
        apiKey: program.apiKey,
        baseUrl: `http://127.0.0.1:${port}`,
        retry: { baseDelayMs: 500, maxAttempts: 8 },
        onRetry: (n) => {
          notices.push(n);
          listening ??= second.listen({ host: '127.0.0.1', port });
        },
      });
      const sale = await svc.trackSale({ customerExternalId, amount: 300, invoiceId });
      await listening;
      expect(notices[0]).toMatchObject({ attempt: 1, status: 0, error: { code: 'network_error' } });
      expect(sale).toMatchObject({ ok: true, status: 200, data: { transaction_id: invoiceId } });
      expect(await salesOf(invoiceId)).toHaveLength(1);
    } finally {
      await second.close();
    }
  });
});

describe('server SDK retry rules', () => {
  it('retries 429, 5xx other than 501, timeouts and network errors; never a 4xx nor a sale whose commission failed', () => {
    expect(retryable('trackSale', 429, { message: 'x' })).toBe(true);
    expect(retryable('trackLead', 500, { message: 'Lead tracking failed' })).toBe(true);
    expect(retryable('trackRefund', 503, { message: 'x' })).toBe(true);
    expect(retryable('trackSale', 0, { code: 'network_error', message: 'x' })).toBe(true);
    expect(retryable('trackSale', 0, { code: 'timeout', message: 'x' })).toBe(true);
    expect(retryable('trackSale', 0, { code: 'invalid_amount', message: 'x' })).toBe(false);
    expect(retryable('trackSale', 500, { code: 'internal_error', message: 'Failed to create commission' })).toBe(false);
    expect(retryable('trackSale', 501, { message: 'x' })).toBe(false);
    for (const status of [400, 401, 403, 404, 409, 410, 422]) expect(retryable('trackSale', status, { message: 'x' })).toBe(false);
  });

  it('backs off exponentially with jitter up to the cap, and waits at least what the service asks', () => {
    const at = (attempt: number, r: number) => delayMs(attempt, DEFAULT_RETRY, undefined, () => r);
    expect([1, 2, 3, 4, 5, 6].map((n) => at(n, 0))).toEqual([250, 500, 1_000, 2_000, 4_000, 4_000]);
    expect([1, 2, 3, 4, 5, 6].map((n) => at(n, 1))).toEqual([500, 1_000, 2_000, 4_000, 8_000, 8_000]);
    expect(delayMs(1, DEFAULT_RETRY, 7_000, () => 0)).toBe(7_000);
    expect(delayMs(1, DEFAULT_RETRY, 7_000, () => 1)).toBe(7_700);
    expect(delayMs(1, DEFAULT_RETRY, 30_000, () => 1)).toBe(31_000);
  });

  it('an attempt that gets no answer times out, is retried, and never outlasts the call budget', async () => {
    // A real server that accepts connections and never answers.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const baseUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      const notices: RetryNotice[] = [];
      const quick = new Svc({ apiKey: 'aff_x', baseUrl, timeoutMs: 300, retry: { maxAttempts: 2, baseDelayMs: 100 }, onRetry: (n) => notices.push(n) });
      const lost = await quick.trackRefund({ invoiceId: 'in_1' });
      expect(lost).toMatchObject({ ok: false, status: 0, attempts: 2, error: { code: 'timeout', message: `No answer from ${baseUrl}/api/v1/track/refund within 300 ms` } });
      expect(notices).toMatchObject([{ call: 'trackRefund', attempt: 1, status: 0, error: { code: 'timeout' } }]);

      // A 10 s attempt timeout under a 1 s budget: the attempt is cut to what the budget leaves.
      const bounded = await new Svc({ apiKey: 'aff_x', baseUrl, timeoutMs: 10_000, retry: { budgetMs: 1_000 } }).trackRefund({ invoiceId: 'in_1' });
      expect(bounded).toMatchObject({ ok: false, status: 0, attempts: 1, error: { code: 'timeout' } });
      expect(Number(/within (\d+) ms/.exec(bounded.error!.message)![1])).toBeLessThanOrEqual(1_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('refuses options that cannot work at construction', () => {
    expect(() => new Svc({ apiKey: '', baseUrl: 'https://track.example.com' })).toThrow(/apiKey is required/);
    expect(() => new Svc({ apiKey: 'aff_x', baseUrl: 'track.example.com' })).toThrow(/baseUrl must be an absolute URL/);
  });
});

describe('renewalSale: the invoice.paid rules', () => {
  const renewal = (overrides: Record<string, unknown> = {}) => ({
    object: 'invoice',
    id: 'in_1',
    billing_reason: 'subscription_cycle',
    amount_paid: 1_999,
    currency: 'usd',
    ...overrides,
  });
  const expected = { customerExternalId: 'user-1', amount: 1_999, invoiceId: 'in_1', currency: 'usd', isRecurring: true, saleType: 'subscription' };

  it('reads the newer layout under invoice.parent.subscription_details', () => {
    const invoice = renewal({ parent: { type: 'subscription_details', subscription_details: { subscription: 'sub_1', metadata: { svc_customer_key: 'user-1' } } } });
    expect(renewalSale(invoice)).toEqual({ track: true, sale: { ...expected, subscriptionId: 'sub_1' } });
    // The event wrapper is accepted as well as the invoice.
    expect(renewalSale({ type: 'invoice.paid', data: { object: invoice } })).toEqual({ track: true, sale: { ...expected, subscriptionId: 'sub_1' } });
  });

  it('falls back to the legacy top-level subscription_details and subscription', () => {
    const invoice = renewal({ subscription: 'sub_old', subscription_details: { metadata: { svc_customer_key: 'user-1' } } });
    expect(renewalSale(invoice)).toEqual({ track: true, sale: { ...expected, subscriptionId: 'sub_old' } });
    // An expanded subscription object gives its id.
    expect(renewalSale(renewal({ subscription: { id: 'sub_obj' }, subscription_details: { metadata: { svc_customer_key: 'user-1' } } }))).toEqual({
      track: true,
      sale: { ...expected, subscriptionId: 'sub_obj' },
    });
  });

  it('prefers the newer location when both are present, and takes each field from the first place that has it', () => {
    const both = renewal({
      parent: { subscription_details: { subscription: 'sub_new', metadata: { svc_customer_key: 'user-new' } } },
      subscription: 'sub_old',
      subscription_details: { metadata: { svc_customer_key: 'user-old' } },
    });
    expect(renewalSale(both)).toEqual({ track: true, sale: { ...expected, customerExternalId: 'user-new', subscriptionId: 'sub_new' } });
    const mixed = renewal({ parent: { subscription_details: { subscription: 'sub_new', metadata: {} } }, subscription_details: { metadata: { svc_customer_key: 'user-old' } } });
    expect(renewalSale(mixed)).toEqual({ track: true, sale: { ...expected, customerExternalId: 'user-old', subscriptionId: 'sub_new' } });
  });

  it('skips, with a reason, what is not a paid renewal', () => {
    const meta = { parent: { subscription_details: { subscription: 'sub_1', metadata: { svc_customer_key: 'user-1' } } } };
    const reasonOf = (value: unknown) => {
      const decision = renewalSale(value);
      return decision.track ? 'track' : decision.reason;
    };
    expect(reasonOf(renewal({ ...meta, billing_reason: 'subscription_create' }))).toBe('not_subscription_cycle');
    expect(reasonOf(renewal({ ...meta, billing_reason: 'manual' }))).toBe('not_subscription_cycle');
    expect(reasonOf(renewal({ ...meta, amount_paid: 0 }))).toBe('nothing_paid');
    expect(reasonOf(renewal({ ...meta, amount_paid: -50 }))).toBe('nothing_paid');
    expect(reasonOf(renewal({ ...meta, amount_paid: undefined }))).toBe('nothing_paid');
    expect(reasonOf(renewal({ ...meta, id: undefined }))).toBe('missing_invoice_id');
    expect(reasonOf(renewal({ subscription: 'sub_1' }))).toBe('missing_customer_key');
    expect(reasonOf({ type: 'invoice.payment_failed', data: { object: renewal(meta) } })).toBe('not_invoice_paid');
    expect(reasonOf(null)).toBe('not_invoice_paid');
    expect(reasonOf(renewal(meta))).toBe('track');
  });
});
