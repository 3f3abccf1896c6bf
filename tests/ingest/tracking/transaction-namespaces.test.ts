/**
 * Issue 15, point 1: transaction_id is unique globally among real sales (the spec's guard), but a
 * test sale never blocks a real one, and a 409 caused by another program's sale names nothing of
 * it; the refused program sees the collision in readiness.
 */
import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createTestProgram, freshIp, tableCounts, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

const txn = (label: string) => `order-${label}-${randomBytes(4).toString('hex')}`;

describe.each(databaseKinds())('transaction_id namespaces on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let a: TestProgram;
  let b: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    // Two brands of two workspaces.
    a = await createTestProgram(app, t.db);
    b = await createTestProgram(app, t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const post = (url: string, payload: object, key?: string) =>
    app.inject({ method: 'POST', url, headers: { 'x-forwarded-for': freshIp(), ...(key ? { authorization: `Bearer ${key}` } : {}) }, payload });
  const customer = async (p: TestProgram) => {
    const click = await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${p.affCode}` });
    const customerKey = `cust-${randomBytes(4).toString('hex')}`;
    const lead = await post('/api/v1/track/lead', { click_id: click.json().click_id, customer_key: customerKey }, p.apiKey);
    expect(lead.statusCode).toBe(200);
    return customerKey;
  };
  const realSale = async (p: TestProgram, transactionId: string) =>
    post('/api/v1/track/sale', { transaction_id: transactionId, amount_cents: 4_900, customer_key: await customer(p) }, p.apiKey);
  const testSale = (p: TestProgram, transactionId: string) =>
    post('/api/v1/track/sale', { transaction_id: transactionId, additional_data: { test_mode: true } }, p.apiKey);
  const readiness = async (p: TestProgram) =>
    (await app.inject({ method: 'GET', url: '/api/v1/programs/me/readiness', headers: { authorization: `Bearer ${p.apiKey}` } })).json().data;

  it("another program's test sale does not block a real sale", async () => {
    const id = txn('1001');
    expect((await testSale(a, id)).statusCode).toBe(200);
    const real = await realSale(b, id);
    expect(real.statusCode).toBe(200);
    expect(real.json().data).toMatchObject({ transaction_id: id, program_id: b.programId, test_mode: false, commission: { partner_id: b.partnerId } });
    // Nor does the same program's own test sale (the CLI's chain records test sales too).
    const own = txn('own');
    expect((await testSale(b, own)).statusCode).toBe(200);
    expect((await realSale(b, own)).statusCode).toBe(200);
  });

  it("a real sale colliding with another program's answers 409 naming nothing of it, writes no sale, and the refused program sees it", async () => {
    const id = txn('2002');
    const first = await realSale(a, id);
    expect(first.statusCode).toBe(200);
    const aSaleId = first.json().data.sale_id as string;
    const customerKey = await customer(b);
    const before = await tableCounts(t.db);
    const refused = await post('/api/v1/track/sale', { transaction_id: id, amount_cents: 4_900, customer_key: customerKey }, b.apiKey);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual({
      data: null,
      error: { status: 409, name: 'ConflictError', message: 'Duplicate transaction_id. This sale has already been recorded.', details: {}, code: 'duplicate_transaction' },
    });
    expect(refused.body).not.toContain(aSaleId);
    expect(refused.body).not.toContain(String(a.programId));
    expect(await tableCounts(t.db)).toEqual(before);
    // A second attempt is counted; the other program sees nothing.
    await post('/api/v1/track/sale', { transaction_id: id, amount_cents: 4_900, customer_key: customerKey }, b.apiKey);
    expect((await readiness(b)).transaction_id_collisions).toEqual([{ transaction_id: id, attempts: 2, last_seen_at: expect.any(String) }]);
    expect((await readiness(a)).transaction_id_collisions).toEqual([]);
    // The program's own duplicate still gets its sale_id, as the spec says.
    const again = await realSale(a, id);
    expect(again.statusCode).toBe(409);
    expect(again.json().error.details).toEqual({ sale_id: aSaleId });
  });

  it('test sales are unique within their program only', async () => {
    const id = txn('3003');
    const first = await testSale(a, id);
    expect(first.statusCode).toBe(200);
    const again = await testSale(a, id);
    expect(again.statusCode).toBe(409);
    expect(again.json().error.details).toEqual({ sale_id: first.json().data.sale_id });
    expect((await testSale(b, id)).statusCode).toBe(200);
    expect((await readiness(b)).transaction_id_collisions.map((c: { transaction_id: string }) => c.transaction_id)).not.toContain(id);
  });

  it('a refund finds the real sale when the program also has a test sale under the same id', async () => {
    const id = txn('4004');
    const real = await realSale(a, id);
    expect((await testSale(a, id)).statusCode).toBe(200);
    const refund = await post('/api/v1/track/refund', { transaction_id: id }, a.apiKey);
    expect(refund.statusCode).toBe(200);
    expect(refund.json().data.sale_id).toBe(real.json().data.sale_id);
  });
});
