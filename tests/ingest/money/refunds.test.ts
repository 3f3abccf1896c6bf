/**
 * Issue 34, point 2: refunds, partial refunds, chargebacks and disputes, from /track/refund and from
 * processor webhooks, become adjustment, reversal or clawback entries by the commission's state; a
 * retried request or a redelivered webhook never makes a second entry (PGlite and Postgres).
 * Kafka redelivery and replay: tests/processors/ledger-warehouse.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../../support/databases.js';
import { commissionOf, endHolds, entries, moneyProgram, moneyTestApp, newClick, refund, sale, type MoneyProgram } from '../../support/money.js';
import { charge, checkoutSession, deliver, dispute, event, id } from '../../support/processor.js';

describe.each(databaseKinds())('refund effects on the ledger (%s)', (kind) => {
  const money = moneyTestApp(kind);
  const { post } = money;
  const kinds = async (p: MoneyProgram, commissionId: string) =>
    (await entries(money.db, p.programId)).filter((e) => e.commission_id === commissionId).map((e) => [e.kind, e.amount_minor]);

  /** A processor payment of 5,000 cents by a new customer of the program's link: its charge and payment intent. */
  async function processorSale(p: MoneyProgram) {
    const session = checkoutSession({ metadata: { program_id: String(p.programId), svc_click_id: await newClick(money.app, p) } });
    const res = await deliver(money.app, event('checkout.session.completed', session));
    expect(res.json().data.outcome).toBe('recorded');
    const transactionId = session.payment_intent as string;
    return { pi: transactionId, chargeId: id('ch'), commission: await commissionOf(money.db, transactionId), transactionId };
  }
  /** Delivers an event, then the same event again (a redelivery): the second is a duplicate. */
  async function deliverTwice(evt: object) {
    const first = await deliver(money.app, evt);
    expect(first.statusCode).toBe(200);
    const second = await deliver(money.app, evt);
    expect(second.json().data.outcome).toBe('duplicate');
    return first.json().data;
  }
  /** Pays the program's approved commissions: a payout run, marked paid. */
  async function payAll(p: MoneyProgram) {
    const run = (await post(`${p.base}/payouts`, p.owner)).json().data;
    for (const payout of run.payouts) expect((await post(`${p.base}/payouts/${payout.id}/mark-paid`, p.owner, { reference: 'REF' })).statusCode).toBe(200);
    return run;
  }

  it('before payment, a full refund reverses (pending) and a chargeback reverses (approved); retried requests add nothing', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 30 });
    const pending = await sale(money.app, p, 10_000);
    expect((await refund(money.app, p, pending.transactionId)).json().data.commission_reversed).toBe(true);
    expect((await refund(money.app, p, pending.transactionId)).statusCode).toBe(200);
    expect(await kinds(p, pending.commissionId)).toEqual([['commission', 1_000], ['reversal', -1_000]]);

    const approved = await sale(money.app, p, 20_000);
    await endHolds(money.db, p.programId);
    await refund(money.app, p, approved.transactionId, 'chargeback');
    await refund(money.app, p, approved.transactionId, 'chargeback');
    expect(await kinds(p, approved.commissionId)).toEqual([['commission', 2_000], ['reversal', -2_000]]);
    expect((await commissionOf(money.db, approved.transactionId)).status).toBe('reversed');
    const causes = (await entries(money.db, p.programId)).map((e) => e.cause);
    expect(new Set(causes).size).toBe(causes.length);
  });

  it('before payment, a processor partial refund adjusts pro rata, and a redelivery adjusts nothing more', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 30 });
    const s = await processorSale(p);
    // 5,000 paid, commission 500: 1,000 refunded takes 100 off, then 2,500 in all takes 150 more.
    await deliverTwice(event('charge.refunded', charge({ id: s.chargeId, payment_intent: s.pi, amount: 5_000, amount_refunded: 1_000 })));
    await deliverTwice(event('charge.refunded', charge({ id: s.chargeId, payment_intent: s.pi, amount: 5_000, amount_refunded: 2_500 })));
    expect(await kinds(p, s.commission.id)).toEqual([['commission', 500], ['adjustment', -100], ['adjustment', -150]]);
    expect((await commissionOf(money.db, s.transactionId)).amount_cents).toBe(250);
    // Then the dispute: what is left is reversed.
    await deliverTwice(event('charge.dispute.created', dispute({ charge: s.chargeId, payment_intent: s.pi })));
    expect(await kinds(p, s.commission.id)).toEqual([['commission', 500], ['adjustment', -100], ['adjustment', -150], ['reversal', -250]]);
  });

  it('after payment, refunds claw back (pro rata for a partial one) and the commission stays paid', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    const s = await processorSale(p);
    const full = await sale(money.app, p, 30_000);
    await payAll(p);
    expect((await commissionOf(money.db, s.transactionId)).status).toBe('paid');

    // Partial refunds of the paid processor sale, each delivered twice: 20 % then 50 % in all.
    await deliverTwice(event('charge.refunded', charge({ id: s.chargeId, payment_intent: s.pi, amount: 5_000, amount_refunded: 1_000 })));
    await deliverTwice(event('charge.refunded', charge({ id: s.chargeId, payment_intent: s.pi, amount: 5_000, amount_refunded: 2_500 })));
    // The dispute after payment claws back what is left.
    await deliverTwice(event('charge.dispute.created', dispute({ charge: s.chargeId, payment_intent: s.pi })));
    expect(await kinds(p, s.commission.id)).toEqual([['commission', 500], ['clawback', -100], ['clawback', -150], ['clawback', -250]]);
    expect(await commissionOf(money.db, s.transactionId)).toMatchObject({ status: 'paid', amount_cents: 500 });

    // A full refund through /track/refund of a paid sale, retried.
    const answered = (await refund(money.app, p, full.transactionId)).json().data;
    expect(answered).toMatchObject({ sale_status: 'refunded', commission_reversed: false });
    await refund(money.app, p, full.transactionId);
    expect(await kinds(p, full.commissionId)).toEqual([['commission', 3_000], ['clawback', -3_000]]);

    // The clawbacks are outstanding: the approved balance is negative until later commissions cover it.
    const balance = (await money.app.inject({ method: 'GET', url: `${p.base}/partners/${p.partnerId}/balance`, headers: p.owner })).json().data;
    expect(balance).toEqual([{ currency: 'USD', pending: 0, held: 0, approved: -3_500, processing: 0, paid: 3_500, balance: -3_500 }]);
  });

  it('a commission in a pending payout keeps its state; its clawback is netted into the next payout', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    const a = await sale(money.app, p, 40_000);
    const first = (await post(`${p.base}/payouts`, p.owner)).json().data.payouts[0];
    expect(first).toMatchObject({ amount_minor: 4_000, commission_ids: [a.commissionId] });
    await refund(money.app, p, a.transactionId);
    expect(await kinds(p, a.commissionId)).toEqual([['commission', 4_000], ['clawback', -4_000]]);
    expect((await commissionOf(money.db, a.transactionId)).status).toBe('processing');
    // The file already sent is paid as it was.
    await post(`${p.base}/payouts/${first.id}/mark-paid`, p.owner, { reference: 'BATCH-1' });
    expect((await commissionOf(money.db, a.transactionId)).status).toBe('paid');

    // New commissions: the next payout nets the clawback.
    const b = await sale(money.app, p, 50_000);
    const second = (await post(`${p.base}/payouts`, p.owner)).json().data.payouts;
    expect(second).toHaveLength(1);
    const clawback = (await entries(money.db, p.programId)).findIndex((e) => e.kind === 'clawback');
    expect(second[0]).toMatchObject({ amount_minor: 1_000, commission_ids: [b.commissionId] });
    expect(second[0].clawback_entry_ids).toHaveLength(1);
    expect(clawback).toBeGreaterThan(0);
  });
});
