/**
 * Issue 30, points 1, 2, 3 and 6, on PGlite and Postgres: commission rule versions (a term change
 * mid-month gives two versions, each visible on the commissions it computed and their ledger
 * entries; listed with who changed what), partner groups (terms that override the program's, a
 * moved partner earns its new group's terms from then on, delete refused while partners are in
 * it), recurring_months (a later renewal is recorded with its reason and earns nothing), and every
 * bad input answered in the platform envelope with nothing written.
 */
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { sql, type Database } from '../../../core/db.js';
import { issueAgentKey } from '../../../domain/access/agent-keys.js';
import { M } from '../../../ingest/http/messages.js';
import { createTestProgram, freshIp, type TestProgram } from '../../support/app.js';
import { databaseKinds } from '../../support/databases.js';
import { moneyProgram, moneyTestApp, newClick, type MoneyProgram } from '../../support/money.js';

const DAY = 86_400_000;
let serial = 0;

/** A sale of a new customer (or of `customerKey`'s) at `at`, through /track/sale: its body's data. */
async function saleAt(app: FastifyInstance, p: TestProgram, amountCents: number, o: { at?: Date; customerKey?: string; recurring?: boolean } = {}) {
  serial += 1;
  const payload: Record<string, unknown> = { transaction_id: `txn-terms-${Date.now()}-${serial}-${Math.random().toString(36).slice(2, 8)}`, amount_cents: amountCents };
  if (o.customerKey) payload.customer_key = o.customerKey;
  else payload.click_id = await newClick(app, p);
  if (o.at) payload.occurred_at = o.at.toISOString();
  if (o.recurring) payload.is_recurring = true;
  const res = await app.inject({ method: 'POST', url: '/api/v1/track/sale', headers: { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': freshIp() }, payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as { sale_id: string; customer_id: number; commission: { commission_id: string; amount_cents: number } | null };
}

/** What a refused call must leave untouched: versions, groups, memberships, programs, the audit log. */
async function termsState(db: Database) {
  return db.one(
    sql(
      't.terms_state',
      `SELECT (SELECT count(*) FROM commission_rule_versions)::int AS versions, (SELECT count(*) FROM audit_log)::int AS audit,
              (SELECT string_agg(id || ':' || name || ':' || coalesce(deleted_at::text, ''), ',' ORDER BY id) FROM partner_groups) AS groups,
              (SELECT string_agg(id || ':' || coalesce(group_id::text, '-'), ',' ORDER BY id) FROM partner_programs) AS members,
              (SELECT string_agg(id || ':' || commission_type || ':' || commission_rate || ':' || coalesce(recurring_months::text, '-') || ':' || updated_at, ',' ORDER BY id) FROM programs) AS programs`,
    ),
  );
}

const ledgerVersions = (db: Database, programId: number) =>
  db.many<{ commission_id: string; rule_version: number | null }>(
    sql('t.terms_ledger_versions', `SELECT commission_id, rule_version FROM ledger_entries WHERE program_id = $1 AND kind = 'commission' ORDER BY id`),
    [programId],
  );

describe.each(databaseKinds())('commission terms (%s)', (kind) => {
  const money = moneyTestApp(kind);
  const { get } = money;
  const send = (method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, headers: Record<string, string>, payload?: object) =>
    money.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

  it('a term change mid-month: two versions, each on the commissions it computed and their ledger entries; listed with who changed what', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 30 });
    const now = Date.now();
    const early = await saleAt(money.app, p, 10_000, { at: new Date(now - 10 * DAY) });
    expect(early.commission!.amount_cents).toBe(1_000);

    const patched = await send('PATCH', `/api/tracking/programs/${p.programId}`, p.owner, { commission_rate: 20 });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().data).toMatchObject({ commission_type: 'percent', commission_rate: 20, recurring_months: null });

    const later = await saleAt(money.app, p, 10_000);
    // A sale paid before the change (sent late) keeps the terms in effect at its time.
    const backdated = await saleAt(money.app, p, 10_000, { at: new Date(now - 5 * DAY) });
    expect(later.commission!.amount_cents).toBe(2_000);
    expect(backdated.commission!.amount_cents).toBe(1_000);

    const rules = (await get(`${p.base}/commission-rules`, p.member)).json().data;
    expect(rules).toHaveLength(2);
    expect(rules.map((r: { version: number; commission_rate: number; group_id: null }) => [r.version, r.commission_rate, r.group_id])).toEqual([[1, 10, null], [2, 20, null]]);
    expect(rules[1].changed_by).toMatchObject({ type: 'user' });
    expect(rules[1].changed_by.label).toMatch(/^owner-.*@test\.example$/);
    const [v1, v2] = rules.map((r: { id: number }) => r.id);

    const read = async (id: string) => (await get(`${p.base}/commissions/${id}`, p.member)).json().data;
    expect(await read(early.commission!.commission_id)).toMatchObject({ amount_minor: 1_000, rule_version: v1 });
    expect(await read(later.commission!.commission_id)).toMatchObject({ amount_minor: 2_000, rule_version: v2 });
    expect(await read(backdated.commission!.commission_id)).toMatchObject({ amount_minor: 1_000, rule_version: v1 });
    expect(await ledgerVersions(money.db, p.programId)).toEqual([
      { commission_id: early.commission!.commission_id, rule_version: v1 },
      { commission_id: later.commission!.commission_id, rule_version: v2 },
      { commission_id: backdated.commission!.commission_id, rule_version: v1 },
    ]);
    const audit = (await get(`${p.base}/audit-log`, p.owner)).json().data;
    const update = audit.find((e: { action: string }) => e.action === 'program.updated');
    expect(update.before).toMatchObject({ commission_rate: 10 });
    expect(update.after).toMatchObject({ commission_rate: 20 });

    // A version scheduled ahead: sales until then keep version 2.
    const ahead = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await send('PATCH', `/api/tracking/programs/${p.programId}`, p.owner, { commission_rate: 5, effective_from: ahead });
    expect(scheduled.statusCode, scheduled.body).toBe(200);
    const meanwhile = await saleAt(money.app, p, 10_000);
    expect(meanwhile.commission!.amount_cents).toBe(2_000);
    expect(await read(meanwhile.commission!.commission_id)).toMatchObject({ rule_version: v2 });
    // Agents see the version on the commission list too.
    const { agentKey } = await issueAgentKey(money.db, p.workspace.workspaceId, 'terms', ['commissions:read']);
    const listed = (await get(`/api/agent/v1/programs/${p.programId}/commissions`, { authorization: `Bearer ${agentKey}` })).json().data;
    expect(listed.map((c: { rule_version: number }) => c.rule_version)).toEqual([v1, v2, v1, v2]);
    const agentRules = (await get(`/api/agent/v1/programs/${p.programId}/commission-rules`, { authorization: `Bearer ${agentKey}` })).json().data;
    expect(agentRules).toEqual((await get(`${p.base}/commission-rules`, p.member)).json().data);
    expect(agentRules).toHaveLength(3);
  });

  it('bad terms and overlapping or past versions: the platform envelope, nothing written', async () => {
    const p = await moneyProgram(money.app, money.db);
    const ahead = new Date(Date.now() + 7 * DAY).toISOString();
    expect((await send('PATCH', `/api/tracking/programs/${p.programId}`, p.owner, { commission_rate: 12, effective_from: ahead })).statusCode).toBe(200);
    const before = await termsState(money.db);
    const url = `/api/tracking/programs/${p.programId}`;
    const cases: [object, number, string][] = [
      [{ commission_rate: 0 }, 400, M.management.commissionRate],
      [{ commission_rate: -5 }, 400, M.management.commissionRate],
      [{ commission_rate: 101 }, 400, M.management.percentRateMax],
      [{ commission_type: 'tiered' }, 400, M.management.commissionType('tiered', ['percent', 'fixed', 'recurring_percent', 'recurring_fixed'])],
      [{ commission_type: 'recurring_percent', recurring_months: 0 }, 400, M.terms.recurringMonths],
      [{ commission_type: 'recurring_percent', recurring_months: 121 }, 400, M.terms.recurringMonths],
      [{ commission_type: 'recurring_percent', recurring_months: 1.5 }, 400, M.terms.recurringMonths],
      [{ commission_type: 'recurring_percent', recurring_months: '12' }, 400, M.terms.recurringMonths],
      [{ recurring_months: 12 }, 400, M.terms.recurringMonthsType],
      [{ commission_rate: 15, effective_from: 'tomorrow' }, 400, M.terms.effectiveFrom],
      [{ commission_rate: 15, effective_from: new Date(Date.now() - DAY).toISOString() }, 400, M.terms.inPast],
      // Earlier than the scheduled version (now, by default, is): versions never overlap.
      [{ commission_rate: 15 }, 409, M.terms.overlaps(new Date(ahead).toISOString())],
      [{ commission_rate: 15, effective_from: new Date(Date.now() + DAY).toISOString() }, 409, M.terms.overlaps(new Date(ahead).toISOString())],
    ];
    for (const [body, status, message] of cases) {
      const res = await send('PATCH', url, p.owner, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(status);
      expect(res.json()).toMatchObject({ data: null, error: { status, message } });
    }
    // A member may not change terms.
    const member = await send('PATCH', url, p.member, { commission_rate: 15, effective_from: new Date(Date.now() + 8 * DAY).toISOString() });
    expect(member.statusCode).toBe(403);
    expect(member.json().error.message).toBe(M.management.termsOwnerOnly);
    expect(await termsState(money.db)).toEqual(before);
  });

  it('groups: terms that override the program’s, a moved partner earns its new terms from then on, delete refused while partners are in it', async () => {
    const p = await moneyProgram(money.app, money.db);
    const groups = `${p.base}/groups`;
    const created = await send('POST', groups, p.owner, { name: 'Top partners', commission_type: 'percent', commission_rate: 30 });
    expect(created.statusCode, created.body).toBe(200);
    const group = created.json().data;
    expect(group).toMatchObject({ name: 'Top partners', partner_count: 0, terms: { commission_type: 'percent', commission_rate: 30, recurring_months: null } });
    const plain = (await send('POST', groups, p.owner, { name: 'Newcomers' })).json().data;
    expect(plain.terms).toBeNull();

    const outside = await saleAt(money.app, p, 10_000);
    expect(outside.commission!.amount_cents).toBe(1_000);
    const put = await send('PUT', `${groups}/${group.id}/partners/${p.partnerId}`, p.owner);
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().data).toEqual({ partner_id: p.partnerId, group_id: group.id });
    const inside = await saleAt(money.app, p, 10_000);
    expect(inside.commission!.amount_cents).toBe(3_000);
    const c = (await get(`${p.base}/commissions/${inside.commission!.commission_id}`, p.member)).json().data;
    expect(c.rule_version).toBe(group.terms.rule_version);

    // Delete refused while the partner is in it; a group without terms pays the program's.
    const refused = await send('DELETE', `${groups}/${group.id}`, p.owner);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ data: null, error: { status: 409, message: M.terms.groupNotEmpty } });
    expect((await send('PUT', `${groups}/${plain.id}/partners/${p.partnerId}`, p.owner)).statusCode).toBe(200);
    const moved = await saleAt(money.app, p, 10_000);
    expect(moved.commission!.amount_cents).toBe(1_000);
    // The earlier commissions are unchanged.
    expect((await get(`${p.base}/commissions/${inside.commission!.commission_id}`, p.member)).json().data.amount_minor).toBe(3_000);

    // Rename and new terms: a version of the group; the list shows both scopes.
    const renamed = await send('PATCH', `${groups}/${group.id}`, p.owner, { name: 'Gold', commission_rate: 25 });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json().data).toMatchObject({ name: 'Gold', partner_count: 0, terms: { commission_rate: 25 } });
    const rules = (await get(`${p.base}/commission-rules`, p.member)).json().data;
    expect(rules.map((r: { group_name: string | null; commission_rate: number }) => [r.group_name, r.commission_rate])).toEqual([[null, 10], ['Gold', 30], ['Gold', 25]]);
    const listed = (await get(groups, p.member)).json().data;
    expect(listed.map((g: { name: string; partner_count: number }) => [g.name, g.partner_count])).toEqual([['Gold', 0], ['Newcomers', 1]]);

    // Out of the group, then the empty group is deleted; its versions stay listed.
    expect((await send('DELETE', `${groups}/${plain.id}/partners/${p.partnerId}`, p.owner)).json().data).toEqual({ partner_id: p.partnerId, group_id: null });
    expect((await send('DELETE', `${groups}/${plain.id}`, p.owner)).statusCode).toBe(200);
    expect((await get(`${groups}/${plain.id}`, p.member)).statusCode).toBe(404);
    expect((await get(`${p.base}/commission-rules`, p.member)).json().data).toHaveLength(3);
    const actions = (await get(`${p.base}/audit-log`, p.owner)).json().data.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['group.created', 'group.updated', 'group.deleted', 'partner.group_changed']));
  });

  it('groups: unknown or other-program ids are 404, bad input 400, members read but never write; nothing written', async () => {
    const p = await moneyProgram(money.app, money.db);
    const other = await createTestProgram(money.app, money.db, {}, p.workspace);
    const theirs = (await send('POST', `/api/tracking/programs/${other.programId}/groups`, p.owner, { name: 'Theirs' })).json().data;
    const mine = (await send('POST', `${p.base}/groups`, p.owner, { name: 'Mine' })).json().data;
    const before = await termsState(money.db);
    const groups = `${p.base}/groups`;
    const cases: [('POST' | 'PATCH' | 'PUT' | 'DELETE'), string, object | undefined, Record<string, string>, number, string][] = [
      ['PATCH', `${groups}/${theirs.id}`, { name: 'x' }, p.owner, 404, M.terms.groupNotFound],
      ['PATCH', `${groups}/999999999`, { name: 'x' }, p.owner, 404, M.terms.groupNotFound],
      ['DELETE', `${groups}/${theirs.id}`, undefined, p.owner, 404, M.terms.groupNotFound],
      ['PUT', `${groups}/${theirs.id}/partners/${p.partnerId}`, undefined, p.owner, 404, M.terms.groupNotFound],
      ['PUT', `${groups}/${mine.id}/partners/${other.partnerId}`, undefined, p.owner, 404, M.management.partnerNotFound],
      ['DELETE', `${groups}/${mine.id}/partners/${p.partnerId}`, undefined, p.owner, 404, M.management.partnerNotFound],
      ['PATCH', `${groups}/abc`, { name: 'x' }, p.owner, 400, M.terms.groupId],
      ['POST', groups, { name: '' }, p.owner, 400, M.terms.groupName],
      ['POST', groups, { name: 'Half', commission_rate: 5 }, p.owner, 400, M.terms.termsIncomplete],
      ['POST', groups, { name: 'Zero', commission_type: 'fixed', commission_rate: 0 }, p.owner, 400, M.management.commissionRate],
      ['POST', groups, { name: 'Over', commission_type: 'percent', commission_rate: 150 }, p.owner, 400, M.management.percentRateMax],
      ['POST', groups, { name: 'Months', commission_type: 'recurring_fixed', commission_rate: 5, recurring_months: 200 }, p.owner, 400, M.terms.recurringMonths],
      ['PATCH', `${groups}/${mine.id}`, { commission_rate: 5 }, p.owner, 400, M.terms.termsIncomplete],
      ['PATCH', `${groups}/${mine.id}`, {}, p.owner, 400, M.terms.patchEmpty],
      ['POST', groups, { name: 'By a member' }, p.member, 403, M.management.termsOwnerOnly],
      ['PUT', `${groups}/${mine.id}/partners/${p.partnerId}`, undefined, p.member, 403, M.management.termsOwnerOnly],
      ['DELETE', `${groups}/${mine.id}`, undefined, p.member, 403, M.management.termsOwnerOnly],
    ];
    for (const [method, url, body, headers, status, message] of cases) {
      const res = await send(method, url, headers, body);
      expect(res.statusCode, `${method} ${url} ${JSON.stringify(body)}: ${res.body}`).toBe(status);
      expect(res.json()).toMatchObject({ data: null, error: { status, message } });
    }
    expect((await get(`${groups}/${mine.id}`, p.member)).statusCode).toBe(200);
    expect((await get(`/api/tracking/programs/${other.programId}/groups/${mine.id}`, p.member)).statusCode).toBe(404);
    expect(await termsState(money.db)).toEqual(before);
  });

  it('recurring_months: a renewal later than that after the first purchase is recorded, earns nothing, and says why', async () => {
    const p: MoneyProgram = await moneyProgram(money.app, money.db, { settings: { commission_type: 'recurring_percent', commission_rate: 10, recurring_months: 1 } });
    const click = await newClick(money.app, p);
    const key = `sub-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
    const lead = await money.app.inject({ method: 'POST', url: '/api/v1/track/lead', headers: { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': freshIp() }, payload: { click_id: click, customer_key: key } });
    expect(lead.statusCode, lead.body).toBe(200);
    const first = await saleAt(money.app, p, 5_000, { customerKey: key });
    expect(first.commission!.amount_cents).toBe(500);
    const within = await saleAt(money.app, p, 5_000, { customerKey: key, recurring: true });
    expect(within.commission!.amount_cents).toBe(500);
    // The customer's first purchase, 40 days ago (as time passing would have made it).
    await money.db.many(sql('t.terms_first_purchase', `UPDATE customers SET first_purchase_date = now() - interval '40 days' WHERE id = $1`), [first.customer_id]);
    const beyond = await saleAt(money.app, p, 5_000, { customerKey: key, recurring: true });
    expect(beyond.commission).toBeNull();
    const { agentKey } = await issueAgentKey(money.db, p.workspace.workspaceId, 'sales', ['sales:read']);
    const sales = (await get(`/api/agent/v1/programs/${p.programId}/sales`, { authorization: `Bearer ${agentKey}` })).json().data;
    expect(sales.map((s: { sale_id: string; commission_skipped_reason: string | null }) => [s.sale_id, s.commission_skipped_reason])).toEqual([
      [first.sale_id, null],
      [within.sale_id, null],
      [beyond.sale_id, 'recurring_limit_reached'],
    ]);
    // Lifetime again (null): the next renewal earns.
    const lifetime = await send('PATCH', `/api/tracking/programs/${p.programId}`, p.owner, { recurring_months: null });
    expect(lifetime.statusCode, lifetime.body).toBe(200);
    expect(lifetime.json().data.recurring_months).toBeNull();
    expect((await saleAt(money.app, p, 5_000, { customerKey: key, recurring: true })).commission!.amount_cents).toBe(500);
  });
});
