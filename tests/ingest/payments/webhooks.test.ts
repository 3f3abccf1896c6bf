import type { FastifyInstance } from 'fastify';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { ensureDemo } from '../../../domain/demo.js';
import { buildTestApp, createTestProgram, freshIp, PROCESSOR_SECRETS, tableCounts, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { account, charge, checkoutSession, deliver, dispute, event, id, invoiceLegacy, invoiceNewer, signed, webhookSecret } from '../../support/processor.js';

const q = {
  sale: sql(
    't.processor_sale',
    `SELECT s.id, s.program_id, s.customer_id, s.partner_id, s.amount_cents, s.currency, s.status, s.test, s.is_recurring, s.sale_type,
            s.subscription_id, s.provider, (SELECT amount_cents FROM commissions c WHERE c.sale_id = s.id) AS commission,
            (SELECT status FROM commissions c WHERE c.sale_id = s.id) AS commission_status
       FROM sale_events s WHERE s.transaction_id = $1`,
  ),
  customer: sql('t.processor_customer', `SELECT status, provisional, customer_key, email FROM customers WHERE click_id = $1`),
  processorCounts: sql(
    't.processor_counts',
    `SELECT (SELECT count(*) FROM processor_events) AS events, (SELECT count(*) FROM processor_payment_refs) AS refs,
            (SELECT count(*) FROM processor_customers) AS customers, (SELECT count(*) FROM processor_accounts) AS accounts,
            (SELECT count(*) FROM processor_connections) AS connections`,
  ),
  outbox: sql('t.processor_outbox', `SELECT event_type FROM outbox WHERE aggregate_key = $1 ORDER BY id`),
  partial: sql(
    't.processor_partial',
    `SELECT s.status, s.refunded_cents::int AS refunded, c.amount_cents::int AS commission, c.reversed_cents::int AS commission_reversed,
            c.status AS commission_status, f.amount_cents::int AS fee, f.reversed_cents::int AS fee_reversed, f.status AS fee_status,
            (SELECT count(*)::int FROM partial_refunds r WHERE r.sale_id = s.id) AS partials
       FROM sale_events s JOIN commissions c ON c.sale_id = s.id JOIN platform_fees f ON f.sale_id = s.id
      WHERE s.transaction_id = $1`,
  ),
};

describe.each(databaseKinds())('POST /api/v1/webhooks/processor on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let percent: TestProgram;
  let recurring: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    percent = await createTestProgram(app, t.db, { commission_type: 'percent', commission_rate: 10 });
    recurring = await createTestProgram(app, t.db, { commission_type: 'recurring_percent', commission_rate: 20 });
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const post = (url: string, payload: object, key?: string) =>
    app.inject({ method: 'POST', url, headers: { 'x-forwarded-for': freshIp(), ...(key ? { authorization: `Bearer ${key}` } : {}) }, payload });
  const newClick = async (p: TestProgram) =>
    (await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${p.affCode}` })).json().click_id as string;
  const newLead = async (p: TestProgram, email?: string) => {
    const clickId = await newClick(p);
    const customerKey = id('user');
    const res = await post('/api/v1/track/lead', { click_id: clickId, customer_key: customerKey, ...(email ? { email } : {}) }, p.apiKey);
    expect(res.statusCode).toBe(200);
    return { clickId, customerKey };
  };
  const sale = async (transactionId: string) =>
    t.db.one<{ id: string; program_id: number; customer_id: number | null; partner_id: number | null; amount_cents: number; currency: string; status: string; test: boolean; is_recurring: boolean; sale_type: string | null; subscription_id: string | null; provider: string; commission: number | null; commission_status: string | null }>(
      q.sale,
      [transactionId],
    );
  const counts = async () => ({ ...(await tableCounts(t.db)), ...(await t.db.one<Record<string, number>>(q.processorCounts))! });
  const ok = async (evt: object, o: Parameters<typeof deliver>[2] = {}) => {
    const res = await deliver(app, evt, o);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as { received: true; event_id: string; outcome: string; reason: string | null };
  };
  /** The counts after one more processor event row and nothing else. */
  const oneMoreEvent = (before: Awaited<ReturnType<typeof counts>>) => ({ ...before, events: Number((before as Record<string, unknown>).events) + 1 });
  const md = (p: TestProgram, m: { svc_click_id?: string; svc_customer_key?: string } = {}) => ({ program_id: String(p.programId), ...m });

  describe('signature', () => {
    it('refuses a missing, malformed, wrong, tampered or stale signature with 400 and writes nothing', async () => {
      const c = await newLead(percent);
      const evt = event('checkout.session.completed', checkoutSession({ metadata: md(percent, { svc_click_id: c.clickId }) }));
      const payload = JSON.stringify(evt);
      const nowS = Math.floor(Date.now() / 1000);
      const before = await counts();
      const tampered = signed(payload.replace('5000', '9000'));
      const attempts = [
        { header: null },
        { header: 'nonsense' },
        { header: `t=${nowS}` },
        { header: `t=${nowS},v1=${'0'.repeat(64)}` },
        { header: tampered },
        { secret: 'whsec_not_ours' },
        { timestamp: nowS - 400 },
        { timestamp: nowS + 400 },
      ];
      for (const a of attempts) {
        const res = await deliver(app, evt, a);
        expect(res.statusCode, JSON.stringify(a)).toBe(400);
        expect(res.json()).toEqual({
          data: null,
          error: { status: 400, name: 'BadRequestError', message: 'Invalid processor signature', details: {} },
        });
      }
      expect(await counts()).toEqual(before);
      // The body is signed as bytes: the same event re-serialized differently is refused too.
      const spaced = JSON.stringify(evt, null, 2);
      const res = await app.inject({
        method: 'POST', url: '/api/v1/webhooks/processor',
        headers: { 'content-type': 'application/json', 'stripe-signature': signed(payload) }, payload: spaced,
      });
      expect(res.statusCode).toBe(400);
      expect(await counts()).toEqual(before);
    });

    it('accepts any configured secret (rotation), several v1 values, and a timestamp within 300 s either way, not 301', async () => {
      expect((await deliver(app, event('ping.unknown', { id: id('x') }), { secret: PROCESSOR_SECRETS[1] })).statusCode).toBe(200);
      // The service's clock stopped at a known second: the bounds exactly.
      const nowS = 1_800_000_000;
      const fixed = await buildTestApp(t.db, undefined, () => nowS * 1000 + 999);
      try {
        for (const [timestamp, status] of [[nowS - 300, 200], [nowS + 300, 200], [nowS - 301, 400], [nowS + 301, 400]] as const) {
          expect((await deliver(fixed, event('ping.unknown', { id: id('x') }), { timestamp })).statusCode, String(timestamp - nowS)).toBe(status);
        }
      } finally {
        await fixed.close();
      }
      const evt = event('ping.unknown', { id: id('x') });
      const payload = JSON.stringify(evt);
      const good = signed(payload);
      const header = `${good.split(',')[0]},v1=${'a'.repeat(64)},${good.split(',')[1]}`;
      expect((await deliver(app, evt, { header })).statusCode).toBe(200);
    });

    it('a signed body that is not an event is 400 and writes nothing', async () => {
      const before = await counts();
      const payload = '{"hello":"world"}';
      const res = await app.inject({
        method: 'POST', url: '/api/v1/webhooks/processor',
        headers: { 'content-type': 'application/json', 'stripe-signature': signed(payload) }, payload,
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.message).toBe('The event body is not a processor event');
      expect(await counts()).toEqual(before);
    });
  });

  describe('checkout.session.completed', () => {
    it('records a one-off sale with the payment intent as transaction_id; a repeat is a no-op; /track/sale with that id is 409', async () => {
      const c = await newLead(percent);
      const session = checkoutSession({ amount_total: 12_345, currency: 'eur', metadata: md(percent, { svc_click_id: c.clickId, svc_customer_key: c.customerKey }) });
      const evt = event('checkout.session.completed', session);
      expect(await ok(evt)).toMatchObject({ outcome: 'recorded', reason: null });
      const row = (await sale(session.payment_intent as string))!;
      expect(row).toMatchObject({ program_id: percent.programId, partner_id: percent.partnerId, amount_cents: 12_345, currency: 'EUR', status: 'paid', test: false, provider: 'processor', commission: 1_235 });
      expect((await t.db.many<{ event_type: string }>(q.outbox, [`sale:${row.id}`])).map((e) => e.event_type)).toEqual([
        'sale.recorded', 'commission.created', 'platform_fee.created',
      ]);
      const before = await counts();
      expect(await ok(evt)).toMatchObject({ outcome: 'duplicate' });
      const after = await counts();
      expect(after).toEqual(before);
      const res = await post('/api/v1/track/sale', { transaction_id: session.payment_intent, amount_cents: 12_345, customer_key: c.customerKey }, percent.apiKey);
      expect(res.statusCode).toBe(409);
      expect(res.json().error.details.sale_id).toBe(row.id);
    });

    it('a subscription checkout and its first invoice are one payment; renewals in both layouts are recurring sales', async () => {
      const c = await newLead(recurring);
      const meta = md(recurring, { svc_click_id: c.clickId, svc_customer_key: c.customerKey });
      const session = checkoutSession({ mode: 'subscription', amount_total: 10_000, metadata: meta });
      const first = invoiceNewer({ id: session.invoice as string, amount_paid: 10_000, billing_reason: 'subscription_create', subscription: session.subscription as string, metadata: meta });
      expect(await ok(event('invoice.payment_succeeded', first))).toMatchObject({ outcome: 'recorded' });
      expect(await ok(event('checkout.session.completed', session))).toMatchObject({ outcome: 'skipped', reason: 'duplicate_payment' });
      expect(await sale(session.invoice as string)).toMatchObject({ amount_cents: 10_000, is_recurring: false, commission: 2_000, sale_type: 'subscription' });

      const newer = invoiceNewer({ amount_paid: 10_000, subscription: session.subscription as string, metadata: meta });
      const legacy = invoiceLegacy({ amount_paid: 8_000, subscription: session.subscription as string, metadata: meta });
      expect(await ok(event('invoice.payment_succeeded', newer))).toMatchObject({ outcome: 'recorded' });
      expect(await ok(event('invoice.payment_succeeded', legacy))).toMatchObject({ outcome: 'recorded' });
      expect(await sale(newer.id)).toMatchObject({ is_recurring: true, commission: 2_000, subscription_id: session.subscription, partner_id: recurring.partnerId });
      expect(await sale(legacy.id)).toMatchObject({ is_recurring: true, commission: 1_600, subscription_id: session.subscription });
    });

    it('skips zero totals, missing metadata, pending payments and unsupported currencies, each with its reason', async () => {
      const c = await newLead(percent);
      const before = await tableCounts(t.db);
      const cases: [object, string][] = [
        [event('checkout.session.completed', checkoutSession({ amount_total: 0, payment_status: 'no_payment_required', metadata: md(percent, { svc_click_id: c.clickId }) })), 'zero_total'],
        [event('invoice.payment_succeeded', invoiceNewer({ amount_paid: 0, metadata: md(percent, { svc_click_id: c.clickId }) })), 'zero_total'],
        [event('checkout.session.completed', checkoutSession({ metadata: md(percent) })), 'missing_metadata'],
        [event('invoice.payment_succeeded', invoiceLegacy({ metadata: md(percent) })), 'missing_metadata'],
        [event('checkout.session.completed', checkoutSession({ currency: 'gbp', metadata: md(percent, { svc_click_id: c.clickId }) })), 'unsupported_currency'],
        [event('checkout.session.completed', checkoutSession({ metadata: md(percent, { svc_customer_key: 'nobody' }) })), 'no_attribution'],
        [event('checkout.session.completed', checkoutSession({ metadata: { svc_click_id: c.clickId } })), 'program_id_missing'],
        [event('checkout.session.completed', checkoutSession({ metadata: { program_id: '999999999', svc_click_id: c.clickId } })), 'unknown_program'],
        // An account no workspace has connected and verified (issue 27): nobody's events.
        [event('checkout.session.completed', checkoutSession({ metadata: md(percent, { svc_click_id: c.clickId }) }), { account: id('acct') }), 'account_not_verified'],
      ];
      for (const [evt, reason] of cases) expect(await ok(evt)).toMatchObject({ outcome: 'skipped', reason });
      expect(await tableCounts(t.db)).toEqual(before);
    });

    it('an unknown event type is acknowledged and recorded as ignored', async () => {
      expect(await ok(event('customer.created', { id: id('cus'), object: 'customer' }))).toEqual(expect.objectContaining({ outcome: 'ignored', reason: 'unhandled_type' }));
    });

    it('a delayed payment is recorded when checkout.session.async_payment_succeeded arrives', async () => {
      const c = await newLead(percent);
      const session = checkoutSession({ payment_status: 'unpaid', metadata: md(percent, { svc_click_id: c.clickId }) });
      expect(await ok(event('checkout.session.completed', session))).toMatchObject({ outcome: 'skipped', reason: 'payment_pending' });
      expect(await sale(session.payment_intent as string)).toBeUndefined();
      expect(await ok(event('checkout.session.async_payment_succeeded', { ...session, payment_status: 'paid' }))).toMatchObject({ outcome: 'recorded' });
      expect(await sale(session.payment_intent as string)).toMatchObject({ status: 'paid', commission: 500 });
    });

    it('livemode false records a test sale: flagged, no commission', async () => {
      const c = await newLead(percent);
      const session = checkoutSession({ livemode: false, metadata: md(percent, { svc_click_id: c.clickId }) });
      expect(await ok(event('checkout.session.completed', session, { livemode: false }))).toMatchObject({ outcome: 'recorded' });
      expect(await sale(session.payment_intent as string)).toMatchObject({ test: true, commission: null, customer_id: null });
    });
  });

  describe('partner resolution, in the spec order', () => {
    it('(1) svc_click_id wins over a customer key naming another customer', async () => {
      const a = await newLead(percent);
      const b = await newLead(percent);
      const session = checkoutSession({ metadata: md(percent, { svc_click_id: a.clickId, svc_customer_key: b.customerKey }) });
      await ok(event('checkout.session.completed', session));
      const row = (await sale(session.payment_intent as string))!;
      const customerA = await t.db.one<{ customer_key: string }>(q.customer, [a.clickId]);
      expect(customerA!.customer_key).toBe(a.customerKey);
      expect(await t.db.one(sql('t.customer_of_sale', `SELECT click_id FROM customers WHERE id = $1`), [row.customer_id])).toEqual({ click_id: a.clickId });
    });

    it('(2) the email matched to the lead record', async () => {
      const email = `${id('buyer')}@test.example`;
      const c = await newLead(percent, email);
      const session = checkoutSession({ customer_details: { email: email.toUpperCase() }, metadata: md(percent) });
      expect(await ok(event('checkout.session.completed', session))).toMatchObject({ outcome: 'recorded' });
      const row = (await sale(session.payment_intent as string))!;
      expect(await t.db.one(sql('t.customer_of_sale', `SELECT click_id FROM customers WHERE id = $1`), [row.customer_id])).toEqual({ click_id: c.clickId });
    });

    it('(3) the processor customer id seen on an earlier attributed payment', async () => {
      const c = await newLead(recurring);
      const customer = id('cus');
      await ok(event('checkout.session.completed', checkoutSession({ customer, metadata: md(recurring, { svc_click_id: c.clickId }) })));
      const renewal = invoiceNewer({ customer, metadata: md(recurring) });
      expect(await ok(event('invoice.payment_succeeded', renewal))).toMatchObject({ outcome: 'recorded' });
      expect(await sale(renewal.id)).toMatchObject({ partner_id: recurring.partnerId, commission: 1_000 });
    });

    it('(4) svc_customer_key alone', async () => {
      const c = await newLead(percent);
      const session = checkoutSession({ metadata: md(percent, { svc_customer_key: c.customerKey }) });
      expect(await ok(event('checkout.session.completed', session))).toMatchObject({ outcome: 'recorded' });
      expect(await sale(session.payment_intent as string)).toMatchObject({ partner_id: percent.partnerId, commission: 500 });
    });

    it('settles a provisional lead resolvable from the payment, keeping its customer key', async () => {
      const clickId = await newClick(percent);
      const lead = await post('/api/v1/track/lead', { click_id: clickId });
      expect(lead.json().data.provisional).toBe(true);
      const key = id('user');
      await ok(event('checkout.session.completed', checkoutSession({ metadata: md(percent, { svc_click_id: clickId, svc_customer_key: key }) })));
      expect(await t.db.one(q.customer, [clickId])).toMatchObject({ status: 'conversion', provisional: false, customer_key: key });
    });

    it('a renewal settles a provisional lead too (invoice.payment_succeeded)', async () => {
      const clickId = await newClick(recurring);
      await post('/api/v1/track/lead', { click_id: clickId });
      await ok(event('invoice.payment_succeeded', invoiceNewer({ metadata: md(recurring, { svc_click_id: clickId }) })));
      expect(await t.db.one(q.customer, [clickId])).toMatchObject({ provisional: false });
    });
  });

  describe('refunds and disputes', () => {
    it('charge.refunded reverses the sale and its commission; a repeat is a no-op', async () => {
      const c = await newLead(percent);
      const session = checkoutSession({ metadata: md(percent, { svc_click_id: c.clickId }) });
      await ok(event('checkout.session.completed', session));
      const refund = event('charge.refunded', charge({ payment_intent: session.payment_intent as string }));
      expect(await ok(refund)).toMatchObject({ outcome: 'recorded' });
      expect(await sale(session.payment_intent as string)).toMatchObject({ status: 'refunded', commission_status: 'reversed' });
      expect(await ok(refund)).toMatchObject({ outcome: 'duplicate' });
    });

    it('a refund that arrives before its sale waits and is applied when the sale is recorded', async () => {
      const c = await newLead(percent);
      const session = checkoutSession({ metadata: md(percent, { svc_click_id: c.clickId }) });
      expect(await ok(event('charge.refunded', charge({ payment_intent: session.payment_intent as string })))).toMatchObject({ outcome: 'waiting' });
      expect(await ok(event('checkout.session.completed', session))).toMatchObject({ outcome: 'recorded' });
      expect(await sale(session.payment_intent as string)).toMatchObject({ status: 'refunded', commission_status: 'reversed' });
    });

    it('a legacy renewal refunded through its charge, and a dispute as a chargeback', async () => {
      const c = await newLead(recurring);
      const legacy = invoiceLegacy({ metadata: md(recurring, { svc_click_id: c.clickId }) });
      await ok(event('invoice.payment_succeeded', legacy));
      expect(await ok(event('charge.dispute.created', dispute({ charge: legacy.charge })))).toMatchObject({ outcome: 'recorded' });
      expect(await sale(legacy.id)).toMatchObject({ status: 'chargeback', commission_status: 'reversed' });
    });

    it('a newer-layout renewal is found through invoice_payment.paid', async () => {
      const c = await newLead(recurring);
      const renewal = invoiceNewer({ metadata: md(recurring, { svc_click_id: c.clickId }) });
      const pi = id('pi');
      await ok(event('invoice.payment_succeeded', renewal));
      expect(await ok(event('charge.refunded', charge({ payment_intent: pi })))).toMatchObject({ outcome: 'waiting' });
      await ok(event('invoice_payment.paid', { id: id('inpay'), object: 'invoice_payment', invoice: renewal.id, payment: { type: 'payment_intent', payment_intent: pi } }));
      expect(await sale(renewal.id)).toMatchObject({ status: 'refunded' });
    });

    describe('partial refunds (the charge\'s refunded total, cumulative)', () => {
      const amounts = async (transactionId: string) =>
        (await t.db.one<{ status: string; refunded: number; commission: number; commission_reversed: number; commission_status: string; fee: number; fee_reversed: number; fee_status: string; partials: number }>(q.partial, [transactionId]))!;
      /** A paid processor sale of `amount` cents on the 10 % program (commission 10 %, fee 20 % of it), paid by one charge. */
      const paid = async (amount = 5_000) => {
        const c = await newLead(percent);
        const session = checkoutSession({ amount_total: amount, metadata: md(percent, { svc_click_id: c.clickId }) });
        const pi = session.payment_intent as string;
        const chargeId = id('ch');
        const refund = (refunded: number, created?: number) =>
          event('charge.refunded', charge({ id: chargeId, payment_intent: pi, amount, amount_refunded: refunded }), created === undefined ? {} : { created });
        return { session, pi, refund };
      };

      it('reverses that share of the commission and the fee, rounded half up; the sale stays paid', async () => {
        const p = await paid(4_999);
        await ok(event('checkout.session.completed', p.session));
        // Commission round(4,999 x 10 %) = 500, fee round(500 x 20 %) = 100.
        expect(await amounts(p.pi)).toMatchObject({ status: 'paid', refunded: 0, commission: 500, fee: 100, partials: 0 });
        expect(await ok(p.refund(1_234))).toMatchObject({ outcome: 'recorded', reason: null });
        // Share 1,234 / 4,999: commission 500 x share = 123.42 -> 123 off; fee 100 x share = 24.68 -> 25 off.
        expect(await amounts(p.pi)).toMatchObject({
          status: 'paid', refunded: 1_234, commission: 377, commission_reversed: 123, commission_status: 'pending', fee: 75, fee_reversed: 25, fee_status: 'charged', partials: 1,
        });
        const sale = (await t.db.one<{ id: string }>(q.sale, [p.pi]))!;
        expect((await t.db.many<{ event_type: string }>(q.outbox, [`sale:${sale.id}`])).map((r) => r.event_type)).toEqual([
          'sale.recorded', 'commission.created', 'platform_fee.created', 'sale.partially_refunded', 'commission.adjusted', 'platform_fee.adjusted',
        ]);
      });

      it('successive partial refunds take off only what is new; the total reaching the amount is the full refund', async () => {
        const p = await paid();
        await ok(event('checkout.session.completed', p.session));
        expect(await ok(p.refund(1_000))).toMatchObject({ outcome: 'recorded' });
        expect(await amounts(p.pi)).toMatchObject({ refunded: 1_000, commission: 400, commission_reversed: 100, fee: 80, partials: 1 });
        expect(await ok(p.refund(2_500))).toMatchObject({ outcome: 'recorded' });
        expect(await amounts(p.pi)).toMatchObject({ status: 'paid', refunded: 2_500, commission: 250, commission_reversed: 250, fee: 50, fee_reversed: 50, partials: 2 });
        expect(await ok(p.refund(5_000))).toMatchObject({ outcome: 'recorded' });
        expect(await amounts(p.pi)).toMatchObject({ status: 'refunded', commission_status: 'reversed', fee_status: 'reversed', commission: 250, partials: 2 });
        const sale = (await t.db.one<{ id: string }>(q.sale, [p.pi]))!;
        expect((await t.db.many<{ event_type: string }>(q.outbox, [`sale:${sale.id}`])).map((r) => r.event_type).slice(3)).toEqual([
          'sale.partially_refunded', 'commission.adjusted', 'platform_fee.adjusted',
          'sale.partially_refunded', 'commission.adjusted', 'platform_fee.adjusted',
          'sale.status_changed', 'commission.reversed', 'platform_fee.reversed',
        ]);
        // A partial total arriving after the full refund changes nothing.
        const before = await counts();
        expect(await ok(p.refund(4_000))).toMatchObject({ outcome: 'skipped', reason: 'already_reversed' });
        expect(await counts()).toEqual(oneMoreEvent(before));
      });

      it('the same event delivered twice changes nothing the second time', async () => {
        const p = await paid();
        await ok(event('checkout.session.completed', p.session));
        const refund = p.refund(1_500);
        expect(await ok(refund)).toMatchObject({ outcome: 'recorded' });
        const after = await amounts(p.pi);
        const before = await counts();
        expect(await ok(refund)).toMatchObject({ outcome: 'duplicate' });
        expect(await amounts(p.pi)).toEqual(after);
        expect(await counts()).toEqual(before);
        expect(after).toMatchObject({ refunded: 1_500, commission: 350, partials: 1 });
      });

      it('out of order: a later total first, then an earlier one, ends with the later total applied once', async () => {
        const p = await paid();
        await ok(event('checkout.session.completed', p.session));
        expect(await ok(p.refund(3_000))).toMatchObject({ outcome: 'recorded' });
        const before = await counts();
        expect(await ok(p.refund(1_000))).toMatchObject({ outcome: 'skipped', reason: 'already_reversed' });
        expect(await counts()).toEqual(oneMoreEvent(before));
        // Share 3,000 / 5,000: 300 off the commission of 500, 60 off the fee of 100.
        expect(await amounts(p.pi)).toMatchObject({ status: 'paid', refunded: 3_000, commission: 200, commission_reversed: 300, fee: 40, partials: 1 });
      });

      it('partial refunds that arrive before their sale (the later one first) wait, then apply in the processor\'s order; the brand reads them as recorded', async () => {
        const p = await paid();
        const nowS = Math.floor(Date.now() / 1000);
        const second = p.refund(2_000, nowS);
        const first = p.refund(1_000, nowS - 60);
        expect(await ok(second)).toMatchObject({ outcome: 'waiting' });
        expect(await ok(first)).toMatchObject({ outcome: 'waiting' });
        expect(await ok(event('checkout.session.completed', p.session))).toMatchObject({ outcome: 'recorded' });
        // 1,000 then 1,000 more: 2,000 in all, 200 off the commission, 40 off the fee.
        expect(await amounts(p.pi)).toMatchObject({ status: 'paid', refunded: 2_000, commission: 300, commission_reversed: 200, fee: 60, partials: 2 });
        const res = await app.inject({
          method: 'GET', url: `/api/tracking/programs/${percent.programId}/processor-events?limit=100`, headers: { authorization: `Bearer ${percent.workspace.ownerToken}` },
        });
        const rows = res.json().data as { event_id: string; outcome: string; reason: string | null }[];
        expect(rows.find((r) => r.event_id === first.id)).toMatchObject({ outcome: 'recorded', reason: null });
        expect(rows.find((r) => r.event_id === second.id)).toMatchObject({ outcome: 'recorded', reason: null });
      });

      it('a charge.refunded with nothing refunded is skipped with its reason and writes nothing', async () => {
        const p = await paid();
        await ok(event('checkout.session.completed', p.session));
        const before = await counts();
        expect(await ok(p.refund(0))).toMatchObject({ outcome: 'skipped', reason: 'nothing_refunded' });
        expect(await counts()).toEqual(oneMoreEvent(before));
        expect(await amounts(p.pi)).toMatchObject({ status: 'paid', refunded: 0, commission: 500, partials: 0 });
      });
    });
  });

  // Payment events that arrive together share one statement and one commit (group commit): in
  // the same batch or in concurrent ones, each is applied once.
  describe('deliveries at once', () => {
    it('the same event delivered five times at once: one applies, the others are duplicates', async () => {
      const c = await newLead(percent);
      const session = checkoutSession({ metadata: md(percent, { svc_click_id: c.clickId }) });
      const evt = event('checkout.session.completed', session);
      const results = await Promise.all(Array.from({ length: 5 }, () => ok(evt)));
      expect(results.map((r) => r.outcome).sort()).toEqual(['duplicate', 'duplicate', 'duplicate', 'duplicate', 'recorded']);
      expect(results.filter((r) => r.outcome === 'duplicate').every((r) => r.reason === 'recorded')).toBe(true);
      expect(await t.db.one(sql('t.sales_of_txn', `SELECT count(*)::int AS n FROM sale_events WHERE transaction_id = $1`), [session.payment_intent])).toEqual({ n: 1 });
      expect(await t.db.one(sql('t.deliveries', `SELECT deliveries FROM processor_events WHERE event_id = $1`), [evt.id])).toEqual({ deliveries: 5 });
    });

    it('payments, their refunds and a refund that was waiting, all at once: every refund is applied', async () => {
      const leads = await Promise.all(Array.from({ length: 6 }, () => newLead(percent)));
      const sessions = leads.map((c) => checkoutSession({ metadata: md(percent, { svc_click_id: c.clickId }) }));
      // One refund waits before its payment arrives.
      expect(await ok(event('charge.refunded', charge({ payment_intent: sessions[0]!.payment_intent as string })))).toMatchObject({ outcome: 'waiting' });
      const deliveries = [
        ...sessions.map((s) => event('checkout.session.completed', s)),
        ...sessions.slice(1).map((s) => event('charge.refunded', charge({ payment_intent: s.payment_intent as string }))),
      ];
      const results = await Promise.all(deliveries.map((e) => ok(e)));
      expect(results.slice(0, sessions.length).map((r) => r.outcome)).toEqual(sessions.map(() => 'recorded'));
      for (const s of sessions) expect(await sale(s.payment_intent as string)).toMatchObject({ status: 'refunded', commission_status: 'reversed' });
      const waiting = await t.db.one(sql('t.waiting_count', `SELECT count(*)::int AS n FROM processor_events WHERE outcome = 'waiting' AND waiting_for && $1::text[]`), [sessions.map((s) => s.payment_intent)]);
      expect(waiting).toEqual({ n: 0 });
    });
  });

  describe('connection', () => {
    const owner = (p: TestProgram) => ({ authorization: `Bearer ${p.workspace.ownerToken}` });
    const status = async (p: TestProgram) =>
      (await app.inject({ method: 'GET', url: `/api/tracking/status/${p.programId}`, headers: owner(p) })).json().data;

    it('an owner connects and disconnects; the status endpoint, readiness and account events follow', async () => {
      const p = await createTestProgram(app, t.db, { commission_type: 'percent', commission_rate: 10 });
      const acct = `acct_${id('x').slice(2)}`;
      // The signing secret of the account's own webhook endpoint (issue 27): its events come to its own URL.
      const secret = webhookSecret();
      const own = { to: acct, secret };
      expect((await status(p)).stepStatuses.payments).toBe('pending');
      expect((await status(p)).statistics.payments).toMatchObject({ processorConnectionStatus: 'not_connected', isProcessorConnected: false, processorAccountId: null });

      const before = await counts();
      const connect = { account_id: acct, webhook_secret: secret };
      const member = await app.inject({ method: 'PUT', url: `/api/tracking/programs/${p.programId}/processor-connection`, headers: { authorization: `Bearer ${p.workspace.memberToken}` }, payload: connect });
      expect(member.statusCode).toBe(403);
      expect(member.json().error.message).toBe('Only a workspace owner can connect or disconnect the payment processor');
      const bad = await app.inject({ method: 'PUT', url: `/api/tracking/programs/${p.programId}/processor-connection`, headers: owner(p), payload: { ...connect, account_id: 'cus_123' } });
      expect(bad.statusCode).toBe(400);
      const other = await app.inject({ method: 'PUT', url: `/api/tracking/programs/${percent.programId}/processor-connection`, headers: owner(p), payload: connect });
      expect(other.statusCode).toBe(403);
      expect(await counts()).toEqual(before);

      const put = await app.inject({ method: 'PUT', url: `/api/tracking/programs/${p.programId}/processor-connection`, headers: owner(p), payload: connect });
      expect(put.statusCode).toBe(200);
      expect(put.json().data).toMatchObject({ processorConnectionStatus: 'pending_verification', isProcessorConnected: false, processorAccountId: acct, chargesEnabled: false, methodReady: false });
      expect((await status(p)).stepStatuses.payments).toBe('pending');
      // The account's first signed event on its own URL proves the connection.
      await ok(event('customer.created', { id: id('cus'), object: 'customer' }), own);
      expect((await status(p)).statistics.payments).toMatchObject({ processorConnectionStatus: 'connected', isProcessorConnected: true, methodReady: true });
      const s = await status(p);
      expect(s.stepStatuses.payments).toBe('complete');
      expect(Date.parse(s.statistics.payments.connectionDate)).toBeGreaterThan(Date.now() - 60_000);
      const readiness = await app.inject({ method: 'GET', url: '/api/v1/programs/me/readiness', headers: { authorization: `Bearer ${p.apiKey}` } });
      expect(readiness.json().data.checks.find((c: { name: string }) => c.name === 'payment_tracking')).toMatchObject({ ok: true });

      const nowS = Math.floor(Date.now() / 1000);
      await ok(event('account.updated', account({ id: acct, charges_enabled: true, payouts_enabled: false, details_submitted: true }), { account: acct, created: nowS }), own);
      await ok(event('account.updated', account({ id: acct, charges_enabled: false, payouts_enabled: false, details_submitted: false }), { account: acct, created: nowS - 100 }), own);
      expect((await status(p)).statistics.payments).toMatchObject({ chargesEnabled: true, payoutsEnabled: false, detailsSubmitted: true });

      // Events of the connected account reach its program without program_id in the metadata.
      const c = await newLead(p);
      const session = checkoutSession({ metadata: { svc_click_id: c.clickId } });
      expect(await ok(event('checkout.session.completed', session), own)).toMatchObject({ outcome: 'recorded' });
      // ...and never another program's, whatever the metadata says, on either URL.
      const foreign = checkoutSession({ metadata: md(percent, { svc_click_id: (await newLead(percent)).clickId }) });
      expect(await ok(event('checkout.session.completed', foreign), own)).toMatchObject({ outcome: 'skipped', reason: 'program_not_connected' });
      expect(await ok(event('checkout.session.completed', foreign, { account: acct }))).toMatchObject({ outcome: 'skipped', reason: 'program_not_connected' });

      await ok(event('account.application.deauthorized', { id: 'ca_test', object: 'application', name: 'svc' }, { account: acct, created: nowS + 5 }), own);
      expect((await status(p)).statistics.payments).toMatchObject({ processorConnectionStatus: 'deauthorized', isProcessorConnected: false, methodReady: false });
      expect((await status(p)).stepStatuses.payments).toBe('pending');
      expect(await ok(event('checkout.session.completed', checkoutSession({ metadata: { svc_click_id: c.clickId } })), own)).toMatchObject({ outcome: 'skipped', reason: 'account_not_connected' });

      const del = await app.inject({ method: 'DELETE', url: `/api/tracking/programs/${p.programId}/processor-connection`, headers: owner(p) });
      expect(del.statusCode).toBe(200);
      expect(del.json().data).toMatchObject({ processorConnectionStatus: 'not_connected', processorAccountId: null, connectionDate: null });

      const events = await app.inject({ method: 'GET', url: `/api/tracking/programs/${p.programId}/processor-events?limit=10`, headers: owner(p) });
      expect(events.statusCode).toBe(200);
      expect(events.json().data.map((e: { outcome: string }) => e.outcome)).toContain('recorded');
      const openapi = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
      expect(Object.keys(openapi.paths['/api/tracking/programs/{programId}/processor-connection'])).toEqual(expect.arrayContaining(['get', 'put', 'delete']));
      expect(openapi.paths['/api/v1/webhooks/processor'].post).toBeDefined();
      expect(openapi.paths['/api/v1/webhooks/processor/{accountId}'].post).toBeDefined();
    });

    it('the brand reads every outcome with its delivery count', async () => {
      const p = await createTestProgram(app, t.db, { commission_type: 'percent', commission_rate: 10 });
      const c = await newLead(p);
      const evt = event('checkout.session.completed', checkoutSession({ metadata: md(p, { svc_click_id: c.clickId }) }));
      const skipped = event('checkout.session.completed', checkoutSession({ amount_total: 0, metadata: md(p) }));
      await ok(evt);
      await ok(evt);
      await ok(skipped);
      const res = await app.inject({ method: 'GET', url: `/api/tracking/programs/${p.programId}/processor-events`, headers: owner(p) });
      const rows = res.json().data as { event_id: string; outcome: string; reason: string | null; deliveries: number }[];
      expect(rows.find((r) => r.event_id === evt.id)).toMatchObject({ outcome: 'recorded', deliveries: 2 });
      expect(rows.find((r) => r.event_id === skipped.id)).toMatchObject({ outcome: 'skipped', reason: 'zero_total', deliveries: 1 });
      const stranger = await app.inject({ method: 'GET', url: `/api/tracking/programs/${p.programId}/processor-events`, headers: { authorization: `Bearer ${percent.workspace.ownerToken}` } });
      expect(stranger.statusCode).toBe(403);
    });
  });

  it('the embedded start writes a whsec_ secret to demo-credentials.json', async () => {
    if (kind !== 'pglite') return;
    const fresh = await createTestDatabase('pglite');
    const dir = await mkdtemp(join(tmpdir(), 'processor-demo-'));
    try {
      const demo = await ensureDemo(fresh.db, dir, 'http://localhost:3000');
      const written = JSON.parse(await readFile(join(dir, 'demo-credentials.json'), 'utf8'));
      expect(written.processorWebhookSecret).toMatch(/^whsec_[A-Za-z0-9_-]{32}$/);
      expect(demo!.credentials.processorWebhookSecret).toBe(written.processorWebhookSecret);
    } finally {
      await fresh.drop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
