import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { buildTestApp, createTestProgram, freshIp, tableCounts, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

const DAY = 86_400_000;
let txn = 0;
const nextTxn = () => `txn-${Date.now()}-${++txn}`;

const q = {
  customer: sql('t.sale_customer', `SELECT status, first_purchase_date, signup_date FROM customers WHERE id = $1`),
  commissions: sql('t.sale_commissions', `SELECT amount_cents, status, currency FROM commissions WHERE sale_id = $1`),
  fees: sql('t.sale_fees', `SELECT amount_cents, status FROM platform_fees WHERE sale_id = $1`),
  sale: sql('t.sale_row', `SELECT status, test, amount_cents, currency, occurred_at FROM sale_events WHERE id = $1`),
  events: sql('t.sale_events', `SELECT event_type FROM outbox WHERE aggregate_key = $1 ORDER BY id`),
  backdateClick: sql('t.backdate_click', `UPDATE clicks SET created_at = now() - make_interval(secs => $2) WHERE click_id = $1`),
};

describe.each(databaseKinds())('POST /api/v1/track/sale and /refund on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let percent: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    percent = await createTestProgram(app, t.db, { commission_type: 'percent', commission_rate: 10 });
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const post = (url: string, payload: unknown, key: string | undefined, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url,
      headers: { 'x-forwarded-for': freshIp(), ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}), ...headers },
      payload: payload as object,
    });
  const sale = (p: TestProgram, payload: unknown) => post('/api/v1/track/sale', payload, p.apiKey);
  const refund = (p: TestProgram, payload: unknown) => post('/api/v1/track/refund', payload, p.apiKey);

  const newClick = async (p: TestProgram) => {
    const res = await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${p.affCode}` }, undefined);
    return res.json().click_id as string;
  };
  /** A click and a server-mode lead: a customer ready to buy. */
  const newLead = async (p: TestProgram) => {
    const clickId = await newClick(p);
    const customerKey = `cust-${nextTxn()}`;
    const res = await post('/api/v1/track/lead', { click_id: clickId, customer_key: customerKey }, p.apiKey);
    expect(res.statusCode).toBe(200);
    return { clickId, customerKey, customerId: res.json().data.customer_id as number };
  };

  it('a first payment converts the lead and creates a commission and a platform fee', async () => {
    const c = await newLead(percent);
    const transactionId = nextTxn();
    const res = await sale(percent, { transaction_id: transactionId, amount_cents: 12_345, customer_key: c.customerKey, currency: 'eur' });
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(data).toMatchObject({
      transaction_id: transactionId, program_id: percent.programId, customer_id: c.customerId, amount_cents: 12_345,
      currency: 'EUR', status: 'paid', conversion: true, test_mode: false,
      commission: { partner_id: percent.partnerId, amount_cents: 1_235, currency: 'EUR' },
    });
    expect(await t.db.many(q.commissions, [data.sale_id])).toEqual([{ amount_cents: 1_235, status: 'pending', currency: 'EUR' }]);
    expect(await t.db.many(q.fees, [data.sale_id])).toEqual([{ amount_cents: 247, status: 'charged' }]);
    const customer = await t.db.one<{ status: string; first_purchase_date: Date }>(q.customer, [c.customerId]);
    expect(customer!.status).toBe('conversion');
    expect(customer!.first_purchase_date).toBeInstanceOf(Date);
    expect((await t.db.many<{ event_type: string }>(q.events, [`sale:${data.sale_id}`])).map((e) => e.event_type)).toEqual([
      'sale.recorded', 'commission.created', 'platform_fee.created',
    ]);
  });

  it('one-off commission types pay only the converting payment; recurring types pay every payment', async () => {
    const cases: [Record<string, unknown>, [number, number | null]][] = [
      [{ commission_type: 'percent', commission_rate: 10 }, [1_000, null]],
      [{ commission_type: 'fixed', commission_rate: 7.5 }, [750, null]],
      [{ commission_type: 'recurring_percent', commission_rate: 25 }, [2_500, 2_500]],
      [{ commission_type: 'recurring_fixed', commission_rate: 3 }, [300, 300]],
    ];
    for (const [settings, [first, second]] of cases) {
      const p = await createTestProgram(app, t.db, settings);
      const c = await newLead(p);
      const a = await sale(p, { transaction_id: nextTxn(), amount_cents: 10_000, customer_key: c.customerKey });
      const b = await sale(p, { transaction_id: nextTxn(), amount_cents: 10_000, customer_key: c.customerKey, is_recurring: true });
      expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
      expect(a.json().data.commission?.amount_cents ?? null).toBe(first);
      expect(b.json().data.commission?.amount_cents ?? null).toBe(second);
      expect(b.json().data.conversion).toBe(false);
    }
  });

  it('a duplicate transaction_id is 409 duplicate_transaction with the sale id; across programs with no details', async () => {
    const c = await newLead(percent);
    const transactionId = nextTxn();
    const first = await sale(percent, { transaction_id: transactionId, amount_cents: 500, customer_key: c.customerKey });
    const elsewhere = await createTestProgram(app, t.db);
    const elsewhereLead = await newLead(elsewhere);
    const before = await tableCounts(t.db);
    const again = await sale(percent, { transaction_id: transactionId, amount_cents: 500, customer_key: c.customerKey });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({
      data: null,
      error: {
        status: 409, name: 'ConflictError', message: 'Duplicate transaction_id. This sale has already been recorded.',
        details: { sale_id: first.json().data.sale_id }, code: 'duplicate_transaction',
      },
    });
    // Unique globally among real sales (the spec's guard); another program's sale is not named (issue 15).
    const cross = await sale(elsewhere, { transaction_id: transactionId, amount_cents: 1, customer_key: elsewhereLead.customerKey });
    expect(cross.statusCode).toBe(409);
    expect(cross.json().error).toMatchObject({ code: 'duplicate_transaction', details: {} });
    expect(await tableCounts(t.db)).toEqual(before);
    // Test sales have their own namespace: tests/ingest/tracking/transaction-namespaces.test.ts.
  });

  it.each([
    [{ amount_cents: 100, customer_key: 'k' }, 400, 'transaction_id is required and must be a string', 'invalid_request'],
    [{ transaction_id: 5, amount_cents: 100, customer_key: 'k' }, 400, 'transaction_id is required and must be a string', 'invalid_request'],
    [{ transaction_id: 'a', customer_key: 'k' }, 400, 'amount_cents is required and must be a positive integer', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: 0, customer_key: 'k' }, 400, 'amount_cents is required and must be a positive integer', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: -5, customer_key: 'k' }, 400, 'amount_cents is required and must be a positive integer', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: 9.99, customer_key: 'k' }, 400, 'amount_cents is required and must be a positive integer', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: '100', customer_key: 'k' }, 400, 'amount_cents is required and must be a positive integer', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: 1, customer_key: 'k', occurred_at: '2026-02-30T10:00:00Z' }, 400, 'occurred_at must be an ISO 8601 time within the last 30 days', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: 1, customer_key: 'k', occurred_at: '2020-01-01T10:00:00Z' }, 400, 'occurred_at must be an ISO 8601 time within the last 30 days', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: 1, customer_key: 'k', occurred_at: new Date(Date.now() + 10 * 60_000).toISOString() }, 400, 'occurred_at must be an ISO 8601 time within the last 30 days', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: 1, customer_key: 'k', occurred_at: '2026-11-20T10:00:00' }, 400, 'occurred_at must be an ISO 8601 time within the last 30 days', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: 1, customer_key: 'k', provider: 'acme' }, 400, 'provider must be one of: processor, paddle, paypal, chargebee, braintree, adyen, manual, other', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: 1, customer_key: 'k', provider_payment_id: '' }, 400, 'provider_payment_id must be a string of 1 to 255 characters', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: 1, customer_key: 'k', provider_payment_id: 'x'.repeat(256) }, 400, 'provider_payment_id must be a string of 1 to 255 characters', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: 1, customer_key: 'k', livemode: 'yes' }, 400, 'livemode must be a boolean', 'invalid_request'],
    [{ transaction_id: 'a', amount_cents: 1, customer_key: 'k', currency: 'GBP' }, 422, 'currency GBP is not supported', 'unsupported_currency'],
    [{ transaction_id: 'a', amount_cents: 1 }, 400, 'Customer not found. Provide customer_key or click_id.', 'no_attribution'],
    [{ transaction_id: 'a', amount_cents: 1, customer_key: 'nobody' }, 400, 'Customer not found. Provide customer_key or click_id.', 'no_attribution'],
    [{ transaction_id: 'a', amount_cents: 1, click_id: 'no-such-click' }, 400, 'Customer not found. Provide customer_key or click_id.', 'no_attribution'],
  ])('refuses %j with %i "%s" (%s) and writes nothing', async (payload, status, message, code) => {
    const before = await tableCounts(t.db);
    const res = await sale(percent, payload);
    expect(res.statusCode).toBe(status);
    expect(res.json().data).toBeNull();
    expect(res.json().error).toMatchObject({ status, message, code, details: {} });
    expect(await tableCounts(t.db)).toEqual(before);
  });

  it('401 messages and code: missing header, empty token, unknown token (refund answers Invalid API token to an empty one)', async () => {
    const body = { transaction_id: 'x', amount_cents: 1, customer_key: 'k' };
    const cases: [string | undefined, string, string][] = [
      [undefined, 'Missing or malformed Authorization header. Expected: Bearer <token>', 'Missing or malformed Authorization header. Expected: Bearer <token>'],
      ['Token abc', 'Missing or malformed Authorization header. Expected: Bearer <token>', 'Missing or malformed Authorization header. Expected: Bearer <token>'],
      ['Bearer    ', 'Missing API token', 'Invalid API token'],
      // What `Authorization: Bearer ` becomes over real HTTP, which strips trailing whitespace.
      ['Bearer', 'Missing API token', 'Invalid API token'],
      ['Bearer aff_wrong', 'Invalid API token', 'Invalid API token'],
    ];
    for (const [header, saleMessage, refundMessage] of cases) {
      const headers: Record<string, string> = header === undefined ? {} : { authorization: header };
      const s = await post('/api/v1/track/sale', body, undefined, headers);
      const r = await post('/api/v1/track/refund', { transaction_id: 'x' }, undefined, headers);
      expect([s.statusCode, r.statusCode]).toEqual([401, 401]);
      expect(s.json().error).toEqual({ status: 401, name: 'UnauthorizedError', message: saleMessage, details: {}, code: 'unauthorized' });
      expect(r.json().error).toEqual({ status: 401, name: 'UnauthorizedError', message: refundMessage, details: {}, code: 'unauthorized' });
    }
  });

  it('a customer of another program has no attribution here', async () => {
    const elsewhere = await createTestProgram(app, t.db, {}, percent.workspace);
    const c = await newLead(elsewhere);
    const byClick = await sale(percent, { transaction_id: nextTxn(), amount_cents: 100, click_id: c.clickId });
    const byKey = await sale(percent, { transaction_id: nextTxn(), amount_cents: 100, customer_key: c.customerKey });
    for (const res of [byClick, byKey]) {
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ message: 'No affiliate attribution found for this customer in this program', code: 'no_attribution' });
    }
  });

  it('without a partner-program record the sale is refused and nothing is written', async () => {
    const p = await createTestProgram(app, t.db);
    const c = await newLead(p);
    await t.db.many(sql('t.drop_junction', `DELETE FROM partner_programs WHERE program_id = $1`), [p.programId]);
    const before = await tableCounts(t.db);
    const res = await sale(p, { transaction_id: nextTxn(), amount_cents: 100, customer_key: c.customerKey });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toBe('No partner-program relationship found for this customer');
    expect(await tableCounts(t.db)).toEqual(before);
  });

  it('partnerId required: the sale is stored without a commission, and a resend gives 409', async () => {
    const p = await createTestProgram(app, t.db);
    const c = await newLead(p);
    await t.db.many(sql('t.drop_partner', `DELETE FROM partners WHERE id = $1`), [p.partnerId]);
    const transactionId = nextTxn();
    const res = await sale(p, { transaction_id: transactionId, amount_cents: 100, customer_key: c.customerKey });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ message: 'partnerId required to create commission' });
    const stored = await t.db.many<{ id: string }>(sql('t.stored_sale', `SELECT id FROM sale_events WHERE transaction_id = $1`), [transactionId]);
    expect(stored).toHaveLength(1);
    expect(await t.db.many(q.commissions, [stored[0]!.id])).toEqual([]);
    const again = await sale(p, { transaction_id: transactionId, amount_cents: 100, customer_key: c.customerKey });
    expect(again.statusCode).toBe(409);
  });

  it('the attribution window is checked per payment until one converts, then never again', async () => {
    const p = await createTestProgram(app, t.db, { attribution_window_days: 2 });
    // No signup: the click is measured against each payment's time.
    const clickId = await newClick(p);
    await t.db.many(q.backdateClick, [clickId, 5 * DAY / 1000]);
    const before = await tableCounts(t.db);
    const late = await sale(p, { transaction_id: nextTxn(), amount_cents: 100, click_id: clickId });
    expect(late.statusCode).toBe(400);
    expect(late.json().error.code).toBe('no_attribution');
    expect(await tableCounts(t.db)).toEqual(before);
    // A payment that happened within two days of the click is attributed.
    const inWindow = new Date(Date.now() - 3.5 * DAY).toISOString();
    const ok = await sale(p, { transaction_id: nextTxn(), amount_cents: 100, click_id: clickId, occurred_at: inWindow });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().data.conversion).toBe(true);
    // After the conversion, later payments are not rechecked.
    const later = await sale(p, { transaction_id: nextTxn(), amount_cents: 100, click_id: clickId });
    expect(later.statusCode).toBe(200);
    const customer = await t.db.one<{ status: string; signup_date: Date | null }>(q.customer, [ok.json().data.customer_id]);
    expect(customer).toMatchObject({ status: 'conversion', signup_date: null });
  });

  it('with a signup, the window is measured from the click to the signup', async () => {
    const p = await createTestProgram(app, t.db, { attribution_window_days: 1 });
    const clickId = await newClick(p);
    await t.db.many(q.backdateClick, [clickId, 2 * DAY / 1000]);
    const lead = await post('/api/v1/track/lead', { click_id: clickId, customer_key: 'late-signup' }, p.apiKey);
    expect(lead.statusCode).toBe(200);
    const res = await sale(p, { transaction_id: nextTxn(), amount_cents: 100, customer_key: 'late-signup' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('no_attribution');
  });

  it('test mode with only additional_data: a flagged sale, a tracking-log entry, no commission, no fee', async () => {
    const res = await sale(percent, { additional_data: { test_mode: true } });
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(data.test_mode).toBe(true);
    expect(data.commission).toBeNull();
    expect(data.transaction_id).toMatch(/^test_txn_\d+$/);
    expect(await t.db.one(q.sale, [data.sale_id])).toMatchObject({ test: true, status: 'paid' });
    expect(await t.db.many(q.commissions, [data.sale_id])).toEqual([]);
    expect(await t.db.many(q.fees, [data.sale_id])).toEqual([]);
    const logs = await t.db.many(sql('t.sale_logs', `SELECT 1 FROM tracking_logs WHERE event_type = 'sale' AND entity_id = $1`), [data.sale_id]);
    expect(logs).toHaveLength(1);
  });

  it('a commission that cannot be written: 500 Failed to create commission, the sale stays and its transaction_id is consumed', async () => {
    const p = await createTestProgram(app, t.db);
    const c = await newLead(p);
    await t.db.many(sql('t.fail_fn', `CREATE OR REPLACE FUNCTION test_fail_commission() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN RAISE EXCEPTION 'commission store unavailable'; END $$`));
    await t.db.many(sql('t.fail_trigger', `CREATE TRIGGER test_fail_commission BEFORE INSERT ON commissions FOR EACH ROW
      WHEN (NEW.program_id = ${p.programId}) EXECUTE FUNCTION test_fail_commission()`));
    try {
      const transactionId = nextTxn();
      const res = await sale(p, { transaction_id: transactionId, amount_cents: 100, customer_key: c.customerKey });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({
        data: null,
        error: { status: 500, name: 'InternalServerError', message: 'Failed to create commission', details: {}, code: 'internal_error' },
      });
      expect(res.headers['x-request-id']).toBeTruthy();
      const again = await sale(p, { transaction_id: transactionId, amount_cents: 100, customer_key: c.customerKey });
      expect(again.statusCode).toBe(409);
    } finally {
      await t.db.many(sql('t.fail_drop', `DROP TRIGGER test_fail_commission ON commissions`));
    }
  });

  it('refund: the sale is refunded, commission and fee reversed; a repeat is idempotent; chargeback works the same', async () => {
    const c = await newLead(percent);
    const transactionId = nextTxn();
    const s = await sale(percent, { transaction_id: transactionId, amount_cents: 10_000, customer_key: c.customerKey });
    const saleId = s.json().data.sale_id;
    const res = await refund(percent, { transaction_id: transactionId, reason: 'refund', refund_reason: 'customer asked' });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ sale_id: saleId, transaction_id: transactionId, reason: 'refund', sale_status: 'refunded', commission_reversed: true });
    expect(await t.db.one(q.sale, [saleId])).toMatchObject({ status: 'refunded' });
    expect(await t.db.many(q.commissions, [saleId])).toMatchObject([{ status: 'reversed' }]);
    expect(await t.db.many(q.fees, [saleId])).toMatchObject([{ status: 'reversed' }]);
    const before = await tableCounts(t.db);
    const again = await refund(percent, { transaction_id: transactionId, reason: 'chargeback' });
    expect(again.statusCode).toBe(200);
    expect(again.json().data.refund_id).toBe(res.json().data.refund_id);
    expect(await tableCounts(t.db)).toEqual(before);

    const c2 = await newLead(percent);
    const t2 = nextTxn();
    await sale(percent, { transaction_id: t2, amount_cents: 10_000, customer_key: c2.customerKey });
    const cb = await refund(percent, { transaction_id: t2, reason: 'chargeback' });
    expect(cb.json().data).toMatchObject({ reason: 'chargeback', sale_status: 'chargeback' });
  });

  it.each([
    [{}, 400, 'transaction_id is required', 'invalid_request'],
    [{ transaction_id: '' }, 400, 'transaction_id is required', 'invalid_request'],
    [{ transaction_id: 'x', reason: 'oops' }, 400, 'reason must be refund or chargeback', 'invalid_request'],
    [{ transaction_id: 'never-recorded' }, 404, 'Sale not found for transaction_id', 'not_found'],
  ])('refund refuses %j with %i "%s"', async (payload, status, message, code) => {
    const before = await tableCounts(t.db);
    const res = await refund(percent, payload);
    expect(res.statusCode).toBe(status);
    expect(res.json().error).toMatchObject({ status, message, code });
    expect(await tableCounts(t.db)).toEqual(before);
  });

  it("refund cannot touch another program's sale", async () => {
    const c = await newLead(percent);
    const transactionId = nextTxn();
    await sale(percent, { transaction_id: transactionId, amount_cents: 100, customer_key: c.customerKey });
    const elsewhere = await createTestProgram(app, t.db);
    const res = await refund(elsewhere, { transaction_id: transactionId });
    expect(res.statusCode).toBe(404);
  });
});
