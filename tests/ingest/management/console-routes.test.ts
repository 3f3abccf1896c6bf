import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { M } from '../../../ingest/http/messages.js';
import { buildTestApp, createTestProgram, freshIp, tableCounts, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { moneyProgram, refund, sale } from '../../support/money.js';

const byCurrency = (a: { currency: string }, b: { currency: string }) => a.currency.localeCompare(b.currency);

const programRow = sql('t.console_program_row', `SELECT commission_rate, allowed_origins, name FROM programs WHERE id = $1`);

describe.each(databaseKinds())("the console's program routes: one program, origins, terms, partners (%s)", (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let p: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    p = await createTestProgram(app, t.db, { name: 'Acme', domain: 'shop.acme.example' });
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token: string, payload?: unknown) =>
    app.inject({ method, url: `/api/tracking${url}`, headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': freshIp() }, ...(payload === undefined ? {} : { payload: payload as object }) });
  const owner = () => p.workspace.ownerToken;
  const member = () => p.workspace.memberToken;

  it('GET a program: members read it (key masked); a stranger and an unknown program get the same 403', async () => {
    const res = await call('GET', `/programs/${p.programId}`, member());
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ id: p.programId, name: 'Acme', domain: 'shop.acme.example', blocked_origins: [] });
    expect(res.json().data.api_token_masked).toMatch(/^aff_\*{8}.{4}$/);
    const other = await createTestProgram(app, t.db);
    for (const id of [p.programId, 999_999_999]) {
      const refused = await call('GET', `/programs/${id}`, other.workspace.ownerToken);
      expect(refused.statusCode).toBe(403);
      expect(refused.json().error.message).toBe(M.management.forbidden);
    }
  });

  it('allowed origins are added and removed one at a time, in canonical form; concurrent adds all land', async () => {
    const add = (origin: string, token = member()) => call('POST', `/programs/${p.programId}/allowed-origins`, token, { origin });
    expect((await add('https://www.acme.example/')).json().data.allowed_origins).toEqual(['https://www.acme.example']);
    expect((await add('https://www.acme.example')).json().data.allowed_origins).toEqual(['https://www.acme.example']);
    const many = await Promise.all(['https://a.acme.example', 'https://b.acme.example', 'https://c.acme.example'].map((o) => add(o)));
    expect(many.every((r) => r.statusCode === 200)).toBe(true);
    const now = (await t.db.one<{ allowed_origins: string[] }>(programRow, [p.programId]))!.allowed_origins;
    expect([...now].sort()).toEqual(['https://a.acme.example', 'https://b.acme.example', 'https://c.acme.example', 'https://www.acme.example']);

    const removed = await call('DELETE', `/programs/${p.programId}/allowed-origins?origin=${encodeURIComponent('https://b.acme.example')}`, member());
    expect(removed.statusCode).toBe(200);
    expect(removed.json().data.allowed_origins).not.toContain('https://b.acme.example');
    const missing = await call('DELETE', `/programs/${p.programId}/allowed-origins?origin=${encodeURIComponent('https://b.acme.example')}`, member());
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.message).toBe(M.management.originNotListed);
  });

  it('refuses a bad origin and a 51st origin with the reason, writing nothing', async () => {
    const before = await t.db.one(programRow, [p.programId]);
    for (const [payload, message] of [
      [{ origin: 'shop.acme.example' }, M.management.origin],
      [{ origin: 'https://acme.example/path' }, M.management.origin],
      [{ origin: 'ftp://acme.example' }, M.management.origin],
      [{}, M.management.origin],
      [{ origin: 'https://acme.example', more: 1 }, M.body.unknownField(['more'])],
    ] as const) {
      const res = await call('POST', `/programs/${p.programId}/allowed-origins`, owner(), payload);
      expect(res.statusCode).toBe(400);
      expect(res.json().error.message).toBe(message);
    }
    const badQuery = await call('DELETE', `/programs/${p.programId}/allowed-origins?origin=nope`, owner());
    expect(badQuery.statusCode).toBe(400);
    expect(await t.db.one(programRow, [p.programId])).toEqual(before);

    const full = await createTestProgram(app, t.db, { allowed_origins: Array.from({ length: 50 }, (_, i) => `https://s${i}.acme.example`) }, p.workspace);
    const over = await call('POST', `/programs/${full.programId}/allowed-origins`, owner(), { origin: 'https://one-more.acme.example' });
    expect(over.statusCode).toBe(409);
    expect(over.json().error.message).toBe(M.management.originLimit);
  });

  it('the commission terms are owners alone: a member changes other settings, not the terms', async () => {
    const before = await t.db.one(programRow, [p.programId]);
    for (const payload of [{ commission_rate: 25 }, { commission_type: 'fixed', commission_rate: 5 }, { name: 'Renamed', commission_rate: 30 }]) {
      const res = await call('PATCH', `/programs/${p.programId}`, member(), payload);
      expect(res.statusCode).toBe(403);
      expect(res.json().error.message).toBe(M.management.termsOwnerOnly);
    }
    expect(await t.db.one(programRow, [p.programId])).toEqual(before);
    // The same rate as now is no change of terms.
    const same = await call('PATCH', `/programs/${p.programId}`, member(), { name: 'Acme Shoes', commission_rate: 10, lead_auth: 'browser_allowed' });
    expect(same.statusCode).toBe(200);
    expect(same.json().data).toMatchObject({ name: 'Acme Shoes', lead_auth: 'browser_allowed', commission_rate: 10 });
    const ownerChange = await call('PATCH', `/programs/${p.programId}`, owner(), { commission_rate: 12.5 });
    expect(ownerChange.statusCode).toBe(200);
    expect(ownerChange.json().data.commission_rate).toBe(12.5);
  });

  it('a click refused for its origin is listed on the program and in readiness, until the origin is allowed', async () => {
    const q = await createTestProgram(app, t.db, { allowed_origins: ['https://shop.acme.example'] }, p.workspace);
    const counts = await tableCounts(t.db);
    const click = (origin: string) =>
      app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { origin, 'x-forwarded-for': freshIp() }, payload: { affiliate_url: `https://shop.acme.example/?aff=${q.affCode}` } });
    for (let i = 0; i < 3; i++) expect((await click('https://www.acme-shop.example')).statusCode).toBe(403);
    expect(await tableCounts(t.db)).toEqual(counts);
    // The note is written off the click's path: wait for it.
    await expect.poll(async () => (await call('GET', `/programs/${q.programId}`, member())).json().data.blocked_origins.length).toBe(1);
    const blocked = (await call('GET', `/programs/${q.programId}`, member())).json().data.blocked_origins[0];
    expect(blocked).toMatchObject({ origin: 'https://www.acme-shop.example' });
    expect(blocked.attempts).toBeGreaterThanOrEqual(1);
    const readiness = async () =>
      (await app.inject({ method: 'GET', url: '/api/v1/programs/me/readiness', headers: { authorization: `Bearer ${q.apiKey}`, 'x-forwarded-for': freshIp() } })).json().data;
    const before = await readiness();
    expect(before.blocked_origins.map((b: { origin: string }) => b.origin)).toEqual(['https://www.acme-shop.example']);
    const check = before.checks.find((c: { name: string }) => c.name === 'allowed_origins');
    expect(check.ok).toBe(false);
    expect(check.detail).toContain('https://www.acme-shop.example');
    // Reported, never counted against ready: a stranger's made-up Origin cannot make the program look broken.
    expect(before.ready).toBe(before.checks.filter((c: { name: string; ok: boolean }) => c.name !== 'allowed_origins').every((c: { ok: boolean }) => c.ok));

    await call('POST', `/programs/${q.programId}/allowed-origins`, owner(), { origin: 'https://www.acme-shop.example' });
    expect((await call('GET', `/programs/${q.programId}`, member())).json().data.blocked_origins).toEqual([]);
    expect((await readiness()).checks.find((c: { name: string }) => c.name === 'allowed_origins').ok).toBe(true);
    expect((await click('https://www.acme-shop.example')).statusCode).toBe(200);
  });

  it('the partner list: searchable, with links; the CLI test partner never in it; totals null without a warehouse', async () => {
    const q = await createTestProgram(app, t.db, { domain: 'list.acme.example' }, p.workspace);
    const make = (name: string, email?: string, aff_code?: string) => call('POST', `/programs/${q.programId}/partners`, member(), { name, email, aff_code });
    await make('Ada Lovelace', 'ada@partners.example', 'ada-links');
    await make('Grace Hopper', 'grace@partners.example');
    // The CLI's synthetic events create the service's own test partner on this program.
    const synthetic = await app.inject({ method: 'POST', url: '/api/v1/cli/test-event', headers: { authorization: `Bearer ${q.apiKey}`, 'x-forwarded-for': freshIp() }, payload: { event_type: 'click' } });
    expect(synthetic.statusCode).toBe(200);
    const testPartner = await t.db.one<{ partner_id: number }>(sql('t.cli_fixture', `SELECT partner_id FROM cli_test_fixtures WHERE program_id = $1`), [q.programId]);
    expect(testPartner).toBeDefined();

    const list = async (query = '') => (await call('GET', `/programs/${q.programId}/partners${query}`, member())).json();
    const all = await list();
    expect(all.data.map((r: { name: string }) => r.name)).toEqual(['Grace Hopper', 'Ada Lovelace', 'Partner']);
    expect(all.meta).toEqual({ total: 3, shown: 3, totals: 'unavailable', totals_as_of: null });
    expect(all.data.some((r: { partner_id: number }) => r.partner_id === Number(testPartner!.partner_id))).toBe(false);
    expect(all.data[1]).toMatchObject({
      status: 'approved', email: 'ada@partners.example', clicks: null, commission: null,
      links: [{ aff_code: 'ada-links', enabled: true, referral_url: 'https://list.acme.example/?aff=ada-links' }],
    });
    expect((await list('?search=GRACE')).data.map((r: { name: string }) => r.name)).toEqual(['Grace Hopper']);
    expect((await list('?search=ada-li')).data.map((r: { name: string }) => r.name)).toEqual(['Ada Lovelace']);
    expect((await list('?search=%25')).data).toEqual([]);
    expect((await list('?status=pending')).data).toEqual([]);
    expect((await list('?limit=1')).meta).toEqual({ total: 3, shown: 1, totals: 'unavailable', totals_as_of: null });

    // Another link for a partner; never for the test partner or another program's.
    const ada = all.data[1].partner_id;
    const link = await call('POST', `/programs/${q.programId}/partners/${ada}/links`, member(), { aff_code: 'ada-second' });
    expect(link.statusCode).toBe(200);
    expect(link.json().data).toEqual({ id: expect.any(Number), aff_code: 'ada-second', enabled: true, referral_url: 'https://list.acme.example/?aff=ada-second', created_at: expect.any(String) });
    expect((await list('?search=ada')).data[0].links.map((l: { aff_code: string }) => l.aff_code)).toEqual(['ada-links', 'ada-second']);
    const taken = await call('POST', `/programs/${q.programId}/partners/${ada}/links`, member(), { aff_code: 'ada-second' });
    expect(taken.statusCode).toBe(409);
    for (const partnerId of [Number(testPartner!.partner_id), p.partnerId]) {
      const refused = await call('POST', `/programs/${q.programId}/partners/${partnerId}/links`, member(), {});
      expect(refused.statusCode).toBe(404);
      expect(refused.json().error.message).toBe(M.management.partnerNotFound);
    }
  });

  it("the partner list shows each partner's ledger balance per currency: the sum of its entries, refunds taken off", async () => {
    const m = await moneyProgram(app, t.db, { holdDays: 30 });
    const other = await call('POST', `/programs/${m.programId}/partners`, m.workspace.ownerToken, { name: 'No sales yet' });
    expect(other.statusCode).toBe(200);
    const balances = async () => {
      const res = await call('GET', `/programs/${m.programId}/partners`, m.workspace.memberToken);
      expect(res.statusCode).toBe(200);
      return Object.fromEntries(res.json().data.map((r: { name: string; balance: { currency: string }[] }) => [r.name, [...r.balance].sort(byCurrency)]));
    };
    expect(Object.values(await balances())).toEqual([[], []]);
    const first = await sale(app, m, 10_000);
    await sale(app, m, 5_000, 'EUR');
    const owed = await balances();
    // Inside the hold or not, a commission is owed: it is in the balance.
    expect(owed['No sales yet']).toEqual([]);
    const partner = Object.keys(owed).find((name) => name !== 'No sales yet')!;
    expect(owed[partner]).toEqual([{ currency: 'EUR', amount_minor: 500 }, { currency: 'USD', amount_minor: 1_000 }]);
    expect((await refund(app, m, first.transactionId)).statusCode).toBe(200);
    expect((await balances())[partner]).toEqual([{ currency: 'EUR', amount_minor: 500 }, { currency: 'USD', amount_minor: 0 }]);
  });

  it('the partner list refuses bad queries with the parameter named', async () => {
    for (const [query, message] of [
      ['?limit=0', M.management.partnerLimit],
      ['?limit=501', M.management.partnerLimit],
      ['?status=suspended', M.management.partnerStatus],
      [`?search=${'x'.repeat(101)}`, M.management.search],
      ['?sort=name', M.dashboard.unknownQuery(['sort'])],
    ]) {
      const res = await call('GET', `/programs/${p.programId}/partners${query}`, member());
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.message).toBe(message);
    }
  });
});
