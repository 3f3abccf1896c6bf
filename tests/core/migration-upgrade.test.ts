/**
 * Upgrading a database the service is writing to, from the schema as the numbered migrations
 * defined it before the SQL functions moved to schemas/postgres/functions/ (issue 28). The fixture
 * tests/fixtures/postgres-0024/ is those migration files verbatim. One connection (pool size 1):
 * the writes before and after the upgrade run on the same backend, whose PL/pgSQL functions are
 * already compiled; without a recompile its next call fails with "type of parameter ... does not
 * match that when preparing the plan" when a migration changed the column types they read.
 */
import type { FastifyInstance } from 'fastify';
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { migrate, POSTGRES_MIGRATIONS_DIR } from '../../core/migrate.js';
import { buildTestApp, createTestProgram, freshIp, type TestProgram } from '../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';
import { auditLogForOldSchema, FIXTURE_0024, fixtureBefore } from '../support/schema-fixture.js';
import { accountId, charge, checkoutSession, connectAccount, deliver, dispute, event, id, partlyRefundedProcessorSale, webhookSecret } from '../support/processor.js';

const FUNCTIONS_DIR = join(POSTGRES_MIGRATIONS_DIR, 'functions');
/** The numbered migrations added after the fixture (0025 on): an upgraded database applies them too. */
const laterMigrations = async () => (await readdir(POSTGRES_MIGRATIONS_DIR)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f) && f > '0025').sort();

const q = {
  functions: sql('test.upgrade_schema_functions', `SELECT name, checksum FROM schema_functions ORDER BY name`),
  sale: sql(
    'test.upgrade_sale',
    `SELECT s.status, s.refunded_cents::int AS refunded, c.status AS commission_status
       FROM sale_events s LEFT JOIN commissions c ON c.sale_id = s.id WHERE s.transaction_id = $1 AND NOT s.test`,
  ),
  partials: sql('test.upgrade_partials', `SELECT count(*)::int AS n FROM partial_refunds`),
  // 0025 wrote the ledger of the commissions already there: each one's entries sum to what it is worth now.
  ledger: sql(
    'test.upgrade_ledger',
    `SELECT count(*)::int AS commissions,
            count(*) FILTER (WHERE (SELECT COALESCE(sum(e.amount_minor), 0) FROM ledger_entries e WHERE e.commission_id = c.id)
                                   <> CASE WHEN c.status = 'reversed' THEN 0 ELSE c.amount_cents END)::int AS wrong,
            (SELECT count(*) FROM ledger_entries)::int AS entries,
            (SELECT count(*) FROM outbox WHERE event_type = 'ledger_entry.recorded')::int AS events
       FROM commissions c`,
  ),
};

/** The tracking and payment calls of one program, as a test's client makes them. */
function client(app: FastifyInstance, p: TestProgram) {
  const post = (url: string, payload: object) =>
    app.inject({ method: 'POST', url, headers: { 'x-forwarded-for': freshIp(), authorization: `Bearer ${p.apiKey}` }, payload });
  const txn = () => `upgrade-${randomBytes(4).toString('hex')}`;
  const click = async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/track/click',
      headers: { 'x-forwarded-for': freshIp() },
      payload: { affiliate_url: `https://shop.test.example/?aff=${p.affCode}` },
    });
    expect(res.statusCode).toBe(200);
    return res.json().click_id as string;
  };
  const paidCustomer = async () => {
    const customerKey = `up-${randomBytes(4).toString('hex')}`;
    expect((await post('/api/v1/track/lead', { click_id: await click(), customer_key: customerKey })).statusCode).toBe(200);
    const sales = [txn(), txn()];
    for (const transactionId of sales) {
      const sale = await post('/api/v1/track/sale', { transaction_id: transactionId, amount_cents: 1000, customer_key: customerKey, currency: 'USD' });
      expect(sale.statusCode).toBe(200);
    }
    return { customerKey, sales };
  };
  return { post, txn, click, paidCustomer };
}

describe.each(databaseKinds())('upgrading a database built by the numbered migrations up to 0024, on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let p: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind, 1, FIXTURE_0024);
    await auditLogForOldSchema.create(t.db);
    app = await buildTestApp(t.db);
    p = await createTestProgram(app, t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const ok = async (evt: object, o: Parameters<typeof deliver>[2] = {}) => {
    const res = await deliver(app, evt, o);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as { outcome: string; reason: string | null };
  };
  const sale = (transactionId: string) => t.db.one<{ status: string; refunded: number; commission_status: string | null }>(q.sale, [transactionId]);

  it('applies the numbered migrations added since (0025 on) and every function file, and the old data keeps working on the same connection', { timeout: 120_000 }, async () => {
    const c = client(app, p);
    // Data written by the functions as the numbered migrations defined them.
    const before = await c.paidCustomer();
    expect((await c.post('/api/v1/track/refund', { transaction_id: before.sales[0] })).statusCode).toBe(200);
    const partly = await partlyRefundedProcessorSale(app, p.programId, await c.click());
    const acct = accountId();
    const secret = webhookSecret();
    await connectAccount(app, p, acct, secret);
    const accountPayment = id('pi');
    const onAccount = { to: acct, secret };
    const session = checkoutSession({ payment_intent: accountPayment, metadata: { svc_click_id: await c.click() } });
    expect(await ok(event('checkout.session.completed', session, { account: acct }), onAccount)).toMatchObject({ outcome: 'recorded' });
    // A refund whose payment is not known yet waits: applied by the payment after the upgrade.
    const laterPayment = id('pi');
    expect(await ok(event('charge.refunded', charge({ payment_intent: laterPayment })))).toMatchObject({ outcome: 'waiting' });

    const files = (await readdir(FUNCTIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();
    await auditLogForOldSchema.drop(t.db);
    expect(await migrate(t.db)).toEqual([...(await laterMigrations()), ...files.map((f) => `functions/${f}`)]);
    const ledger = (await t.db.one<{ commissions: number; wrong: number; entries: number; events: number }>(q.ledger))!;
    expect(ledger.commissions).toBeGreaterThanOrEqual(3);
    expect(ledger).toMatchObject({ wrong: 0, events: ledger.entries });
    const checksums = await Promise.all(
      files.map(async (f) => ({ name: f.slice(0, -'.sql'.length), checksum: createHash('sha256').update(await readFile(join(FUNCTIONS_DIR, f))).digest('hex') })),
    );
    expect(await t.db.many(q.functions)).toEqual(checksums);
    expect(await migrate(t.db)).toEqual([]);

    // A refund of an old sale, a new sale of an old customer, and a new customer.
    const refund = await c.post('/api/v1/track/refund', { transaction_id: before.sales[1], reason: 'chargeback' });
    expect(refund.statusCode).toBe(200);
    expect(refund.json().data).toMatchObject({ sale_status: 'chargeback', commission_reversed: false });
    expect((await c.post('/api/v1/track/refund', { transaction_id: before.sales[0] })).json().data).toMatchObject({ sale_status: 'refunded' });
    const newSale = await c.post('/api/v1/track/sale', { transaction_id: c.txn(), amount_cents: 500, customer_key: before.customerKey, currency: 'USD' });
    expect(newSale.statusCode).toBe(200);
    expect(newSale.json().data).toMatchObject({ status: 'paid', conversion: false });
    const after = await c.paidCustomer();
    expect((await c.post('/api/v1/track/refund', { transaction_id: after.sales[0] })).json().data).toMatchObject({
      sale_status: 'refunded',
      commission_reversed: true,
    });

    // The processor: more of the old partial refund, then the rest of it; a dispute on the account.
    expect(await ok(event('charge.refunded', charge({ payment_intent: partly.transactionId, amount: 5_000, amount_refunded: 3_000 })))).toMatchObject({ outcome: 'recorded' });
    expect(await sale(partly.transactionId)).toMatchObject({ status: 'paid', refunded: 3_000, commission_status: 'pending' });
    expect(await t.db.one(q.partials)).toEqual({ n: 3 });
    expect(await ok(event('charge.refunded', charge({ payment_intent: partly.transactionId, amount: 5_000, amount_refunded: 5_000 })))).toMatchObject({ outcome: 'recorded' });
    expect(await sale(partly.transactionId)).toMatchObject({ status: 'refunded', commission_status: 'reversed' });
    expect(await ok(event('charge.dispute.created', dispute({ charge: id('ch'), payment_intent: accountPayment }), { account: acct }), onAccount)).toMatchObject({
      outcome: 'recorded',
    });
    expect(await sale(accountPayment)).toMatchObject({ status: 'chargeback', commission_status: 'reversed' });
    // The payment the old refund waited for: recorded, and the refund applied with it.
    const meta = { program_id: String(p.programId), svc_click_id: await c.click() };
    expect(await ok(event('checkout.session.completed', checkoutSession({ payment_intent: laterPayment, metadata: meta })))).toMatchObject({ outcome: 'recorded' });
    expect(await sale(laterPayment)).toMatchObject({ status: 'refunded', commission_status: 'reversed' });
  });
});

describe.each(databaseKinds())('a migration that changes column types, on %s', (kind) => {
  /** The migration that changes the column types, and the schema just before it. */
  const TYPE_CHANGE = '0023_tracking_checks_as_domains.sql';
  let t: TestDatabase;
  let app: FastifyInstance;
  let p: TestProgram;
  let oldSchema: string;

  beforeAll(async () => {
    oldSchema = await fixtureBefore(TYPE_CHANGE);
    t = await createTestDatabase(kind, 1, oldSchema);
    await auditLogForOldSchema.create(t.db);
    app = await buildTestApp(t.db);
    p = await createTestProgram(app, t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await rm(oldSchema, { recursive: true, force: true });
  });

  it('leads, sales and refunds on a connection that wrote before the migration still answer after it', async () => {
    const c = client(app, p);
    const before = await c.paidCustomer();
    const firstRefund = await c.post('/api/v1/track/refund', { transaction_id: before.sales[0] });
    expect(firstRefund.statusCode).toBe(200);

    // The type change, then every function applied again (their text did not change: the catalog row does).
    await auditLogForOldSchema.drop(t.db);
    const applied = await migrate(t.db);
    expect(applied.filter((f) => !f.startsWith('functions/'))).toEqual([TYPE_CHANGE, '0024_processor_account_owners.sql', ...(await laterMigrations())]);
    expect(applied).toContain('functions/record_refund.sql');

    const refund = await c.post('/api/v1/track/refund', { transaction_id: before.sales[1], reason: 'chargeback' });
    expect(refund.statusCode).toBe(200);
    expect(refund.json().data).toMatchObject({ sale_status: 'chargeback', commission_reversed: false });
    const sale = await c.post('/api/v1/track/sale', { transaction_id: c.txn(), amount_cents: 500, customer_key: before.customerKey, currency: 'USD' });
    expect(sale.statusCode).toBe(200);
    expect(sale.json().data).toMatchObject({ status: 'paid', conversion: false });
    const after = await c.paidCustomer();
    const lastRefund = await c.post('/api/v1/track/refund', { transaction_id: after.sales[0] });
    expect(lastRefund.statusCode).toBe(200);
    expect(lastRefund.json().data).toMatchObject({ sale_status: 'refunded', commission_reversed: true });
  });
});
