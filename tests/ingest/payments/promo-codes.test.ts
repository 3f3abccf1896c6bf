/**
 * Issue 31, point 4: a processor payment carrying a partner's promo code or its processor promotion
 * id attributes a customer with no attribution to that partner; an existing attribution wins. Signed
 * webhooks, on PGlite and Postgres, where the processor puts them: a checkout session's
 * discounts[].promotion_code (an id, or expanded with its code) and
 * total_details.breakdown.discounts[].discount.promotion_code; an invoice's legacy discount (one
 * Discount object) and its discounts[] (expanded; the newer layout's bare di_ ids name no code).
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { buildTestApp, createTestProgram, freshIp, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { checkoutSession, deliver, event, id, invoiceLegacy, invoiceNewer } from '../../support/processor.js';

const q = {
  sale: sql(
    't.promo_processor_sale',
    `SELECT s.partner_id::int AS partner_id, s.customer_id::int AS customer_id, (SELECT c.partner_id::int FROM commissions c WHERE c.sale_id = s.id) AS commission_partner
       FROM sale_events s WHERE s.transaction_id = $1`,
  ),
  customers: sql('t.promo_processor_customers', `SELECT count(*)::int AS n FROM customers WHERE program_id = $1`),
  customer: sql('t.promo_processor_customer', `SELECT customer_key, email, click_id FROM customers WHERE id = $1`),
};

describe.each(databaseKinds())('promo codes on processor payments, on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let p: TestProgram;
  let codePartner: number;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    p = await createTestProgram(app, t.db, { commission_type: 'recurring_percent', commission_rate: 10 });
    const auth = { authorization: `Bearer ${p.workspace.ownerToken}` };
    const second = await app.inject({ method: 'POST', url: `/api/tracking/programs/${p.programId}/partners`, headers: auth, payload: { name: 'Coupon partner' } });
    codePartner = second.json().data.partner_id;
    for (const payload of [{ code: 'SPRING', processor_promotion_id: 'promo_1Spring' }, { code: 'Legacy20', processor_promotion_id: 'promo_1Legacy' }]) {
      const res = await app.inject({ method: 'POST', url: `/api/tracking/programs/${p.programId}/partners/${codePartner}/promo-codes`, headers: auth, payload });
      expect(res.statusCode).toBe(200);
    }
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const md = (m: Record<string, string> = {}) => ({ program_id: String(p.programId), ...m });
  const ok = async (evt: object) => {
    const res = await deliver(app, evt);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as { outcome: string; reason: string | null };
  };
  const saleOf = (txn: string) => t.db.one<{ partner_id: number | null; customer_id: number | null; commission_partner: number | null }>(q.sale, [txn]);
  const customers = async () => (await t.db.one<{ n: number }>(q.customers, [p.programId]))!.n;

  it("checkout session: discounts[].promotion_code (an id) attributes a new customer, with the payment's key and email", async () => {
    const session = { ...checkoutSession({ metadata: md({ svc_customer_key: 'cust-spring' }), customer_details: { email: 'buyer@shop.example' } }), discounts: [{ coupon: 'co_1', promotion_code: 'promo_1Spring' }] };
    expect(await ok(event('checkout.session.completed', session))).toMatchObject({ outcome: 'recorded' });
    const sale = await saleOf(session.payment_intent as string);
    expect(sale).toMatchObject({ partner_id: codePartner, commission_partner: codePartner });
    expect(await t.db.one(q.customer, [sale!.customer_id])).toEqual({ customer_key: 'cust-spring', email: 'buyer@shop.example', click_id: null });
  });

  it('checkout session: the expanded total_details.breakdown discount names the code, in any letter case', async () => {
    const session = {
      ...checkoutSession({ metadata: md() }),
      total_details: { amount_discount: 500, breakdown: { discounts: [{ amount: 500, discount: { id: 'di_1', promotion_code: { id: 'promo_unknown', code: 'spring' } } }] } },
    };
    await ok(event('checkout.session.completed', session));
    expect(await saleOf(session.payment_intent as string)).toMatchObject({ partner_id: codePartner });
  });

  it('a subscription: the first invoice by its promotion id, its renewals found by the processor customer, never a second customer', async () => {
    const customer = id('cus');
    const first = invoiceNewer({ customer, billing_reason: 'subscription_create', metadata: md() });
    const before = await customers();
    await ok(event('invoice.payment_succeeded', { ...first, discounts: [{ id: 'di_2', object: 'discount', promotion_code: 'promo_1Legacy' }] }));
    expect(await saleOf(first.id)).toMatchObject({ partner_id: codePartner, commission_partner: codePartner });
    // The newer layout as sent: bare discount ids; the customer is found by the processor customer.
    const renewal = invoiceNewer({ customer, metadata: md() });
    await ok(event('invoice.payment_succeeded', { ...renewal, discounts: ['di_2'] }));
    expect(await saleOf(renewal.id)).toMatchObject({ partner_id: codePartner, commission_partner: codePartner });
    const plain = invoiceNewer({ customer, metadata: md() });
    await ok(event('invoice.payment_succeeded', plain));
    expect(await saleOf(plain.id)).toMatchObject({ partner_id: codePartner });
    expect(await customers()).toBe(before + 1);
  });

  it("the legacy invoice layout: invoice.discount's promotion code, expanded with its code", async () => {
    const legacy = { ...invoiceLegacy({ metadata: md({ svc_customer_key: 'legacy-key' }) }), discount: { id: 'di_3', object: 'discount', promotion_code: { id: 'promo_other', code: 'LEGACY20' } } };
    await ok(event('invoice.payment_succeeded', legacy));
    expect(await saleOf(legacy.id)).toMatchObject({ partner_id: codePartner });
  });

  it('an existing attribution wins: a click of the program keeps its partner', async () => {
    const clickId = (await app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { 'x-forwarded-for': freshIp() }, payload: { affiliate_url: `https://shop.test.example/?aff=${p.affCode}` } })).json().click_id;
    const session = { ...checkoutSession({ metadata: md({ svc_click_id: clickId }) }), discounts: [{ coupon: 'co_1', promotion_code: 'promo_1Spring' }] };
    await ok(event('checkout.session.completed', session));
    expect(await saleOf(session.payment_intent as string)).toMatchObject({ partner_id: p.partnerId, commission_partner: p.partnerId });
  });

  it('an unknown promotion id attributes nothing: the payment is skipped and no customer is made', async () => {
    const before = await customers();
    const session = { ...checkoutSession({ metadata: md() }), discounts: [{ coupon: 'co_1', promotion_code: 'promo_nobody' }] };
    const result = await ok(event('checkout.session.completed', session));
    expect(result.outcome).toBe('skipped');
    expect(await saleOf(session.payment_intent as string)).toBeUndefined();
    expect(await customers()).toBe(before);
  });
});
