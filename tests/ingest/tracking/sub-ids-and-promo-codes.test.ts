/**
 * Issue 31, points 3, 4 and 6 on the tracking routes, on PGlite and Postgres: a click's sub1..sub5
 * and client address stored with it and carried by click.recorded (a sub-id over 100 characters is
 * cut, never refused: the tracking contract records the click); /track/sale with
 * additional_data.promo_code attributing a customer with no attribution, an existing attribution
 * winning, a disabled or unknown code attributing nothing, a bad promo_code refused with nothing written.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { buildPartnerLinkUrl } from '../../../domain/partners/links.js';
import { M } from '../../../ingest/http/messages.js';
import { buildTestApp, createTestProgram, freshIp, tableCounts, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { id } from '../../support/processor.js';

const q = {
  click: sql('t.sub_click', `SELECT sub1, sub2, sub3, sub4, sub5, host(client_ip) AS ip, masklen(client_ip) AS bits FROM clicks WHERE click_id = $1`),
  event: sql('t.sub_click_event', `SELECT payload FROM outbox WHERE event_type = 'click.recorded' AND aggregate_key = $1`),
  customer: sql('t.promo_customer', `SELECT partner_id::int AS partner_id, click_id, status FROM customers WHERE program_id = $1 AND customer_key = $2`),
  commission: sql('t.promo_commission', `SELECT c.partner_id::int AS partner_id FROM commissions c JOIN sale_events s ON s.id = c.sale_id WHERE s.transaction_id = $1`),
};

describe.each(databaseKinds())('sub-ids on clicks and promo codes on sales, on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let p: TestProgram;
  let codePartner: number;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    p = await createTestProgram(app, t.db);
    const second = await app.inject({ method: 'POST', url: `/api/tracking/programs/${p.programId}/partners`, headers: { authorization: `Bearer ${p.workspace.ownerToken}` }, payload: { name: 'Coupon partner' } });
    codePartner = second.json().data.partner_id;
    const code = await app.inject({
      method: 'POST',
      url: `/api/tracking/programs/${p.programId}/partners/${codePartner}/promo-codes`,
      headers: { authorization: `Bearer ${p.workspace.ownerToken}` },
      payload: { code: 'Welcome10' },
    });
    expect(code.statusCode).toBe(200);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const click = (url: string, ip = freshIp()) => app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { 'x-forwarded-for': ip }, payload: { affiliate_url: url } });
  const sale = (payload: object) => app.inject({ method: 'POST', url: '/api/v1/track/sale', headers: { authorization: `Bearer ${p.apiKey}` }, payload });

  it('stores sub1..sub5 and the client address with the click, and click.recorded carries the sub-ids', async () => {
    const url = buildPartnerLinkUrl({ aff_code: p.affCode, domain: 'shop.test.example' }, { landingUrl: 'https://shop.test.example/pricing?utm=x', sub1: 'newsletter', sub2: 'é ü', sub5: 'a&b=c' });
    expect(url).toEqual({ ok: true, url: `https://shop.test.example/pricing?utm=x&aff=${p.affCode}&sub1=newsletter&sub2=%C3%A9+%C3%BC&sub5=a%26b%3Dc` });
    const res = await click(url.ok ? url.url : '', '203.0.113.9');
    expect(res.statusCode).toBe(200);
    const clickId = res.json().click_id;
    expect(await t.db.one(q.click, [clickId])).toEqual({ sub1: 'newsletter', sub2: 'é ü', sub3: null, sub4: null, sub5: 'a&b=c', ip: '203.0.113.9', bits: 32 });
    const event = await t.db.one<{ payload: Record<string, unknown> }>(q.event, [clickId]);
    expect(event!.payload).toMatchObject({ sub1: 'newsletter', sub2: 'é ü', sub3: null, sub4: null, sub5: 'a&b=c' });
  });

  it('an IPv6 client is stored as its /64, as its rate limit counts it', async () => {
    const res = await click(`https://shop.test.example/?aff=${p.affCode}`, '2001:db8:1:2:3:4:5:6');
    expect(res.statusCode).toBe(200);
    expect(await t.db.one(q.click, [res.json().click_id])).toMatchObject({ ip: '2001:db8:1:2::', bits: 64 });
  });

  it('a sub-id over 100 characters is cut to 100 (the click is recorded, as the tracking contract says); an empty or undecodable one is none', async () => {
    const long = 'x'.repeat(99) + '😀' + 'tail';
    const res = await click(`https://shop.test.example/?aff=${p.affCode}&sub1=${'y'.repeat(150)}&sub2=${encodeURIComponent(long)}&sub3=&sub4=%00bad`);
    expect(res.statusCode).toBe(200);
    const row = await t.db.one<Record<string, unknown>>(q.click, [res.json().click_id]);
    expect(row).toMatchObject({ sub1: 'y'.repeat(100), sub2: 'x'.repeat(99), sub3: null, sub4: null, sub5: null });
  });

  it('the link builder keeps visitors on the program site and sub-ids within 100 characters', () => {
    const link = { aff_code: 'abc', domain: 'shop.test.example' };
    expect(buildPartnerLinkUrl(link)).toEqual({ ok: true, url: 'https://shop.test.example/?aff=abc' });
    expect(buildPartnerLinkUrl(link, { landingUrl: 'https://blog.shop.test.example/post?aff=old&sub1=old', sub1: 'new' })).toEqual({ ok: true, url: 'https://blog.shop.test.example/post?aff=abc&sub1=new' });
    expect(buildPartnerLinkUrl(link, { landingUrl: 'https://evil.example/' })).toEqual({ ok: false, problem: 'landing_url' });
    expect(buildPartnerLinkUrl(link, { landingUrl: 'https://shop.test.example.evil.example/' })).toEqual({ ok: false, problem: 'landing_url' });
    expect(buildPartnerLinkUrl(link, { landingUrl: 'javascript:alert(1)' })).toEqual({ ok: false, problem: 'landing_url' });
    expect(buildPartnerLinkUrl(link, { sub3: 'z'.repeat(101) })).toEqual({ ok: false, problem: 'sub_id' });
  });

  it("a sale with a promo code attributes a customer with no attribution to the code's partner, ignoring case", async () => {
    const key = id('user');
    const txn = id('pi');
    const res = await sale({ transaction_id: txn, amount_cents: 10_000, customer_key: key, additional_data: { promo_code: 'WELCOME10' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ conversion: true, commission: { partner_id: codePartner, amount_cents: 1_000 } });
    expect(await t.db.one(q.customer, [p.programId, key])).toEqual({ partner_id: codePartner, click_id: null, status: 'conversion' });
    // The customer's later payments stay with the partner, with or without the code.
    const again = await sale({ transaction_id: id('pi'), amount_cents: 5_000, customer_key: key });
    expect(again.json().data.commission).toBeNull(); // a percent program pays the first sale only
    expect(again.json().data.customer_id).toBe(res.json().data.customer_id);
  });

  it('an existing attribution always wins: a customer from a click keeps its partner whatever code its sale carries', async () => {
    const clickId = (await click(`https://shop.test.example/?aff=${p.affCode}`)).json().click_id;
    const key = id('user');
    expect((await app.inject({ method: 'POST', url: '/api/v1/track/lead', headers: { authorization: `Bearer ${p.apiKey}` }, payload: { click_id: clickId, customer_key: key } })).statusCode).toBe(200);
    const txn = id('pi');
    const res = await sale({ transaction_id: txn, amount_cents: 10_000, customer_key: key, additional_data: { promo_code: 'welcome10' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.commission.partner_id).toBe(p.partnerId);
    // A click id of the program with no customer yet: the click attributes, not the code.
    const fresh = (await click(`https://shop.test.example/?aff=${p.affCode}`)).json().click_id;
    const byClick = await sale({ transaction_id: id('pi'), amount_cents: 10_000, click_id: fresh, additional_data: { promo_code: 'welcome10' } });
    expect(byClick.json().data.commission.partner_id).toBe(p.partnerId);
  });

  it('an unknown or disabled code attributes nothing: the usual 400, nothing written', async () => {
    const before = await tableCounts(t.db);
    const unknown = await sale({ transaction_id: id('pi'), amount_cents: 1_000, customer_key: id('user'), additional_data: { promo_code: 'NOPE' } });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error).toMatchObject({ code: 'no_attribution', message: M.sale.customerNotFound });
    const codes = await app.inject({ method: 'GET', url: `/api/tracking/programs/${p.programId}/partners/${codePartner}/promo-codes`, headers: { authorization: `Bearer ${p.workspace.ownerToken}` } });
    const codeId = codes.json().data[0].id;
    const off = await app.inject({ method: 'DELETE', url: `/api/tracking/programs/${p.programId}/partners/${codePartner}/promo-codes/${codeId}`, headers: { authorization: `Bearer ${p.workspace.ownerToken}` } });
    expect(off.statusCode).toBe(200);
    const afterDisable = await tableCounts(t.db);
    const disabled = await sale({ transaction_id: id('pi'), amount_cents: 1_000, customer_key: id('user'), additional_data: { promo_code: 'welcome10' } });
    expect(disabled.statusCode).toBe(400);
    expect(await tableCounts(t.db)).toEqual(afterDisable);
    expect(afterDisable.sale_events).toBe(before.sale_events);
    await app.inject({ method: 'PATCH', url: `/api/tracking/programs/${p.programId}/partners/${codePartner}/promo-codes/${codeId}`, headers: { authorization: `Bearer ${p.workspace.ownerToken}` }, payload: { enabled: true } });
  });

  it("another program's code, or the code of a partner no longer approved, attributes nothing", async () => {
    const other = await createTestProgram(app, t.db);
    const made = await app.inject({
      method: 'POST',
      url: `/api/tracking/programs/${other.programId}/partners/${other.partnerId}/promo-codes`,
      headers: { authorization: `Bearer ${other.workspace.ownerToken}` },
      payload: { code: 'ELSEWHERE' },
    });
    expect(made.statusCode).toBe(200);
    const before = await tableCounts(t.db);
    expect((await sale({ transaction_id: id('pi'), amount_cents: 1_000, customer_key: id('user'), additional_data: { promo_code: 'elsewhere' } })).statusCode).toBe(400);
    await t.db.many(sql('t.promo_reject_partner', `UPDATE partner_programs SET status = 'rejected' WHERE program_id = $1 AND partner_id = $2`), [p.programId, codePartner]);
    const refused = await sale({ transaction_id: id('pi'), amount_cents: 1_000, customer_key: id('user'), additional_data: { promo_code: 'welcome10' } });
    expect(refused.statusCode).toBe(400);
    expect(await tableCounts(t.db)).toEqual(before);
    await t.db.many(sql('t.promo_approve_partner', `UPDATE partner_programs SET status = 'approved' WHERE program_id = $1 AND partner_id = $2`), [p.programId, codePartner]);
  });

  it.each([[''], ['x'.repeat(65)], [42], [null], ['bad\u0000code']])('refuses additional_data.promo_code %j with 400 and writes nothing', async (promo) => {
    const before = await tableCounts(t.db);
    const res = await sale({ transaction_id: id('pi'), amount_cents: 1_000, customer_key: id('user'), additional_data: { promo_code: promo } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ data: null, error: { status: 400, name: 'BadRequestError', message: M.sale.promoCode, details: {}, code: 'invalid_request' } });
    expect(await tableCounts(t.db)).toEqual(before);
  });
});
