/**
 * The audit log covers every brand-side write (issue 32, point 6): programs and their terms, key
 * and origins; partners and links (console and agent); the workspace's team; the ledger's money
 * moves. Each write appends its entry with the right before and after; a refused write or one
 * that changes nothing appends none.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { issueAgentKey } from '../../../domain/access/agent-keys.js';
import { addMember, createSession, createWorkspace } from '../../../domain/access/workspaces.js';
import { buildTestApp } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { moneyProgram, sale, type MoneyProgram } from '../../support/money.js';

interface Entry {
  program_id: number | null;
  actor: { type: string; id: string; label: string | null };
  action: string;
  target: { type: string; id: string };
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  request_id: string;
}

const count = sql('test.audit_writes_count', `SELECT count(*)::int AS n FROM audit_log`);

describe.each(databaseKinds())('audited writes on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let p: MoneyProgram;
  const entries = async () => (await t.db.one<{ n: number }>(count))!.n;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    p = await moneyProgram(app, t.db, { holdDays: 30, minimum: 1 });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const call = async (method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, headers: Record<string, string>, payload?: object) =>
    app.inject({ method, url, headers, payload });
  /** The newest entries of the program's log, newest first. */
  const newest = async (n: number): Promise<Entry[]> => {
    const res = await app.inject({ method: 'GET', url: `${p.base}/audit-log?limit=${n}`, headers: p.member });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data;
  };
  /** The write succeeds and appends exactly one entry, returned. */
  async function one(method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: object, headers = p.owner): Promise<Entry> {
    const before = await entries();
    const res = await call(method, url, { ...headers, 'x-request-id': `audit-${Math.random().toString(36).slice(2)}` }, payload);
    expect(res.statusCode, res.body).toBeLessThan(300);
    expect(await entries()).toBe(before + 1);
    const [entry] = await newest(1);
    expect(entry!.request_id).toBe(res.headers['x-request-id']);
    return entry!;
  }
  /** The call is answered `status` and appends nothing. */
  async function none(status: number, method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: object, headers = p.owner) {
    const before = await entries();
    const res = await call(method, url, headers, payload);
    expect(res.statusCode, res.body).toBe(status);
    expect(await entries()).toBe(before);
  }

  it("records the program's creation, key and payout settings, made by its owner", async () => {
    const log = (await newest(100)).filter((e) => e.program_id === p.programId).reverse();
    expect(log.map((e) => e.action)).toEqual(['program.created', 'program.api_key_generated', 'partner.created', 'program.payout_settings_updated']);
    const [created, key, partner, settings] = log as [Entry, Entry, Entry, Entry];
    expect(created).toMatchObject({ actor: { type: 'user' }, target: { type: 'program', id: String(p.programId) }, before: null, after: { name: 'Test program', commission_rate: 10 } });
    expect(key.before!.api_token_masked).toMatch(/^aff_\*{8}/);
    expect(key.after!.api_token_masked).toBe(`${p.apiKey.slice(0, 4)}********${p.apiKey.slice(-4)}`);
    expect(JSON.stringify(log)).not.toContain(p.apiKey);
    expect(partner).toMatchObject({ target: { type: 'partner', id: String(p.partnerId) }, after: { aff_code: p.affCode, status: 'approved' } });
    expect(settings).toMatchObject({ before: { commission_hold_days: 30 }, after: { commission_hold_days: 30, payout_minimum_minor: 1 } });
  });

  it('records settings, terms and origins; a member changing the terms is refused and recorded nowhere', async () => {
    const changed = await one('PATCH', p.base, { name: 'Renamed', commission_rate: 15 });
    expect(changed).toMatchObject({ action: 'program.updated', before: { name: 'Test program', commission_rate: 10 }, after: { name: 'Renamed', commission_rate: 15 } });
    await none(403, 'PATCH', p.base, { commission_rate: 50 }, p.member);
    await none(400, 'PATCH', p.base, { commission_rate: 'lots' });
    const added = await one('POST', `${p.base}/allowed-origins`, { origin: 'https://shop.test.example' });
    expect(added).toMatchObject({ action: 'program.origin_added', after: { allowed_origins: expect.arrayContaining(['https://shop.test.example']) } });
    expect(added.before!.allowed_origins).not.toContain('https://shop.test.example');
    // Adding it again changes nothing: no entry.
    await none(200, 'POST', `${p.base}/allowed-origins`, { origin: 'https://shop.test.example' });
    const removed = await one('DELETE', `${p.base}/allowed-origins?origin=${encodeURIComponent('https://shop.test.example')}`);
    expect(removed).toMatchObject({ action: 'program.origin_removed', before: added.after, after: added.before });
  });

  it('records links turned off and on and new links; the agent writes as its key', async () => {
    const off = await one('PATCH', `${p.base}/links/${p.affCode}`, { enabled: false });
    expect(off).toMatchObject({ action: 'link.disabled', target: { type: 'link', id: p.affCode }, before: { enabled: true }, after: { enabled: false } });
    await none(200, 'PATCH', `${p.base}/links/${p.affCode}`, { enabled: false });
    const link = await one('POST', `${p.base}/partners/${p.partnerId}/links`, { aff_code: `audit-link-${kind}` });
    expect(link).toMatchObject({ action: 'link.created', before: null, after: { aff_code: `audit-link-${kind}`, enabled: true, partner_id: p.partnerId } });

    const agent = await issueAgentKey(t.db, p.workspace.workspaceId, 'Audit agent', ['partners:write', 'links:write']);
    const asAgent = { authorization: `Bearer ${agent.agentKey}` };
    const agentBase = `/api/agent/v1/programs/${p.programId}`;
    const on = await one('PATCH', `${agentBase}/links/${p.affCode}`, { enabled: true }, asAgent);
    expect(on).toMatchObject({ action: 'link.enabled', actor: { type: 'agent', id: String(agent.id), label: 'Audit agent' }, before: { enabled: false }, after: { enabled: true } });
    const partner = { name: 'Agent partner', aff_code: `audit-agent-${kind}` };
    const created = await one('POST', `${agentBase}/partners`, partner, asAgent);
    expect(created).toMatchObject({ action: 'partner.created', actor: { type: 'agent' }, after: { name: 'Agent partner', aff_code: partner.aff_code } });
    // The idempotent replay writes nothing.
    await none(200, 'POST', `${agentBase}/partners`, partner, asAgent);
  });

  it("records the workspace's team changes in its programs' log", async () => {
    const ws = p.workspace.workspaceId;
    const email = `invitee-${kind}-${Date.now()}@test.example`;
    const invited = await call('POST', `/api/tracking/workspaces/${ws}/invites`, p.owner, { email, role: 'member' });
    expect(invited.statusCode, invited.body).toBe(200);
    const [entry] = await newest(1);
    expect(entry).toMatchObject({ program_id: null, action: 'team.invite_created', target: { type: 'invite', id: String(invited.json().data.id) }, after: { email, role: 'member' } });
    const token = new URL(invited.json().data.invite_url).hash.slice('#invite='.length);
    expect(JSON.stringify(entry)).not.toContain(token);

    const revoked = await one('DELETE', `/api/tracking/workspaces/${ws}/invites/${invited.json().data.id}`);
    expect(revoked).toMatchObject({ action: 'team.invite_revoked', before: { email }, after: null });
    await none(404, 'DELETE', `/api/tracking/workspaces/${ws}/invites/${invited.json().data.id}`);

    const again = await call('POST', `/api/tracking/workspaces/${ws}/invites`, p.owner, { email, role: 'member' });
    const userId = await addMember(t.db, await createWorkspace(t.db, `Invitee's own ${kind}`), email, 'owner');
    const invitee = { authorization: `Bearer ${await createSession(t.db, userId)}` };
    const accepted = await one('POST', '/api/tracking/invites/accept', { token: new URL(again.json().data.invite_url).hash.slice('#invite='.length) }, invitee);
    expect(accepted).toMatchObject({ program_id: null, action: 'team.invite_accepted', actor: { type: 'user', id: String(userId), label: email }, after: { user_id: userId, role: 'member' } });

    const promoted = await one('PATCH', `/api/tracking/workspaces/${ws}/members/${userId}`, { role: 'owner' });
    expect(promoted).toMatchObject({ action: 'team.role_changed', before: { role: 'member' }, after: { role: 'owner' } });
    const removed = await one('DELETE', `/api/tracking/workspaces/${ws}/members/${userId}`);
    expect(removed).toMatchObject({ action: 'team.member_removed', target: { type: 'member', id: String(userId) }, before: { role: 'owner' }, after: null });
    // A member may not change the team.
    await none(403, 'POST', `/api/tracking/workspaces/${ws}/invites`, { email: 'x@test.example', role: 'member' }, p.member);
  });

  it("records the ledger's money moves: approve, reject, adjust, payout method, payouts made, paid and cancelled", async () => {
    const first = await sale(app, p, 10_000);
    const approved = await one('POST', `${p.base}/commissions/${first.commissionId}/approve`, { reason: 'checked' });
    expect(approved).toMatchObject({ action: 'commission.approved', target: { type: 'commission', id: first.commissionId }, before: { status: 'pending' }, after: { status: 'approved', reason: 'checked' } });
    const second = await sale(app, p, 20_000);
    const rejected = await one('POST', `${p.base}/commissions/${second.commissionId}/reject`, { reason: 'fraud' });
    expect(rejected).toMatchObject({ action: 'commission.rejected', before: { status: 'pending' }, after: { status: 'reversed' } });
    // A refused decision (a reversed commission cannot be approved) appends nothing.
    await none(409, 'POST', `${p.base}/commissions/${second.commissionId}/approve`, { reason: 'oops' });
    await none(403, 'POST', `${p.base}/commissions/${first.commissionId}/reject`, { reason: 'member' }, p.member);

    const adjustment = { amount_minor: 500, currency: 'USD', reason: 'bonus' };
    const key = { ...p.owner, 'idempotency-key': `audit-${kind}-${Date.now()}` };
    const adjusted = await one('POST', `${p.base}/partners/${p.partnerId}/adjustments`, adjustment, key);
    expect(adjusted).toMatchObject({ action: 'ledger.adjusted', target: { type: 'ledger_entry' }, before: null, after: { kind: 'manual', amount_minor: 500, currency: 'USD', reason: 'bonus' } });
    await none(200, 'POST', `${p.base}/partners/${p.partnerId}/adjustments`, adjustment, key);

    const method = await one('PUT', `${p.base}/partners/${p.partnerId}/payout-method`, { method: 'paypal', email: 'partner@test.example' });
    expect(method).toMatchObject({ action: 'payout_method.updated', target: { type: 'partner', id: String(p.partnerId) }, before: null, after: { method: 'paypal', email: 'partner@test.example' } });

    const run = await one('POST', `${p.base}/payouts`, {});
    // 15 % (the terms changed above) of 10,000, and the adjustment of 500.
    expect(run).toMatchObject({ action: 'payout.created', target: { type: 'payout' }, before: null, after: { status: 'pending', currency: 'USD', amount_minor: 2_000 } });
    const payoutId = run.target.id;
    const paid = await one('POST', `${p.base}/payouts/${payoutId}/mark-paid`, { reference: 'BATCH-1' });
    expect(paid).toMatchObject({ action: 'payout.paid', before: { status: 'pending', reference: null }, after: { status: 'paid', reference: 'BATCH-1' } });
    await none(409, 'POST', `${p.base}/payouts/${payoutId}/cancel`, {});

    const third = await sale(app, p, 30_000);
    await one('POST', `${p.base}/commissions/${third.commissionId}/approve`, { reason: 'ok' });
    const next = await one('POST', `${p.base}/payouts`, {});
    const cancelled = await one('POST', `${p.base}/payouts/${next.target.id}/cancel`, {});
    expect(cancelled).toMatchObject({ action: 'payout.canceled', before: { status: 'pending' }, after: { status: 'canceled' } });
  });
});
