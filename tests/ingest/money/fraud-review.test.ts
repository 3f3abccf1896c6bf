/**
 * Issue 31, point 5 (partner-program.md, "Fraud review"), on PGlite and Postgres: the program
 * setting fraud_rules (all on by default, audited, owners change it, bad input refused with nothing
 * written), each rule flagging a commission (and not when off) with its evidence stored, a held
 * commission never approved by time, commission.held, the review queue (cursor pages, partner
 * filter, refusals), and owners approving or rejecting held commissions through the commission
 * endpoints: a self-referral held and then rejected.
 */
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { sql, type Database } from '../../../core/db.js';
import { recordPartnerSignInAddress } from '../../../domain/fraud/sign-in-addresses.js';
import { sweepOnce } from '../../../processors/commission-sweeper.js';
import { freshIp } from '../../support/app.js';
import { databaseKinds } from '../../support/databases.js';
import { checkoutSession, deliver, event, id } from '../../support/processor.js';
import { endHolds, entries, eventsOf, moneyProgram, moneyTestApp, type MoneyProgram } from '../../support/money.js';

const ALL_ON = { self_referral: true, click_flood: true, fast_conversion: true, partner_ip: true };

let serial = 0;
const txn = () => `pi_fraud_${Date.now()}_${(serial += 1)}`;

async function click(app: FastifyInstance, affCode: string, ip = freshIp()): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/track/click',
    headers: { 'x-forwarded-for': ip },
    payload: { affiliate_url: `https://shop.test.example/?aff=${affCode}` },
  });
  if (res.statusCode !== 200) throw new Error(`click answered ${res.statusCode}: ${res.body}`);
  return res.json().click_id as string;
}

/** A sale for a click (or a customer key), answered 200: its commission id and stored hold. */
async function saleOf(app: FastifyInstance, p: MoneyProgram, ref: { click_id?: string; customer_key?: string }, amount = 10_000) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/track/sale',
    headers: { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': freshIp() },
    payload: { transaction_id: txn(), amount_cents: amount, ...ref },
  });
  if (res.statusCode !== 200) throw new Error(`sale answered ${res.statusCode}: ${res.body}`);
  return res.json().data.commission.commission_id as string;
}

async function stored(db: Database, commissionId: string) {
  return (await db.one<{ status: string; hold_reasons: Record<string, unknown>[] | null; held_at: Date | null; approved_at: Date | null }>(
    sql('t.fraud_commission', `SELECT status, hold_reasons, held_at, approved_at FROM commissions WHERE id = $1`),
    [commissionId],
  ))!;
}

/** Moves the click back in time, as if the customer had browsed for a while before paying. */
const ageClick = (db: Database, clickId: string, seconds: number) =>
  db.many(sql('t.fraud_age_click', `UPDATE clicks SET created_at = created_at - make_interval(secs => $2) WHERE click_id = $1`), [clickId, seconds]);

const settingsCounts = (db: Database) =>
  db.one(
    sql(
      't.fraud_counts',
      `SELECT (SELECT count(*) FROM audit_log)::int AS audit, (SELECT string_agg(id || ':' || fraud_rules::text, ',' ORDER BY id) FROM programs) AS rules`,
    ),
  );

describe.each(databaseKinds())('fraud review (%s)', (kind) => {
  const money = moneyTestApp(kind);
  const { get, post } = money;
  const patch = (url: string, headers: Record<string, string>, payload: object) => money.app.inject({ method: 'PATCH', url, headers, payload });

  it('fraud_rules: all on by default, changed one by one by owners (audited); bad input is refused and writes nothing', async () => {
    const p = await moneyProgram(money.app, money.db);
    // A program created without naming the rules has them all on.
    const created = await post('/api/tracking/programs', p.owner, { name: 'Defaults', domain: 'defaults.test.example', commission_type: 'percent', commission_rate: 5 });
    expect(created.statusCode).toBe(200);
    expect(created.json().data.fraud_rules).toEqual(ALL_ON);
    const id = created.json().data.id as number;
    expect((await get(`/api/tracking/programs/${id}`, p.member)).json().data.fraud_rules).toEqual(ALL_ON);

    const changed = await patch(`/api/tracking/programs/${id}`, p.owner, { fraud_rules: { click_flood: false } });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().data.fraud_rules).toEqual({ ...ALL_ON, click_flood: false });
    const audit = await money.db.one<{ action: string; before: { fraud_rules: object }; after: { fraud_rules: object } }>(
      sql('t.fraud_audit', `SELECT action, before, after FROM audit_log WHERE program_id = $1 ORDER BY id DESC LIMIT 1`),
      [id],
    );
    expect(audit).toMatchObject({ action: 'program.updated', before: { fraud_rules: ALL_ON }, after: { fraud_rules: { ...ALL_ON, click_flood: false } } });

    const other = await moneyProgram(money.app, money.db);
    const before = await settingsCounts(money.db);
    const refusals: [object, Record<string, string>, number, string][] = [
      [{ fraud_rules: { velocity: true } }, p.owner, 400, 'Unknown fraud rule: velocity. Valid: self_referral, click_flood, fast_conversion, partner_ip'],
      [{ fraud_rules: { self_referral: 'yes' } }, p.owner, 400, 'fraud_rules.self_referral must be true or false'],
      [{ fraud_rules: { fast_conversion: null } }, p.owner, 400, 'fraud_rules.fast_conversion must be true or false'],
      [{ fraud_rules: true }, p.owner, 400, 'fraud_rules must be an object of booleans with the rules self_referral, click_flood, fast_conversion, partner_ip'],
      [{ fraud_rules: ['self_referral'] }, p.owner, 400, 'fraud_rules must be an object of booleans with the rules self_referral, click_flood, fast_conversion, partner_ip'],
      // A member changes other settings, never the rules.
      [{ fraud_rules: { partner_ip: false } }, p.member, 403, 'Only a workspace owner can move money: approve or reject commissions, adjust balances, change payout settings, create, pay or cancel payouts'],
    ];
    for (const [payload, headers, status, message] of refusals) {
      const res = await patch(`/api/tracking/programs/${id}`, headers, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(status);
      expect(res.json().error.message, JSON.stringify(payload)).toBe(message);
    }
    // Nor does a member create a program with a rule off.
    const memberCreate = await post('/api/tracking/programs', p.member, {
      name: 'No review', domain: 'noreview.test.example', commission_type: 'percent', commission_rate: 5, fraud_rules: { click_flood: false },
    });
    expect(memberCreate.statusCode).toBe(403);
    // Another workspace's program: refused like every management route (403, nothing to probe).
    expect((await patch(`/api/tracking/programs/${other.programId}`, p.owner, { fraud_rules: { click_flood: false } })).statusCode).toBe(403);
    expect(await settingsCounts(money.db)).toEqual(before);
    // The same values again need no owner: nothing changes.
    expect((await patch(`/api/tracking/programs/${id}`, p.member, { fraud_rules: { click_flood: false } })).statusCode).toBe(200);
  });

  it('fast_conversion flags a sale within 10 s of its click, with the seconds; off, or a later sale, is not held', async () => {
    const on = await moneyProgram(money.app, money.db, { holdDays: 30, settings: { fraud_rules: { fast_conversion: true } } });
    const fast = await saleOf(money.app, on, { click_id: await click(money.app, on.affCode) });
    const held = await stored(money.db, fast);
    expect(held.status).toBe('held');
    expect(held.held_at).not.toBeNull();
    expect(held.hold_reasons).toHaveLength(1);
    expect(held.hold_reasons![0]).toMatchObject({ reason: 'fast_conversion', click_id: expect.any(String) });
    expect(held.hold_reasons![0]!.seconds as number).toBeLessThan(10);

    const slowClick = await click(money.app, on.affCode);
    await ageClick(money.db, slowClick, 60);
    expect((await stored(money.db, await saleOf(money.app, on, { click_id: slowClick }))).status).toBe('pending');

    const off = await moneyProgram(money.app, money.db, { holdDays: 30 });
    const notFlagged = await stored(money.db, await saleOf(money.app, off, { click_id: await click(money.app, off.affCode) }));
    expect(notFlagged).toMatchObject({ status: 'pending', hold_reasons: null, held_at: null });
  });

  it('click_flood flags a click from an address with more than 20 clicks on the link within the hour, with the count', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 30, settings: { fraud_rules: { click_flood: true } } });
    const ip = freshIp();
    const clicks: string[] = [];
    for (let i = 0; i < 21; i += 1) clicks.push(await click(money.app, p.affCode, ip));
    // The 20th click of the address: 20 clicks in its hour, not more than 20.
    const twentieth = await stored(money.db, await saleOf(money.app, p, { click_id: clicks[19]! }));
    expect(twentieth.status).toBe('pending');
    const flooded = await stored(money.db, await saleOf(money.app, p, { click_id: clicks[20]! }));
    expect(flooded.status).toBe('held');
    expect(flooded.hold_reasons).toEqual([{ reason: 'click_flood', client_ip: ip, clicks: 21, link_id: expect.any(Number), click_id: clicks[20] }]);

    // Off: the same flood holds nothing.
    const off = await moneyProgram(money.app, money.db, { holdDays: 30 });
    const offIp = freshIp();
    let last = '';
    for (let i = 0; i < 22; i += 1) last = await click(money.app, off.affCode, offIp);
    expect((await stored(money.db, await saleOf(money.app, off, { click_id: last }))).status).toBe('pending');
  });

  it('partner_ip flags a click from an address the partner signed into the portal from', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 30, settings: { fraud_rules: { partner_ip: true } } });
    const ip = freshIp();
    await recordPartnerSignInAddress(money.db, { partnerId: p.partnerId, clientIp: ip });
    const flagged = await stored(money.db, await saleOf(money.app, p, { click_id: await click(money.app, p.affCode, ip) }));
    expect(flagged.status).toBe('held');
    expect(flagged.hold_reasons).toEqual([{ reason: 'partner_ip', client_ip: ip, sign_in_address: `${ip}/32`, click_id: expect.any(String) }]);
    // Another address is not flagged; and with the rule off, the partner's own address is not either.
    expect((await stored(money.db, await saleOf(money.app, p, { click_id: await click(money.app, p.affCode) }))).status).toBe('pending');
    expect((await patch(`/api/tracking/programs/${p.programId}`, p.owner, { fraud_rules: { partner_ip: false } })).statusCode).toBe(200);
    expect((await stored(money.db, await saleOf(money.app, p, { click_id: await click(money.app, p.affCode, ip) }))).status).toBe('pending');
  });

  it('a self-referral (the lead’s email is the partner’s, ignoring case) is held, listed for review, then rejected', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, settings: { fraud_rules: { self_referral: true } } });
    const partner = await post(`${p.base}/partners`, p.owner, { name: 'Self referrer', email: 'Sam@Partner.example' });
    expect(partner.statusCode).toBe(200);
    const { aff_code: affCode, partner_id: partnerId } = partner.json().data as { aff_code: string; partner_id: number };
    const lead = async (clickId: string, customerKey: string, email: string) => {
      const res = await money.app.inject({
        method: 'POST',
        url: '/api/v1/track/lead',
        headers: { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': freshIp() },
        payload: { click_id: clickId, customer_key: customerKey, email },
      });
      expect(res.statusCode, res.body).toBe(200);
    };
    await lead(await click(money.app, affCode), 'self-1', 'sam@partner.EXAMPLE');
    await lead(await click(money.app, affCode), 'real-1', 'someone@else.example');
    const self = await saleOf(money.app, p, { customer_key: 'self-1' }, 20_000);
    const real = await saleOf(money.app, p, { customer_key: 'real-1' }, 20_000);
    expect(await stored(money.db, self)).toMatchObject({
      status: 'held', approved_at: null, hold_reasons: [{ reason: 'self_referral', email: 'sam@partner.EXAMPLE', email_of: 'lead' }],
    });
    // With no hold a clean commission is approved at once; the held one is not.
    expect((await stored(money.db, real)).status).toBe('approved');

    // commission.created says held, and commission.held follows with the reasons (no evidence: no email in events).
    const created = (await eventsOf(money.db, p.programId, 'commission.created')).find((e) => e.commission_id === self);
    expect(created).toMatchObject({ status: 'held' });
    const heldEvents = await eventsOf(money.db, p.programId, 'commission.held');
    expect(heldEvents).toEqual([
      { commission_id: self, sale_id: expect.any(String), program_id: p.programId, partner_id: partnerId, amount_cents: 2_000, currency: 'USD', held_at: expect.any(String), reasons: ['self_referral'] },
    ]);
    expect(JSON.stringify(heldEvents)).not.toContain('partner.example');

    // The queue lists it with its evidence; members read it.
    const reviews = await get(`${p.base}/reviews`, p.member);
    expect(reviews.statusCode).toBe(200);
    expect(reviews.json()).toMatchObject({ has_more: false, next_cursor: null });
    expect(reviews.json().data).toEqual([
      expect.objectContaining({
        id: self, partner_id: partnerId, partner_name: 'Self referrer', status: 'held', amount_minor: 2_000, currency: 'USD', held_at: expect.any(String),
        reasons: [{ reason: 'self_referral', email: 'sam@partner.EXAMPLE', email_of: 'lead' }],
        sale: { transaction_id: expect.stringMatching(/^pi_fraud_/), amount_minor: 20_000, currency: 'USD', occurred_at: expect.any(String) },
      }),
    ]);
    // The balance counts it as held.
    expect((await get(`${p.base}/partners/${partnerId}/balance`, p.owner)).json().data).toEqual([
      { currency: 'USD', pending: 0, held: 2_000, approved: 2_000, processing: 0, paid: 0, balance: 4_000 },
    ]);

    // Rejected by an owner through the commission endpoint: reversed, the ledger takes it back, off the queue.
    expect((await post(`${p.base}/commissions/${self}/reject`, p.member, { reason: 'Self-referral' })).statusCode).toBe(403);
    const rejected = await post(`${p.base}/commissions/${self}/reject`, p.owner, { reason: 'Self-referral: the partner bought through its own link' });
    expect(rejected.statusCode).toBe(200);
    expect(rejected.json().data).toMatchObject({ status: 'reversed', status_reason: 'Self-referral: the partner bought through its own link' });
    expect((await entries(money.db, p.programId)).filter((e) => e.commission_id === self)).toEqual([
      { kind: 'commission', amount_minor: 2_000, cause: expect.stringMatching(/^sale:/), currency: 'USD', commission_id: self },
      { kind: 'reversal', amount_minor: -2_000, cause: `reject:${self}`, currency: 'USD', commission_id: self },
    ]);
    expect((await get(`${p.base}/reviews`, p.owner)).json().data).toEqual([]);
    // The grounds of the review stay with the commission.
    expect((await stored(money.db, self)).hold_reasons).toEqual([{ reason: 'self_referral', email: 'sam@partner.EXAMPLE', email_of: 'lead' }]);

    // Off, the same self-referral is approved at once (no hold).
    expect((await patch(`/api/tracking/programs/${p.programId}`, p.owner, { fraud_rules: { self_referral: false } })).statusCode).toBe(200);
    await lead(await click(money.app, affCode), 'self-2', 'SAM@partner.example');
    expect(await stored(money.db, await saleOf(money.app, p, { customer_key: 'self-2' }))).toMatchObject({ status: 'approved', hold_reasons: null });
  });

  it('self_referral on processor payments: the payment’s email, or a processor customer the partner paid with before', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 30, settings: { fraud_rules: { self_referral: true } } });
    const partner = (await post(`${p.base}/partners`, p.owner, { name: 'Buyer partner', email: 'pat@partner.example' })).json().data as { aff_code: string };
    const pay = async (metadata: Record<string, string>, o: { email?: string; customer: string }) => {
      const session = checkoutSession({
        metadata: { program_id: String(p.programId), ...metadata },
        customer: o.customer,
        customer_details: { email: o.email ?? null } as never,
      });
      const res = await deliver(money.app, event('checkout.session.completed', session));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().data.outcome, res.body).toBe('recorded');
      const row = await money.db.one<{ id: string }>(
        sql('t.fraud_processor_commission', `SELECT c.id FROM commissions c JOIN sale_events s ON s.id = c.sale_id WHERE s.transaction_id = $1`),
        [session.payment_intent],
      );
      return row!.id;
    };
    const lead = (clickId: string, customerKey: string, email: string) =>
      money.app.inject({
        method: 'POST',
        url: '/api/v1/track/lead',
        headers: { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': freshIp() },
        payload: { click_id: clickId, customer_key: customerKey, email },
      });

    // The checkout's email is the partner's (another case): held, the email's source named.
    const byEmail = await pay({ svc_click_id: await click(money.app, partner.aff_code) }, { email: 'PAT@partner.example', customer: id('cus') });
    expect((await stored(money.db, byEmail)).hold_reasons).toEqual([{ reason: 'self_referral', email: 'PAT@partner.example', email_of: 'processor' }]);

    // The partner paid before as a customer with its own email, with processor customer cus_own...
    const own = id('cus');
    const first = await click(money.app, partner.aff_code);
    expect((await lead(first, 'pat-self', 'pat@partner.example')).statusCode).toBe(200);
    await pay({ svc_click_id: first }, { customer: own });
    // ...then signs up again under another email and pays with the same processor customer: held.
    const second = await click(money.app, partner.aff_code);
    expect((await lead(second, 'pat-alias', 'alias@elsewhere.example')).statusCode).toBe(200);
    const alias = await pay({ svc_click_id: second }, { customer: own });
    expect((await stored(money.db, alias)).hold_reasons).toEqual([
      { reason: 'self_referral', email: 'pat@partner.example', email_of: 'processor_customer', processor_customer_id: own },
    ]);
    // A stranger's payment is not held.
    const stranger = await click(money.app, partner.aff_code);
    expect((await lead(stranger, 'someone', 'someone@else.example')).statusCode).toBe(200);
    expect((await stored(money.db, await pay({ svc_click_id: stranger }, { email: 'someone@else.example', customer: id('cus') }))).status).toBe('pending');
  });

  it('a held commission is never approved by time; an owner approves it; several reasons are kept together', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 1, settings: { fraud_rules: ALL_ON } });
    const ip = freshIp();
    await recordPartnerSignInAddress(money.db, { partnerId: p.partnerId, clientIp: ip });
    const id = await saleOf(money.app, p, { click_id: await click(money.app, p.affCode, ip) });
    expect((await stored(money.db, id)).hold_reasons!.map((r) => r.reason)).toEqual(['fast_conversion', 'partner_ip']);
    await endHolds(money.db, p.programId);
    await money.db.many(sql('t.fraud_past_hold', `UPDATE commissions SET available_at = now() - interval '2 days' WHERE id = $1`), [id]);
    await sweepOnce(money.db);
    expect((await stored(money.db, id)).status).toBe('held');
    expect((await get(`${p.base}/commissions/${id}`, p.owner)).json().data.status).toBe('held');
    expect((await eventsOf(money.db, p.programId, 'commission.approved'))).toEqual([]);

    const ok = await post(`${p.base}/commissions/${id}/approve`, p.owner, { reason: 'Reviewed: the partner’s office bought it for a client' });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().data).toMatchObject({ status: 'approved' });
    expect((await eventsOf(money.db, p.programId, 'commission.approved'))[0]).toMatchObject({ commission_id: id, by: 'owner' });
    expect((await post(`${p.base}/commissions/${id}/approve`, p.owner, { reason: 'again' })).statusCode).toBe(409);
  });

  it('the queue: oldest hold first in cursor pages, a partner filter; bad queries and other programs’ ids are refused', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 30, settings: { fraud_rules: { fast_conversion: true } } });
    const held: string[] = [];
    for (let i = 0; i < 3; i += 1) held.push(await saleOf(money.app, p, { click_id: await click(money.app, p.affCode) }, 1_000 * (i + 1)));
    const first = await get(`${p.base}/reviews?limit=2`, p.owner);
    expect(first.statusCode).toBe(200);
    expect(first.json().data.map((r: { id: string }) => r.id)).toEqual(held.slice(0, 2));
    expect(first.json().has_more).toBe(true);
    const second = await get(`${p.base}/reviews?limit=2&cursor=${first.json().next_cursor}`, p.owner);
    expect(second.json()).toMatchObject({ has_more: false, next_cursor: null });
    expect(second.json().data.map((r: { id: string }) => r.id)).toEqual([held[2]]);
    expect((await get(`${p.base}/reviews?partner_id=${p.partnerId}`, p.owner)).json().data).toHaveLength(3);

    const other = await moneyProgram(money.app, money.db, { holdDays: 30, settings: { fraud_rules: { fast_conversion: true } } });
    await saleOf(money.app, other, { click_id: await click(money.app, other.affCode) });
    for (const [url, status, message] of [
      [`${p.base}/reviews?partner_id=${other.partnerId}`, 404, 'Partner not found in this program'],
      [`${p.base}/reviews?partner_id=abc`, 400, 'partnerId must be a positive integer'],
      [`${p.base}/reviews?limit=0`, 400, 'limit must be an integer from 1 to 100'],
      [`${p.base}/reviews?cursor=bm90LWEtY3Vyc29y`, 400, undefined],
      [`${p.base}/reviews?status=held`, 400, undefined],
      [`${other.base}/reviews`, 403, 'You are not a member of the workspace that owns this program'],
    ] as const) {
      const res = await get(url, p.owner);
      expect(res.statusCode, url).toBe(status);
      if (message) expect(res.json().error.message, url).toBe(message);
    }
    // Another program's held commission is decided there only: 404 here, and it stays held.
    const foreign = (await get(`${other.base}/reviews`, other.owner)).json().data[0].id as string;
    expect((await post(`${p.base}/commissions/${foreign}/reject`, p.owner, { reason: 'x' })).statusCode).toBe(404);
    expect((await stored(money.db, foreign)).status).toBe('held');
  });
});
