import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { migrateWarehouse } from '../../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../../core/warehouse.js';
import { buildTestApp, createTestProgram, createTestWorkspace, freshIp, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { embeddedDelivery } from '../../support/oracle.js';

const DAY_MS = 86_400_000;
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

const envelope = (status: number, name: string, message: string) => ({ data: null, error: { status, name, message, details: {} } });

// One warehouse for the file (chDB binds one data directory per process); the Postgres database
// numbers its programs from far above PGlite's, so the two never share a program id in it.
let dir: string;
let warehouse: Warehouse;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ats-dashboard-'));
  warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
  await migrateWarehouse(warehouse);
});
afterAll(async () => {
  await warehouse?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.each(databaseKinds())('dashboard API on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let bare: FastifyInstance;
  let program: TestProgram;
  let now: number | undefined;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    if (kind === 'postgres') await t.db.many(sql('t.program_ids_apart', `ALTER SEQUENCE programs_id_seq RESTART WITH 1000000`));
    app = await buildTestApp(t.db, undefined, () => now ?? Date.now(), warehouse);
    bare = await buildTestApp(t.db);
    program = await createTestProgram(app, t.db);
  });
  afterAll(async () => {
    await app?.close();
    await bare?.close();
    await t?.drop();
  });

  const get = (url: string, token?: string | null, on: FastifyInstance = app) =>
    on.inject({ method: 'GET', url, headers: token ? { authorization: `Bearer ${token}` } : {} });
  const post = (url: string, payload: object, key?: string) =>
    app.inject({
      method: 'POST',
      url,
      headers: { 'x-forwarded-for': freshIp(), ...(key ? { authorization: `Bearer ${key}` } : {}) },
      payload,
    });
  const performanceUrl = (id: number, query = '') => `/api/tracking/performance/${id}${query ? `?${query}` : ''}`;

  describe('performance: who may read it', () => {
    it('answers 403, not 401, without a session, with a program key, or with an unknown token', async () => {
      for (const token of [null, program.apiKey, 'dsh_not-a-session', '']) {
        const res = await get(performanceUrl(program.programId), token);
        expect(res.statusCode, String(token)).toBe(403);
        expect(res.json()).toEqual(envelope(403, 'ForbiddenError', 'A dashboard session is required'));
        expect(res.headers['x-request-id']).toBeTruthy();
      }
      // A session without the Bearer scheme is still a session; a program key without it is not.
      expect((await app.inject({ method: 'GET', url: performanceUrl(program.programId), headers: { authorization: program.apiKey } })).statusCode).toBe(403);
    });

    it('answers the same 403 to a non-member and for an unknown program, so ids cannot be probed', async () => {
      const stranger = await createTestWorkspace(t.db);
      const nonMember = await get(performanceUrl(program.programId), stranger.ownerToken);
      const unknown = await get(performanceUrl(program.programId + 987_654), program.workspace.ownerToken);
      expect(nonMember.statusCode).toBe(403);
      expect(unknown.statusCode).toBe(403);
      expect(nonMember.json()).toEqual(envelope(403, 'ForbiddenError', 'You are not a member of the workspace that owns this program'));
      expect(unknown.json()).toEqual(nonMember.json());
    });

    it('owners and members of the workspace read it', async () => {
      for (const token of [program.workspace.ownerToken, program.workspace.memberToken]) {
        const res = await get(performanceUrl(program.programId), token);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json().meta.period).toBe('7d');
      }
    });

    it('without a warehouse it answers the internal error envelope and keeps serving', async () => {
      const res = await get(performanceUrl(program.programId), program.workspace.ownerToken, bare);
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual(envelope(500, 'InternalServerError', 'Failed to load performance data'));
      expect((await get(performanceUrl(program.programId), null, bare)).statusCode).toBe(403);
    });
  });

  describe('performance: bad query values are a clear 400', () => {
    const dateMessage = (name: string) => `${name} must be an ISO 8601 date (YYYY-MM-DD) or date-time between 2000-01-01 and 2099-12-31`;
    it.each([
      ['period=1y', 'period must be one of: 7d, 30d, 90d, all'],
      ['period=', 'period must be one of: 7d, 30d, 90d, all'],
      ['period=7D', 'period must be one of: 7d, 30d, 90d, all'],
      ['period=7d&period=30d', 'period must be one of: 7d, 30d, 90d, all'],
      ['dateFrom=2025-01-01', 'dateFrom and dateTo must be sent together'],
      ['dateTo=2025-01-01&period=30d', 'dateFrom and dateTo must be sent together'],
      ['dateFrom=2025-02-30&dateTo=2025-03-01', dateMessage('dateFrom')],
      ['dateFrom=2025-01-01&dateTo=tomorrow', dateMessage('dateTo')],
      ['dateFrom=&dateTo=2025-01-01', dateMessage('dateFrom')],
      ['dateFrom=1999-12-31&dateTo=2025-01-01', dateMessage('dateFrom')],
      ['dateFrom=2025-01-01T25:00:00Z&dateTo=2025-01-02', dateMessage('dateFrom')],
      ['dateFrom=2025-01-01&dateFrom=2025-01-02&dateTo=2025-01-03', dateMessage('dateFrom')],
      ['dateFrom=2025-01-02&dateTo=2025-01-01', 'dateFrom must not be after dateTo'],
      ['dateFrom=2000-01-01&dateTo=2099-12-31', 'dateFrom to dateTo may cover at most 3660 days'],
      ['from=2025-01-01', 'Unknown query parameter: from'],
      ['datefrom=2025-01-01&dateto=2025-01-02', 'Unknown query parameters: datefrom, dateto'],
      ['period=%00', 'period must be one of: 7d, 30d, 90d, all'],
    ])('%s', async (query, message) => {
      const res = await get(performanceUrl(program.programId, query), program.workspace.ownerToken);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toEqual(envelope(400, 'BadRequestError', message));
    });

    it.each(['abc', '0', '-1', '1.5', '0x10', '99999999999999999999'])('programId %s', async (id) => {
      const res = await get(`/api/tracking/performance/${id}`, program.workspace.ownerToken);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual(envelope(400, 'BadRequestError', 'programId must be a positive integer'));
    });
  });

  describe('performance: the numbers', () => {
    let p: TestProgram;
    const daysAgo = (n: number) => new Date(Date.now() - n * DAY_MS).toISOString();

    beforeAll(async () => {
      p = await createTestProgram(app, t.db, { commission_type: 'percent', commission_rate: 10 });
      const click = async (test = false) =>
        (await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${p.affCode}`, ...(test ? { additional_data: { test_mode: true } } : {}) })).json()
          .click_id as string;
      const [c1, c2, c3, c4] = [await click(), await click(), await click(), await click()];
      const testClick = await click(true);
      // c1: a lead, then a sale back-dated 3 days (the conversion and its revenue count on that day).
      expect((await post('/api/v1/track/lead', { click_id: c1, customer_key: 'dash-1' }, p.apiKey)).statusCode).toBe(200);
      expect((await post('/api/v1/track/sale', { transaction_id: `d1-${kind}`, amount_cents: 12_345, customer_key: 'dash-1', occurred_at: daysAgo(3) }, p.apiKey)).statusCode).toBe(200);
      // c2: a browser-mode lead stays provisional: not a lead.
      expect((await post('/api/v1/track/lead', { click_id: c2 })).json().data.provisional).toBe(true);
      // c3: a sale without a lead converts, then is refunded: a conversion with no revenue and no commission.
      expect((await post('/api/v1/track/sale', { transaction_id: `d3-${kind}`, amount_cents: 5_000, click_id: c3 }, p.apiKey)).statusCode).toBe(200);
      expect((await post('/api/v1/track/refund', { transaction_id: `d3-${kind}` }, p.apiKey)).statusCode).toBe(200);
      // c4: a lead and a sale in euros: counted as a sale, its money reported beside the dollars.
      expect((await post('/api/v1/track/lead', { click_id: c4, customer_key: 'dash-4' }, p.apiKey)).statusCode).toBe(200);
      expect((await post('/api/v1/track/sale', { transaction_id: `d4-${kind}`, amount_cents: 2_000, customer_key: 'dash-4', currency: 'EUR' }, p.apiKey)).statusCode).toBe(200);
      // A test lead and a test sale count nowhere.
      expect((await post('/api/v1/track/lead', { click_id: testClick, customer_key: 'dash-test' }, p.apiKey)).statusCode).toBe(200);
      expect((await post('/api/v1/track/sale', { amount_cents: 999, additional_data: { test_mode: true } }, p.apiKey)).statusCode).toBe(200);
      await embeddedDelivery(warehouse)(t.db);
    });

    it('7d by default: one row per day, zeros included, real activity only, bounds and previous period in meta', async () => {
      now = Date.now();
      try {
        const res = await get(performanceUrl(p.programId), p.workspace.memberToken);
        expect(res.statusCode, res.body).toBe(200);
        const body = res.json();
        const today = utcDay(now);
        const threeDaysAgo = utcDay(now - 3 * DAY_MS);
        expect(body.data.map((r: { date: string }) => r.date)).toEqual([6, 5, 4, 3, 2, 1, 0].map((n) => utcDay(now! - n * DAY_MS)));
        const row = (date: string) => body.data.find((r: { date: string }) => r.date === date);
        // Today: the refunded sale brings no revenue, the euro sale no dollars; the commission of the
        // back-dated sale counts on the day it was created.
        expect(row(today)).toEqual({ date: today, period: today, clicks: 4, leads: 2, conversions: 2, revenue: 0, partners: 1, sales: 0, commission: 12.35 });
        expect(row(threeDaysAgo)).toEqual({
          date: threeDaysAgo, period: threeDaysAgo, clicks: 0, leads: 0, conversions: 1, revenue: 123.45, partners: 0, sales: 0, commission: 0,
        });
        expect(body.metrics).toMatchObject({
          totalClicks: 4,
          totalLeads: 2,
          totalConversions: 3,
          totalRevenue: 123.45,
          conversionRate: 75,
          averageOrderValue: 41.15,
          totalPartners: 1,
          totalSales: 2,
          totalPartnersCommission: 12.35,
          clicksTrend: { trend: null, trendDirection: 'up', previous: 0 },
          revenueTrend: { trend: null, trendDirection: 'up', previous: 0 },
        });
        expect(body.meta).toEqual({
          period: '7d',
          dateFrom: `${utcDay(now - 6 * DAY_MS)}T00:00:00.000Z`,
          dateTo: `${today}T23:59:59.999Z`,
          previousPeriod: { dateFrom: `${utcDay(now - 13 * DAY_MS)}T00:00:00.000Z`, dateTo: `${utcDay(now - 7 * DAY_MS)}T23:59:59.999Z` },
          currency: 'USD',
          otherCurrencies: [{ currency: 'EUR', revenue: 20, commission: 2 }],
        });
      } finally {
        now = undefined;
      }
    });

    it('a week later, this week becomes the previous period of the trends', async () => {
      now = Date.now() + 7 * DAY_MS;
      try {
        const body = (await get(performanceUrl(p.programId, 'period=7d'), p.workspace.ownerToken)).json();
        expect(body.metrics).toEqual({
          totalClicks: 0,
          totalLeads: 0,
          totalConversions: 0,
          totalRevenue: 0,
          conversionRate: 0,
          averageOrderValue: 0,
          totalPartners: 0,
          totalSales: 0,
          totalPartnersCommission: 0,
          clicksTrend: { trend: 100, trendDirection: 'down', previous: 4 },
          leadsTrend: { trend: 100, trendDirection: 'down', previous: 2 },
          conversionsTrend: { trend: 100, trendDirection: 'down', previous: 3 },
          revenueTrend: { trend: 100, trendDirection: 'down', previous: 123.45 },
          partnersTrend: { trend: 100, trendDirection: 'down', previous: 1 },
          salesTrend: { trend: 100, trendDirection: 'down', previous: 2 },
          commissionTrend: { trend: 100, trendDirection: 'down', previous: 12.35 },
        });
      } finally {
        now = undefined;
      }
    });

    it('all runs from the first activity (a back-dated sale) to today; dates win over period', async () => {
      now = Date.now();
      try {
        const all = (await get(performanceUrl(p.programId, 'period=all'), p.workspace.ownerToken)).json();
        expect(all.meta.period).toBe('all');
        expect(all.data[0].date).toBe(utcDay(now - 3 * DAY_MS));
        expect(all.data).toHaveLength(4);
        expect(all.metrics.totalConversions).toBe(3);
        expect(all.metrics.revenueTrend).toEqual({ trend: null, trendDirection: 'up', previous: 0 });

        const from = utcDay(now - 3 * DAY_MS);
        const custom = (await get(performanceUrl(p.programId, `period=90d&dateFrom=${from}&dateTo=${from}`), p.workspace.ownerToken)).json();
        expect(custom.meta).toMatchObject({ period: 'custom', dateFrom: `${from}T00:00:00.000Z`, dateTo: `${from}T23:59:59.999Z` });
        expect(custom.data).toHaveLength(1);
        expect(custom.metrics).toMatchObject({ totalConversions: 1, totalRevenue: 123.45, totalClicks: 0, totalSales: 1 });
      } finally {
        now = undefined;
      }
    });
  });

  describe('status', () => {
    const statusUrl = (id: number) => `/api/tracking/status/${id}`;

    it('needs a session (401), a known program (404) and tracking:read on it (403)', async () => {
      for (const token of [null, program.apiKey]) {
        const res = await get(statusUrl(program.programId), token);
        expect(res.statusCode).toBe(401);
        expect(res.json()).toEqual(envelope(401, 'UnauthorizedError', 'A dashboard session is required'));
      }
      const unknown = await get(statusUrl(program.programId + 987_654), program.workspace.ownerToken);
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json()).toEqual(envelope(404, 'NotFoundError', 'Program not found'));
      const stranger = await createTestWorkspace(t.db);
      const refused = await get(statusUrl(program.programId), stranger.memberToken);
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toEqual(envelope(403, 'ForbiddenError', 'You do not have tracking:read permission on this program'));
      expect((await get(statusUrl(program.programId), program.workspace.memberToken)).statusCode).toBe(200);
    });

    it('a fresh program: every step pending, no test events, not connected; partners as recorded', async () => {
      const ws = await createTestWorkspace(t.db);
      const created = await app.inject({
        method: 'POST',
        url: '/api/tracking/programs',
        headers: { authorization: `Bearer ${ws.ownerToken}` },
        payload: { name: 'Bare', domain: 'bare.test.example', commission_type: 'fixed', commission_rate: 5 },
      });
      const id = created.json().data.id as number;
      now = Date.parse('2031-01-02T03:04:05.678Z');
      try {
        const res = await get(statusUrl(id), ws.memberToken);
        expect(res.statusCode, res.body).toBe(200);
        const noEvents = { testEventCount: 0, hasTestEvents: false, latestTestEvent: null };
        expect(res.json()).toEqual({
          data: {
            programId: String(id),
            stepStatuses: { pageview: 'pending', referrals: 'pending', payments: 'pending' },
            statistics: {
              pageview: noEvents,
              referrals: noEvents,
              payments: {
                paymentTrackingMode: 'processor_connect',
                methodReady: false,
                processorConnectionStatus: 'not_connected',
                isProcessorConnected: false,
                processorAccountId: null,
                chargesEnabled: false,
                payoutsEnabled: false,
                detailsSubmitted: false,
                connectionDate: null,
              },
            },
            hasPartners: false,
            lastUpdated: '2031-01-02T03:04:05.678Z',
            // The program's outgoing webhook endpoints (issue 32): none yet.
            webhooks: { endpoints: 0, enabled: 0, disabled_failing: 0, disabled_manual: 0, failing: 0 },
          },
        });
      } finally {
        now = undefined;
      }
    });

    it('test clicks and leads complete their steps (count capped at 10, latest event shown); s2s completes payments', async () => {
      const p = await createTestProgram(app, t.db);
      for (let i = 0; i < 12; i++) {
        const res = await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${p.affCode}`, additional_data: { test_mode: true } });
        expect(res.statusCode).toBe(200);
      }
      const real = await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${p.affCode}` });
      expect((await post('/api/v1/track/lead', { click_id: real.json().click_id, customer_key: 'st-1', additional_data: { test_mode: true } }, p.apiKey)).statusCode).toBe(200);
      const latest = await t.db.many<{ id: number; event_type: string; created_at: Date }>(
        sql('t.latest_test_events', `SELECT DISTINCT ON (event_type) id, event_type, created_at FROM tracking_logs WHERE program_id = $1 ORDER BY event_type, created_at DESC, id DESC`),
        [p.programId],
      );
      const latestOf = (type: string) => {
        const row = latest.find((r) => r.event_type === type)!;
        return { id: Number(row.id), timestamp: row.created_at.toISOString(), createdAt: row.created_at.toISOString() };
      };

      const before = (await get(statusUrl(p.programId), p.workspace.ownerToken)).json().data;
      expect(before.stepStatuses).toEqual({ pageview: 'complete', referrals: 'complete', payments: 'pending' });
      expect(before.statistics.pageview).toEqual({ testEventCount: 10, hasTestEvents: true, latestTestEvent: latestOf('click') });
      expect(before.statistics.referrals).toEqual({ testEventCount: 1, hasTestEvents: true, latestTestEvent: latestOf('lead') });
      expect(before.hasPartners).toBe(true);

      const patched = await app.inject({
        method: 'PATCH',
        url: `/api/tracking/programs/${p.programId}`,
        headers: { authorization: `Bearer ${p.workspace.ownerToken}` },
        payload: { paymentTrackingMode: 's2s' },
      });
      expect(patched.statusCode).toBe(200);
      const after = (await get(statusUrl(p.programId), p.workspace.memberToken)).json().data;
      expect(after.stepStatuses.payments).toBe('complete');
      expect(after.statistics.payments).toMatchObject({ paymentTrackingMode: 's2s', methodReady: true, isProcessorConnected: false });
    });

    it('reads Postgres only: it answers without a warehouse', async () => {
      const res = await get(statusUrl(program.programId), program.workspace.ownerToken, bare);
      expect(res.statusCode).toBe(200);
      expect(res.json().data.programId).toBe(String(program.programId));
    });
  });

  it('both routes are in the OpenAPI document with their query and responses', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const performance = doc.paths['/api/tracking/performance/{programId}'].get;
    expect(performance.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['dateFrom', 'dateTo', 'period', 'programId']);
    expect(Object.keys(performance.responses).sort()).toEqual(['200', '400', '403', '500']);
    expect(doc.paths['/api/tracking/status/{programId}'].get.responses['200']).toBeDefined();
  });
});
