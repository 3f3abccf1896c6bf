/**
 * Issue 31, point 3: figures per sub-id value through the real pipeline (click, lead and sale
 * routes, outbox, relay, Avro, loader) into chDB and the ClickHouse server, read by the brand's
 * GET .../performance/sub-ids and by subIdBreakdown with the partner filter the portal uses. Leads,
 * sales and commissions follow the customer's click; a promo-code customer has no click (value null).
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subIdBreakdown } from '../../queries/sub-ids.js';
import { M } from '../../ingest/http/messages.js';
import { buildTestApp, createTestProgram, freshIp, unlimitedRateLimits, type TestProgram } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { embeddedDelivery } from '../support/oracle.js';
import { id } from '../support/processor.js';
import { createTestWarehouse, warehouseKinds, type TestWarehouse } from '../support/warehouses.js';

describe.each(warehouseKinds())('sub-id figures from the warehouse (%s)', (kind) => {
  let t: TestDatabase;
  let w: TestWarehouse;
  let app: FastifyInstance;
  let p: TestProgram;
  let second: number;
  const today = new Date().toISOString().slice(0, 10);

  const post = (url: string, payload: object, key?: string) =>
    app.inject({ method: 'POST', url, headers: { 'x-forwarded-for': freshIp(), ...(key ? { authorization: `Bearer ${key}` } : {}) }, payload });
  const click = async (aff: string, subs: string) => (await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${aff}${subs}` })).json().click_id as string;
  const customerOf = async (clickId: string, amount?: number) => {
    const key = id('user');
    expect((await post('/api/v1/track/lead', { click_id: clickId, customer_key: key }, p.apiKey)).statusCode).toBe(200);
    if (amount) expect((await post('/api/v1/track/sale', { transaction_id: id('pi'), amount_cents: amount, customer_key: key }, p.apiKey)).statusCode).toBe(200);
  };

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    w = await createTestWarehouse(kind);
    app = await buildTestApp(t.db, unlimitedRateLimits(), undefined, w.warehouse);
    p = await createTestProgram(app, t.db);
    const auth = { authorization: `Bearer ${p.workspace.ownerToken}` };
    const partner = await app.inject({ method: 'POST', url: `/api/tracking/programs/${p.programId}/partners`, headers: auth, payload: { name: 'Second', aff_code: 'second-aff' } });
    second = partner.json().data.partner_id;
    await app.inject({ method: 'POST', url: `/api/tracking/programs/${p.programId}/partners/${second}/promo-codes`, headers: auth, payload: { code: 'SECOND5' } });

    // Partner 1: two clicks with sub1=news (one lead, one paying customer), one with sub1=ads, one without.
    const news1 = await click(p.affCode, '&sub1=news&sub2=top');
    const news2 = await click(p.affCode, '&sub1=news');
    await click(p.affCode, '&sub1=ads');
    await click(p.affCode, '');
    await customerOf(news1);
    await customerOf(news2, 10_000);
    // Partner 2: a click with sub1=news and a paying customer, and a promo-code customer (no click).
    await customerOf(await click('second-aff', '&sub1=news'), 20_000);
    expect((await post('/api/v1/track/sale', { transaction_id: id('pi'), amount_cents: 3_000, customer_key: id('user'), additional_data: { promo_code: 'second5' } }, p.apiKey)).statusCode).toBe(200);
    // A test click counts nowhere.
    expect((await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${p.affCode}&sub1=news`, additional_data: { test_mode: true } })).statusCode).toBe(200);
    await embeddedDelivery(w.warehouse)(t.db);
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await w?.drop();
    await t?.drop();
  });

  it("the brand's answer: clicks, leads, sales and commission per value of sub1, leads and sales by the customer's click", async () => {
    const res = await app.inject({ method: 'GET', url: `/api/tracking/programs/${p.programId}/performance/sub-ids?sub=1`, headers: { authorization: `Bearer ${p.workspace.memberToken}` } });
    expect(res.statusCode, res.body).toBe(200);
    const usd = (amount_minor: number) => [{ currency: 'USD', amount_minor }];
    expect(res.json()).toEqual({
      data: [
        { value: 'news', clicks: 3, leads: 3, sales: 2, revenue: usd(30_000), commission: usd(3_000) },
        { value: 'ads', clicks: 1, leads: 0, sales: 0, revenue: [], commission: [] },
        { value: null, clicks: 1, leads: 0, sales: 1, revenue: usd(3_000), commission: usd(300) },
      ],
      meta: { sub: 1, from: expect.any(String), to: today, partner_id: null },
    });
  });

  it("one partner's figures (the portal's filter) and another sub-id", async () => {
    const mine = await subIdBreakdown(w.warehouse, { programId: p.programId, partnerId: p.partnerId, from: today, to: today, sub: 1 });
    expect(mine.map((r) => [r.value, r.clicks, r.leads, r.sales])).toEqual([['news', 2, 2, 1], ['ads', 1, 0, 0], [null, 1, 0, 0]]);
    const sub2 = await subIdBreakdown(w.warehouse, { programId: p.programId, partnerId: p.partnerId, from: today, to: today, sub: 2 });
    expect(sub2.map((r) => [r.value, r.clicks, r.leads])).toEqual([[null, 3, 1], ['top', 1, 1]]);
    expect(await subIdBreakdown(w.warehouse, { programId: p.programId, from: '2020-01-01', to: '2020-01-31', sub: 1 })).toEqual([]);
  });

  it("the portal's answer: the signed-in partner's own figures only; another program is 404", async () => {
    const owner = { authorization: `Bearer ${p.workspace.ownerToken}` };
    const signIn = async (partnerId: number) => {
      const link = await app.inject({ method: 'POST', url: `/api/tracking/programs/${p.programId}/partners/${partnerId}/portal-link`, headers: owner });
      expect(link.statusCode, link.body).toBe(200);
      const res = await app.inject({ method: 'GET', url: `/portal/sign-in${new URL(link.json().data.url as string).search}`, headers: { 'x-forwarded-for': freshIp() } });
      expect(res.statusCode, res.body).toBe(303);
      return { cookie: /svc_portal=[^;]*/.exec(String(res.headers['set-cookie']))![0] };
    };
    const first = await signIn(p.partnerId);
    const res = await app.inject({ method: 'GET', url: `/api/partner/v1/programs/${p.programId}/sub-ids?sub=1`, headers: first });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data.map((r: { value: string | null; clicks: number; sales: number }) => [r.value, r.clicks, r.sales])).toEqual([['news', 2, 1], ['ads', 1, 0], [null, 1, 0]]);
    expect(res.json().meta.partner_id).toBe(p.partnerId);
    const theirs = await app.inject({ method: 'GET', url: `/api/partner/v1/programs/${p.programId}/sub-ids`, headers: await signIn(second) });
    expect(theirs.json().data.map((r: { value: string | null; clicks: number; sales: number }) => [r.value, r.clicks, r.sales])).toEqual([['news', 1, 1], [null, 0, 1]]);
    const other = await createTestProgram(app, t.db);
    expect((await app.inject({ method: 'GET', url: `/api/partner/v1/programs/${other.programId}/sub-ids`, headers: first })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: `/api/partner/v1/programs/${p.programId}/sub-ids?partner_id=${second}`, headers: first })).statusCode).toBe(400);
    expect((await app.inject({ method: 'GET', url: `/api/partner/v1/programs/${p.programId}/sub-ids` })).statusCode).toBe(401);
  });

  it('refuses a bad sub, range or partner filter with 400', async () => {
    for (const query of ['sub=6', 'sub=x', 'from=2026-02-30', 'from=2026-05-02&to=2026-05-01', 'from=2024-01-01&to=2026-01-01', 'partner_id=0', 'other=1']) {
      const res = await app.inject({ method: 'GET', url: `/api/tracking/programs/${p.programId}/performance/sub-ids?${query}`, headers: { authorization: `Bearer ${p.workspace.memberToken}` } });
      expect(res.statusCode, query).toBe(400);
      expect(res.json().data).toBeNull();
    }
    const res = await app.inject({ method: 'GET', url: `/api/tracking/programs/${p.programId}/performance/sub-ids?sub=7`, headers: { authorization: `Bearer ${p.workspace.memberToken}` } });
    expect(res.json().error.message).toBe(M.links.sub);
  });
});
