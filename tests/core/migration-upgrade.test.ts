/**
 * Upgrading a database the service is writing to: a connection that ran the tracking functions
 * before a migration changed their tables' column types (0023: CHECK constraints to domains) must
 * keep working after it. PL/pgSQL keeps each function's compiled plans per connection, typed as the
 * columns were; without the migration's recompile, the next refund on that connection failed with
 * "type of parameter ... does not match that when preparing the plan".
 */
import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, POSTGRES_MIGRATIONS_DIR } from '../../core/migrate.js';
import { buildTestApp, createTestProgram, freshIp, type TestProgram } from '../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';

/** The migration that changes the column types, and the schema just before it. */
const TYPE_CHANGE = '0023_tracking_checks_as_domains.sql';

async function migrationsBefore(file: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ats-migrations-'));
  for (const name of (await readdir(POSTGRES_MIGRATIONS_DIR)).filter((n) => n.endsWith('.sql') && n < file)) {
    await copyFile(join(POSTGRES_MIGRATIONS_DIR, name), join(dir, name));
  }
  return dir;
}

describe.each(databaseKinds())('a migration that changes column types, on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let p: TestProgram;
  let oldSchema: string;

  beforeAll(async () => {
    oldSchema = await migrationsBefore(TYPE_CHANGE);
    // One connection: the writes before and after the migration run on the same backend.
    t = await createTestDatabase(kind, 1, oldSchema);
    app = await buildTestApp(t.db);
    p = await createTestProgram(app, t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await rm(oldSchema, { recursive: true, force: true });
  });

  const post = (url: string, payload: object) =>
    app.inject({ method: 'POST', url, headers: { 'x-forwarded-for': freshIp(), authorization: `Bearer ${p.apiKey}` }, payload });
  const txn = () => `upgrade-${randomBytes(4).toString('hex')}`;
  async function paidCustomer() {
    const click = await app.inject({
      method: 'POST',
      url: '/api/v1/track/click',
      headers: { 'x-forwarded-for': freshIp() },
      payload: { affiliate_url: `https://shop.test.example/?aff=${p.affCode}` },
    });
    const customerKey = `up-${randomBytes(4).toString('hex')}`;
    expect((await post('/api/v1/track/lead', { click_id: click.json().click_id, customer_key: customerKey })).statusCode).toBe(200);
    const sales = [txn(), txn()];
    for (const transactionId of sales) {
      const sale = await post('/api/v1/track/sale', { transaction_id: transactionId, amount_cents: 1000, customer_key: customerKey, currency: 'USD' });
      expect(sale.statusCode).toBe(200);
    }
    return { customerKey, sales };
  }

  it('leads, sales and refunds on a connection that wrote before the migration still answer after it', async () => {
    const before = await paidCustomer();
    const firstRefund = await post('/api/v1/track/refund', { transaction_id: before.sales[0] });
    expect(firstRefund.statusCode).toBe(200);

    expect(await migrate(t.db)).toContain(TYPE_CHANGE);

    const refund = await post('/api/v1/track/refund', { transaction_id: before.sales[1], reason: 'chargeback' });
    expect(refund.statusCode).toBe(200);
    expect(refund.json().data).toMatchObject({ sale_status: 'chargeback', commission_reversed: false });
    const sale = await post('/api/v1/track/sale', { transaction_id: txn(), amount_cents: 500, customer_key: before.customerKey, currency: 'USD' });
    expect(sale.statusCode).toBe(200);
    expect(sale.json().data).toMatchObject({ status: 'paid', conversion: false });
    const after = await paidCustomer();
    const lastRefund = await post('/api/v1/track/refund', { transaction_id: after.sales[0] });
    expect(lastRefund.statusCode).toBe(200);
    expect(lastRefund.json().data).toMatchObject({ sale_status: 'refunded', commission_reversed: true });
  });
});
