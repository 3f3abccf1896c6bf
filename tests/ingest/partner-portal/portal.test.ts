/**
 * Issue 31, points 1, 2 and 6 (partner-program.md, "Partners, applications and the portal"), on
 * PGlite and Postgres: applications (JSON and the HTML form, duplicates, limits, bad input writing
 * nothing), owners' approve / reject / ban with their effects and events, one-time portal links and
 * sessions (expired, reused, banned, signed out), and every /api/partner/v1 route with two partners
 * of one program and one partner in two programs: each sees only its own records, never a
 * customer's personal data.
 */
import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { sql, type Database } from '../../../core/db.js';
import { createLogger } from '../../../core/log.js';
import { newPortalLinkToken } from '../../../domain/partners/portal-sessions.js';
import { webhookEventsOf } from '../../../schemas/webhooks.js';
import { freshIp } from '../../support/app.js';
import { databaseKinds } from '../../support/databases.js';
import { moneyProgram, moneyTestApp } from '../../support/money.js';

type Headers = Record<string, string>;

const counts = (db: Database) =>
  db.one<Record<string, number>>(
    sql(
      't.portal_counts',
      `SELECT (SELECT count(*)::int FROM partners) AS partners, (SELECT count(*)::int FROM partner_programs) AS partner_programs,
              (SELECT count(*)::int FROM partner_applications) AS applications, (SELECT count(*)::int FROM outbox) AS outbox,
              (SELECT count(*)::int FROM referral_links) AS links, (SELECT count(*)::int FROM audit_log) AS audit,
              (SELECT count(*)::int FROM partner_portal_links) AS portal_links, (SELECT count(*)::int FROM partner_portal_sessions) AS sessions,
              (SELECT count(*)::int FROM partner_payout_methods) AS methods,
              (SELECT count(*)::int FROM partner_programs WHERE status <> 'approved') AS not_approved`,
    ),
  ) as Promise<Record<string, number>>;

const events = async (db: Database, type: string) =>
  db.many<{ payload: Record<string, unknown> }>(sql('t.portal_events', `SELECT payload FROM outbox WHERE event_type = $1 ORDER BY id`), [type]);

const cookieOf = (res: LightMyRequestResponse): string => {
  const set = String(res.headers['set-cookie'] ?? '');
  const m = /svc_portal=([^;]*)/.exec(set);
  if (!m) throw new Error(`no portal cookie: ${set}`);
  return `svc_portal=${m[1]}`;
};

let emails = 0;
const email = (tag: string) => `${tag}-${Date.now()}-${(emails += 1)}@partner.example`;

describe('the portal tokens in logs', () => {
  it('redacts sign-in link and session tokens in any log line (a sign-in URL in a request log)', () => {
    const lines: string[] = [];
    const log = createLogger('info', { write: (line: string) => lines.push(line) });
    const link = newPortalLinkToken();
    log.info({ url: `/portal/sign-in?token=${link}`, cookie: 'svc_portal=pps_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, 'request');
    expect(lines.join('')).not.toContain(link.slice(4));
    expect(lines.join('')).not.toContain('pps_AAAA');
    expect(lines.join('')).toContain('ppl_[redacted]');
  });
});

for (const kind of databaseKinds()) {
  describe(`the partner program (${kind})`, () => {
    const t = moneyTestApp(kind);

    async function openProgram(owner: Headers, programId: number) {
      const res = await t.app.inject({ method: 'PATCH', url: `/api/tracking/programs/${programId}`, headers: owner, payload: { applications_open: true } });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().data.applications_open).toBe(true);
    }

    const apply = (payload: Record<string, unknown>, ip = freshIp()) =>
      t.app.inject({ method: 'POST', url: '/api/v1/partners/apply', headers: { 'x-forwarded-for': ip }, payload });

    async function applied(programId: number, who: string) {
      const res = await apply({ program_id: programId, name: `Partner ${who}`, email: email(who), website: 'https://blog.example/me', message: 'Hello' });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().data.partner_id as number;
    }

    const decide = (owner: Headers, programId: number, partnerId: number, what: string) =>
      t.app.inject({ method: 'POST', url: `/api/tracking/programs/${programId}/partners/${partnerId}/${what}`, headers: owner });

    async function portalLink(owner: Headers, programId: number, partnerId: number): Promise<string> {
      const res = await decide(owner, programId, partnerId, 'portal-link');
      expect(res.statusCode, res.body).toBe(200);
      return new URL(res.json().data.url as string).search;
    }

    async function signIn(owner: Headers, programId: number, partnerId: number): Promise<Headers> {
      const search = await portalLink(owner, programId, partnerId);
      const res = await t.app.inject({ method: 'GET', url: `/portal/sign-in${search}`, headers: { 'x-forwarded-for': '203.0.113.7' } });
      expect(res.statusCode, res.body).toBe(303);
      expect(res.headers.location).toBe('/portal');
      expect(String(res.headers['set-cookie'])).toMatch(/HttpOnly; SameSite=Lax/);
      return { cookie: cookieOf(res) };
    }

    it('takes applications only when applications_open, refuses duplicates and bad input politely, and writes nothing then', async () => {
      const p = await moneyProgram(t.app, t.db);
      // Closed by default: 404, like an unknown program.
      expect((await t.app.inject({ method: 'GET', url: `/api/tracking/programs/${p.programId}`, headers: p.owner })).json().data.applications_open).toBe(false);
      const before = await counts(t.db);
      const closed = await apply({ program_id: p.programId, name: 'A', email: email('closed') });
      expect(closed.statusCode).toBe(404);
      expect(closed.json().error.message).toBe('This program does not take applications');
      expect((await apply({ program_id: 999_999_999, name: 'A', email: email('x') })).statusCode).toBe(404);
      expect((await t.app.inject({ method: 'GET', url: `/apply/${p.programId}` })).statusCode).toBe(404);
      await openProgram(p.owner, p.programId);
      const afterOpen = await counts(t.db);

      // Bad input: malformed email, oversize fields, unknown field, bad website: 400, nothing written.
      for (const [payload, message] of [
        [{ program_id: p.programId, name: 'A', email: 'not-an-email' }, 'email must be a valid email address of at most 254 characters'],
        [{ program_id: p.programId, name: 'A', email: `${'a'.repeat(250)}@x.example` }, 'email must be a valid email address of at most 254 characters'],
        [{ program_id: p.programId, name: 'x'.repeat(201), email: email('long') }, 'name is required and must be a string of 1 to 200 characters'],
        [{ program_id: p.programId, name: 'A', email: email('msg'), message: 'm'.repeat(2001) }, 'message must be a string of at most 2000 characters'],
        [{ program_id: p.programId, name: 'A', email: email('web'), website: 'javascript:alert(1)' }, 'website must be an http or https URL of at most 500 characters'],
        [{ program_id: p.programId, email: email('noname') }, 'name is required and must be a string of 1 to 200 characters'],
        [{ program_id: 'one', name: 'A', email: email('pid') }, 'program_id must be a positive integer'],
      ] as const) {
        const res = await apply(payload);
        expect(res.statusCode, JSON.stringify(payload).slice(0, 80)).toBe(400);
        expect(res.json().error.message).toBe(message);
      }
      expect(await counts(t.db)).toEqual({ ...afterOpen });
      expect(afterOpen.partners).toBe(before.partners);

      const address = email('Dup');
      const first = await apply({ program_id: p.programId, name: 'Dup Partner', email: address, website: 'https://dup.example' });
      expect(first.statusCode, first.body).toBe(200);
      expect(first.json().data).toMatchObject({ program_id: p.programId, status: 'pending' });
      const applied1 = await events(t.db, 'partner.applied');
      expect(applied1.at(-1)!.payload).toMatchObject({ program_id: p.programId, email: address.toLowerCase(), website: 'https://dup.example', name: 'Dup Partner' });
      const afterFirst = await counts(t.db);
      // The same email in another case: 409 with a clear message, nothing written.
      const again = await apply({ program_id: p.programId, name: 'Dup Again', email: address.toUpperCase() });
      expect(again.statusCode).toBe(409);
      expect(again.json().error.message).toMatch(/already exists for this program/);
      expect(await counts(t.db)).toEqual(afterFirst);
      // A partner the brand created with that email counts too.
      const created = await t.app.inject({ method: 'POST', url: `${p.base}/partners`, headers: p.owner, payload: { name: 'Made', email: 'made@brand-made.example' } });
      expect(created.statusCode).toBe(200);
      expect((await apply({ program_id: p.programId, name: 'Made', email: 'MADE@brand-made.example' })).statusCode).toBe(409);
      // The member sees the pending applicant in the partner list.
      const list = await t.app.inject({ method: 'GET', url: `${p.base}/partners?status=pending`, headers: p.member });
      expect(list.json().data.map((r: { email: string }) => r.email)).toContain(address.toLowerCase());
      // And what the applicant sent, in the program's applications (members read; another brand cannot).
      const applications = await t.app.inject({ method: 'GET', url: `${p.base}/applications?status=pending`, headers: p.member });
      expect(applications.statusCode, applications.body).toBe(200);
      expect(applications.json().data).toEqual([
        expect.objectContaining({ name: 'Dup Partner', email: address.toLowerCase(), website: 'https://dup.example', message: null, status: 'pending' }),
      ]);
      const stranger = await moneyProgram(t.app, t.db);
      expect((await t.app.inject({ method: 'GET', url: `${p.base}/applications`, headers: stranger.owner })).statusCode).toBe(403);
      expect((await t.app.inject({ method: 'GET', url: `${p.base}/applications?status=gone`, headers: p.owner })).statusCode).toBe(400);
    });

    it('rate limits applications per client address', async () => {
      const p = await moneyProgram(t.app, t.db);
      await openProgram(p.owner, p.programId);
      const ip = freshIp();
      const statuses: number[] = [];
      for (let i = 0; i < 11; i += 1) statuses.push((await apply({ program_id: p.programId, name: 'R', email: 'bad' }, ip)).statusCode);
      expect(statuses.slice(0, 10).every((s) => s === 400)).toBe(true);
      expect(statuses[10]).toBe(429);
      expect((await apply({ program_id: p.programId, name: 'R', email: 'bad' }, freshIp())).statusCode).toBe(400);
    });

    it('serves the application form without JavaScript and answers its post with a page', async () => {
      const p = await moneyProgram(t.app, t.db);
      await openProgram(p.owner, p.programId);
      const form = await t.app.inject({ method: 'GET', url: `/apply/${p.programId}` });
      expect(form.statusCode).toBe(200);
      expect(form.headers['content-type']).toMatch(/text\/html/);
      expect(form.body).toContain('name="viewport"');
      expect(form.body).toContain(`<form method="post" action="/apply/${p.programId}"`);
      expect(form.body).not.toContain('<script');
      const address = email('form');
      const post = (body: string) =>
        t.app.inject({ method: 'POST', url: `/apply/${p.programId}`, headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': freshIp() }, payload: body });
      const ok = await post(new URLSearchParams({ name: 'Form <b>Partner</b>', email: address, website: '', message: '' }).toString());
      expect(ok.statusCode, ok.body).toBe(200);
      expect(ok.body).toContain('Application sent');
      expect(ok.body).toContain('Form &#60;b&#62;Partner&#60;/b&#62;');
      const dup = await post(new URLSearchParams({ name: 'Form', email: address.toUpperCase() }).toString());
      expect(dup.statusCode).toBe(409);
      expect(dup.body).toContain('already applied');
      const before = await counts(t.db);
      const bad = await post(new URLSearchParams({ name: 'Form', email: 'nope' }).toString());
      expect(bad.statusCode).toBe(400);
      expect(bad.body).toContain('role="alert"');
      expect(bad.body).toContain('value="nope"');
      expect(await counts(t.db)).toEqual(before);
    });

    it('lets owners approve, reject and ban, with links, events, audit entries; members and other programs are refused', async () => {
      const p = await moneyProgram(t.app, t.db);
      const other = await moneyProgram(t.app, t.db);
      await openProgram(p.owner, p.programId);
      const partnerId = await applied(p.programId, 'decide');
      const before = await counts(t.db);
      // A member: 403 naming owners; another program's owner: 403; the partner under another program: 404; unknown: 404.
      const member = await decide(p.member, p.programId, partnerId, 'approve');
      expect(member.statusCode).toBe(403);
      expect(member.json().error.message).toMatch(/Only a workspace owner can approve, reject or ban partners/);
      expect((await decide(other.owner, p.programId, partnerId, 'approve')).statusCode).toBe(403);
      expect((await decide(other.owner, other.programId, partnerId, 'approve')).statusCode).toBe(404);
      expect((await decide(p.owner, p.programId, 987_654_321, 'approve')).statusCode).toBe(404);
      expect((await decide(p.owner, p.programId, partnerId, 'portal-link')).statusCode).toBe(409);
      expect(await counts(t.db)).toEqual(before);

      const ok = await decide(p.owner, p.programId, partnerId, 'approve');
      expect(ok.statusCode, ok.body).toBe(200);
      expect(ok.json().data).toMatchObject({ status: 'approved', changed: true });
      const code = ok.json().data.link_created as string;
      expect(code).toMatch(/^[A-Za-z0-9]{8}$/);
      const approvedEvent = (await events(t.db, 'partner.approved')).at(-1)!;
      expect(approvedEvent.payload).toMatchObject({ partner_id: partnerId, program_id: p.programId });
      // Outgoing webhooks deliver it as partner.approved (and the application as partner.applied).
      const internal = (payload: Record<string, unknown>) => ({ eventId: '0b3c0e6e-7f55-4b8e-9d35-1c1f1e0c4d2a', programId: p.programId, occurredAt: new Date().toISOString(), test: false, payload });
      const [hook] = webhookEventsOf('partner.approved', internal(approvedEvent.payload) as never);
      expect(JSON.parse(hook!.body)).toMatchObject({ type: 'partner.approved', program_id: p.programId, data: { partner_id: partnerId, test: false } });
      const [appliedHook] = webhookEventsOf('partner.applied', internal((await events(t.db, 'partner.applied')).at(-1)!.payload) as never);
      expect(JSON.parse(appliedHook!.body)).toMatchObject({ type: 'partner.applied', data: { partner_id: partnerId, website: 'https://blog.example/me' } });
      // Approving again changes nothing; rejecting an approved partner is 409.
      const afterApprove = await counts(t.db);
      expect((await decide(p.owner, p.programId, partnerId, 'approve')).json().data.changed).toBe(false);
      expect((await decide(p.owner, p.programId, partnerId, 'reject')).statusCode).toBe(409);
      expect(await counts(t.db)).toEqual(afterApprove);
      const audit = await t.app.inject({ method: 'GET', url: `${p.base}/audit-log`, headers: p.owner });
      expect(audit.json().data.map((e: { action: string }) => e.action)).toContain('partner.approved');

      // The new link earns: a click works.
      const click = await t.app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { 'x-forwarded-for': freshIp() }, payload: { affiliate_url: `https://shop.test.example/?aff=${code}` } });
      expect(click.statusCode, click.body).toBe(200);
      const sale = await t.app.inject({
        method: 'POST',
        url: '/api/v1/track/sale',
        headers: { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': freshIp() },
        payload: { transaction_id: `pi_portal_${Date.now()}`, amount_cents: 10_000, click_id: click.json().click_id, customer_key: `ck-${Date.now()}` },
      });
      expect(sale.statusCode, sale.body).toBe(200);
      const session = await signIn(p.owner, p.programId, partnerId);

      // Ban: links off at once (410 link_disabled), commissions held, portal sessions ended.
      const ban = await decide(p.owner, p.programId, partnerId, 'ban');
      expect(ban.statusCode, ban.body).toBe(200);
      expect(ban.json().data).toMatchObject({ status: 'banned', links_disabled: 1, commissions_held: 1, sessions_revoked: 1 });
      const refused = await t.app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { 'x-forwarded-for': freshIp() }, payload: { affiliate_url: `https://shop.test.example/?aff=${code}` } });
      expect(refused.statusCode).toBe(410);
      expect(refused.json().error.code).toBe('link_disabled');
      const held = await t.db.one<{ status: string }>(sql('t.portal_held', `SELECT status FROM commissions WHERE partner_id = $1`), [partnerId]);
      expect(held!.status).toBe('held');
      expect((await t.app.inject({ method: 'GET', url: '/api/partner/v1/me', headers: session })).statusCode).toBe(401);
      expect((await decide(p.owner, p.programId, partnerId, 'approve')).statusCode).toBe(409);

      // Reject a pending one.
      const other2 = await applied(p.programId, 'rejectme');
      expect((await decide(p.owner, p.programId, other2, 'reject')).json().data.status).toBe('rejected');
      expect((await events(t.db, 'partner_program.changed')).at(-1)!.payload).toMatchObject({ partner_id: other2, status: 'rejected' });
    });

    it('signs a partner in once with a 24-hour link; expired, reused or unknown links answer a clear page', async () => {
      const p = await moneyProgram(t.app, t.db);
      const search = await portalLink(p.owner, p.programId, p.partnerId);
      const stored = await t.db.many<{ token_hash: string }>(sql('t.portal_link_hash', `SELECT token_hash FROM partner_portal_links`));
      const token = new URLSearchParams(search).get('token')!;
      expect(stored.some((r) => r.token_hash === token)).toBe(false);
      const first = await t.app.inject({ method: 'GET', url: `/portal/sign-in/${token}`, headers: { 'x-forwarded-for': '198.51.100.9' } });
      expect(first.statusCode).toBe(303);
      const cookie = cookieOf(first);
      const address = await t.db.one(sql('t.portal_addr', `SELECT 1 FROM partner_sign_in_addresses WHERE partner_id = $1 AND client_ip = '198.51.100.9'::inet`), [p.partnerId]);
      expect(address).toBeTruthy();
      const page = await t.app.inject({ method: 'GET', url: '/portal', headers: { cookie } });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('name="viewport"');

      const reused = await t.app.inject({ method: 'GET', url: `/portal/sign-in${search}` });
      expect(reused.statusCode).toBe(410);
      expect(reused.headers['content-type']).toMatch(/text\/html/);
      expect(reused.body).toContain('already used');

      const late = await portalLink(p.owner, p.programId, p.partnerId);
      await t.db.many(sql('t.portal_expire', `UPDATE partner_portal_links SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`));
      const before = await counts(t.db);
      const expired = await t.app.inject({ method: 'GET', url: `/portal/sign-in${late}` });
      expect(expired.statusCode).toBe(410);
      expect(expired.body).toContain('has expired');
      const unknown = await t.app.inject({ method: 'GET', url: '/portal/sign-in?token=ppl_nothing' });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.body).toContain('not valid');
      expect((await t.app.inject({ method: 'GET', url: '/portal/sign-in' })).statusCode).toBe(404);
      expect(await counts(t.db)).toEqual(before);

      // Sign-out ends the session at once.
      const out = await t.app.inject({ method: 'POST', url: '/portal/sign-out', headers: { cookie } });
      expect(out.statusCode).toBe(200);
      expect((await t.app.inject({ method: 'GET', url: '/api/partner/v1/me', headers: { cookie } })).statusCode).toBe(401);
      expect((await t.app.inject({ method: 'GET', url: '/portal', headers: { cookie } })).statusCode).toBe(401);
      // The stored session is only a hash.
      const sessions = await t.db.many<{ token_hash: string }>(sql('t.portal_sessions', `SELECT token_hash FROM partner_portal_sessions`));
      expect(sessions.every((s) => /^[0-9a-f]{64}$/.test(s.token_hash))).toBe(true);
    });

    it('shows each partner only its own records in every /api/partner/v1 route', async () => {
      // Program 1 with partners A and B; program 2 of the same workspace where A applied too.
      const p1 = await moneyProgram(t.app, t.db);
      const p2 = await moneyProgram(t.app, t.db);
      const sameWs = await t.app.inject({
        method: 'POST',
        url: '/api/tracking/programs',
        headers: p1.owner,
        payload: { name: 'Second', domain: 'second.test.example', commission_type: 'percent', commission_rate: 20, workspace_id: p1.workspace.workspaceId, fraud_rules: { self_referral: false, click_flood: false, fast_conversion: false, partner_ip: false } },
      });
      expect(sameWs.statusCode, sameWs.body).toBe(200);
      const q2 = sameWs.json().data.id as number;
      await openProgram(p1.owner, p1.programId);
      await openProgram(p1.owner, q2);
      const aEmail = email('A');
      const apply1 = await apply({ program_id: p1.programId, name: 'Partner A', email: aEmail });
      const a = apply1.json().data.partner_id as number;
      const apply2 = await apply({ program_id: q2, name: 'Partner A', email: aEmail.toUpperCase() });
      expect(apply2.json().data.partner_id).toBe(a);
      const b = await applied(p1.programId, 'B');
      for (const [prog, partner] of [[p1.programId, a], [q2, a], [p1.programId, b]] as const) expect((await decide(p1.owner, prog, partner, 'approve')).statusCode).toBe(200);

      // One sale per partner and program, customer keys that must not leak.
      const codes = async (prog: number, partner: number) =>
        (await t.db.many<{ aff_code: string }>(sql('t.portal_codes', `SELECT aff_code FROM referral_links WHERE program_id = $1 AND partner_id = $2`), [prog, partner])).map((r) => r.aff_code);
      const keyOf = { [p1.programId]: p1.apiKey } as Record<number, string>;
      const k2 = await t.app.inject({ method: 'POST', url: `/api/tracking/programs/${q2}/api-key`, headers: p1.owner });
      keyOf[q2] = k2.json().data.api_key;
      const sale = async (prog: number, partner: number, amount: number, customer: string) => {
        const [code] = await codes(prog, partner);
        const click = await t.app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { 'x-forwarded-for': freshIp() }, payload: { affiliate_url: `https://shop.test.example/?aff=${code}` } });
        const auth = { authorization: `Bearer ${keyOf[prog]}`, 'x-forwarded-for': freshIp() };
        const lead = await t.app.inject({
          method: 'POST',
          url: '/api/v1/track/lead',
          headers: auth,
          payload: { click_id: click.json().click_id, customer_key: customer, email: `secret-${customer}@buyer.example` },
        });
        expect(lead.statusCode, lead.body).toBe(200);
        const res = await t.app.inject({
          method: 'POST',
          url: '/api/v1/track/sale',
          headers: auth,
          payload: { transaction_id: `pi_iso_${prog}_${partner}_${Date.now()}`, amount_cents: amount, customer_key: customer },
        });
        expect(res.statusCode, res.body).toBe(200);
      };
      await sale(p1.programId, a, 10_000, 'customer-of-a-in-p1');
      await sale(q2, a, 20_000, 'customer-of-a-in-q2');
      await sale(p1.programId, b, 30_000, 'customer-of-b-in-p1');

      const sa = await signIn(p1.owner, p1.programId, a);
      const sb = await signIn(p1.owner, p1.programId, b);
      const get = (url: string, h: Headers) => t.app.inject({ method: 'GET', url: `/api/partner/v1${url}`, headers: h });

      // Without a session every route is 401.
      for (const url of ['/me', '/programs', `/programs/${p1.programId}/performance`, '/links', '/commissions', '/balance', '/payouts', '/statements/2026-01']) {
        const res = await get(url, {});
        expect(res.statusCode, url).toBe(401);
        expect(res.json().error.message).toMatch(/partner portal session is required/);
      }
      expect((await get('/me', { cookie: 'svc_portal=pps_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })).statusCode).toBe(401);

      expect((await get('/me', sa)).json().data).toMatchObject({ partner_id: a, email: aEmail.toLowerCase() });
      expect((await get('/me', sb)).json().data.partner_id).toBe(b);
      expect((await get('/programs', sa)).json().data.map((p: { program_id: number }) => p.program_id).sort()).toEqual([p1.programId, q2].sort());
      expect((await get('/programs', sb)).json().data.map((p: { program_id: number }) => p.program_id)).toEqual([p1.programId]);

      const linksA = (await get('/links?sub1=yt&sub2=video%201', sa)).json().data as { program_id: number; aff_code: string; referral_url: string }[];
      expect(linksA.map((l) => l.aff_code).sort()).toEqual([...(await codes(p1.programId, a)), ...(await codes(q2, a))].sort());
      expect(linksA[0]!.referral_url).toMatch(/[?&]sub1=yt&sub2=video\+1/);
      const linksB = (await get('/links', sb)).json().data as { aff_code: string }[];
      expect(linksB.map((l) => l.aff_code)).toEqual(await codes(p1.programId, b));

      const commissionsA = (await get('/commissions', sa)).json().data as { amount_minor: number; program_id: number; customer: string }[];
      expect(commissionsA.map((c) => c.amount_minor).sort()).toEqual([1_000, 4_000]);
      expect((await get(`/commissions?program_id=${q2}`, sa)).json().data).toHaveLength(1);
      const commissionsB = (await get('/commissions', sb)).json().data as { amount_minor: number; customer: string }[];
      expect(commissionsB.map((c) => c.amount_minor)).toEqual([3_000]);
      for (const res of [await get('/commissions', sa), await get('/commissions', sb), await get('/balance', sa), await get('/statements/2026-01', sa)]) {
        expect(res.body).not.toContain('customer-of');
        expect(res.body).not.toContain('secret-customer');
        expect(res.body).not.toContain('@buyer.example');
      }
      expect(commissionsB[0]!.customer).toBe(`cu${'*'.repeat(17)}`);

      const balanceA = (await get('/balance', sa)).json().data as { program_id: number; balances: { pending: number }[] }[];
      expect(Object.fromEntries(balanceA.map((x) => [x.program_id, x.balances[0]!.pending]))).toEqual({ [p1.programId]: 1_000, [q2]: 4_000 });
      expect((await get('/balance', sb)).json().data).toEqual([{ program_id: p1.programId, balances: [expect.objectContaining({ pending: 3_000 })] }]);
      expect((await get('/payouts', sa)).json().data).toEqual([]);
      const period = new Date().toISOString().slice(0, 7);
      const statementB = (await get(`/statements/${period}`, sb)).json().data as { lines: { partner_id: number; commissions: number }[] }[];
      expect(statementB).toHaveLength(1);
      expect(statementB[0]!.lines.map((l) => [l.partner_id, l.commissions])).toEqual([[b, 3_000]]);
      const statementA = (await get(`/statements/${period}`, sa)).json().data as { lines: { partner_id: number }[] }[];
      expect(statementA.flatMap((s) => s.lines.map((l) => l.partner_id))).toEqual([a, a]);

      // Another program's id, or a program the partner is not approved in: 404, like an unknown one.
      for (const url of [`/programs/${q2}/performance`, `/commissions?program_id=${q2}`, `/balance?program_id=${q2}`, `/payouts?program_id=${q2}`, `/links?program_id=${q2}`, `/statements/${period}?program_id=${q2}`]) {
        expect((await get(url, sb)).statusCode, url).toBe(404);
      }
      for (const url of [`/programs/${p2.programId}/performance`, `/commissions?program_id=${p2.programId}`, '/programs/999999/performance']) {
        expect((await get(url, sa)).statusCode, url).toBe(404);
      }
      expect((await get('/statements/2026-13', sa)).statusCode).toBe(400);
      expect((await get('/commissions?limit=1000', sa)).statusCode).toBe(400);
      expect((await get(`/links?sub1=${'x'.repeat(101)}`, sa)).statusCode).toBe(400);

      // Payout method: PATCH sets the partner's own; bad input 400 and nothing written.
      const patch = (h: Headers, payload: object) => t.app.inject({ method: 'PATCH', url: '/api/partner/v1/payout-method', headers: h, payload });
      const before = await counts(t.db);
      expect((await patch(sa, { method: 'paypal', email: 'nope' })).statusCode).toBe(400);
      expect((await patch(sa, { method: 'bitcoin' })).statusCode).toBe(400);
      expect((await patch(sa, { method: 'manual', note: 'n'.repeat(501) })).statusCode).toBe(400);
      expect((await patch(sa, { method: 'paypal', email: 'a@pay.example', extra: 1 })).statusCode).toBe(400);
      expect(await counts(t.db)).toEqual(before);
      expect((await patch(sa, { method: 'paypal', email: 'a@pay.example' })).json().data).toEqual({ method: 'paypal', email: 'a@pay.example' });
      expect((await patch(sb, { method: 'wise', email: 'b@wise.example', name: 'B Holder' })).json().data).toMatchObject({ method: 'wise', receiver_type: 'PERSON' });
      expect((await get('/me', sa)).json().data.payout_method).toEqual({ method: 'paypal', email: 'a@pay.example' });
      expect((await get('/me', sb)).json().data.payout_method).toMatchObject({ method: 'wise', email: 'b@wise.example' });
      const brandView = await t.app.inject({ method: 'GET', url: `/api/tracking/programs/${p1.programId}/audit-log`, headers: p1.owner });
      expect(brandView.json().data.map((e: { action: string }) => e.action)).toContain('payout_method.updated');
    });
  });
}
