import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { migrateWarehouse } from '../../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../../core/warehouse.js';
import { ensureDemo } from '../../../domain/demo.js';
import { AGENT_SCOPES, decide, isAgentScope, PERMISSIONS } from '../../../domain/access/access.js';
import { issueAgentKey, listAgentKeys, parseScopes, revokeAgentKey } from '../../../domain/access/agent-keys.js';
import { hashSecret } from '../../../domain/access/secrets.js';
import { memoryRateLimitStore } from '../../../ingest/http/rate-limit.js';
import { AGENT_RATE_LIMIT } from '../../../ingest/agent/routes.js';
import { OPERATIONS } from '../../../ingest/agent/operations.js';
import { buildTestApp, freshIp } from '../../support/app.js';
import { agentWorld, agentWriteCounts, bearer, exampleArguments, httpRequest, operationsOnPrograms, type AgentWorld } from '../../support/agent.js';
import { createTestDatabase, databaseKinds } from '../../support/databases.js';

const envelope = (status: number, name: string, message: string) => ({ data: null, error: { status, name, message, details: {} } });
const NOT_FOUND = envelope(404, 'NotFoundError', 'Program not found');

// chDB binds one data directory per process: one warehouse for the file, shared by both databases.
let dir: string;
let warehouse: Warehouse;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ats-agent-api-'));
  warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
  await migrateWarehouse(warehouse);
});
afterAll(async () => {
  await warehouse?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('agent scopes are permissions of the one check', () => {
  it('an agent key gets exactly its scopes in its own workspace, nothing elsewhere', () => {
    const principal = { kind: 'agentKey' as const, keyId: '1', workspaceId: 7, scopes: ['sales:read' as const] };
    for (const p of PERMISSIONS) {
      expect(decide(principal, { workspaceId: 7, programId: 1, role: null }, p)).toBe(p === 'sales:read' ? 'allowed' : 'missing-permission');
      expect(decide(principal, { workspaceId: 8, programId: 2, role: null }, p)).toBe('not-member');
    }
    // Sessions never gain agent scopes through roles.
    for (const scope of AGENT_SCOPES) expect(decide({ kind: 'session', userId: 1 }, { workspaceId: 7, role: 'owner' }, scope)).toBe('missing-permission');
  });

  it('every operation needs one documented scope, and every scope is used', () => {
    for (const op of OPERATIONS) expect(isAgentScope(op.scope), op.name).toBe(true);
    expect(new Set(OPERATIONS.map((op) => op.scope))).toEqual(new Set(AGENT_SCOPES));
    expect(parseScopes('all')).toEqual([...AGENT_SCOPES]);
    expect(parseScopes('sales:read, clicks:read')).toEqual(['sales:read', 'clicks:read']);
    expect(() => parseScopes('sales:read,money:move')).toThrow(/money:move/);
  });

  it('the money tools only read (issue 34): balances and ledger with commissions:read, payouts and statements with payouts:read', () => {
    const money = Object.fromEntries(OPERATIONS.filter((op) => op.scope === 'payouts:read' || /balance|ledger|payout|statement/.test(op.name)).map((op) => [op.name, op.scope]));
    expect(money).toEqual({
      get_partner_balance: 'commissions:read',
      list_ledger_entries: 'commissions:read',
      list_payouts: 'payouts:read',
      get_payout: 'payouts:read',
      get_statement: 'payouts:read',
    });
    for (const name of Object.keys(money)) {
      const op = OPERATIONS.find((o) => o.name === name)!;
      expect([op.method, op.annotations.readOnlyHint], name).toEqual(['GET', true]);
    }
    // No agent scope is the permission that moves money, and no key with every scope gets it.
    expect(AGENT_SCOPES as readonly string[]).not.toContain('money:write');
    const all = { kind: 'agentKey' as const, keyId: '1', workspaceId: 7, scopes: [...AGENT_SCOPES] };
    expect(decide(all, { workspaceId: 7, programId: 1, role: null }, 'money:write')).toBe('missing-permission');
  });
});

describe.each(databaseKinds())('agent API on %s', (kind) => {
  let w: AgentWorld;
  beforeAll(async () => {
    w = await agentWorld(kind, warehouse);
  }, 240_000);
  afterAll(async () => {
    await w?.app.close();
    await w?.t.drop();
  });

  const call = (key: string | null, request: { method: string; url: string; payload?: object }) =>
    w.app.inject({ method: request.method as 'GET', url: request.url, payload: request.payload, headers: key === null ? {} : bearer(key) });
  const get = (key: string, url: string) => call(key, { method: 'GET', url: `/api/agent/v1${url}` });

  /** Every item of a list, page by page. */
  async function allPages(url: string, limit = 2) {
    const items: Record<string, unknown>[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 1000; pages++) {
      const sep = url.includes('?') ? '&' : '?';
      const res = await get(w.keys.a, `${url}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      items.push(...body.data);
      expect(body.has_more).toBe(body.next_cursor !== null);
      if (!body.next_cursor) return items;
      cursor = body.next_cursor;
    }
    throw new Error('pagination did not end');
  }

  describe('keys', () => {
    it('are stored only as hashes, listed masked, and revocable at once', async () => {
      const issued = await issueAgentKey(w.t.db, w.a.workspace.workspaceId, 'revoke me', ['programs:read']);
      expect(issued.agentKey).toMatch(/^agt_[A-Za-z0-9_-]{32}$/);
      const row = await w.t.db.one<{ key_hash: string; key_masked: string }>(sql('t.agent_key_row', `SELECT key_hash, key_masked FROM agent_keys WHERE id = $1`), [issued.id]);
      expect(row!.key_hash).toBe(hashSecret(issued.agentKey));
      expect(row!.key_masked).not.toContain(issued.agentKey.slice(4, 30));
      const listed = (await listAgentKeys(w.t.db, w.a.workspace.workspaceId)).find((k) => Number(k.id) === issued.id)!;
      expect(JSON.stringify(listed)).not.toContain(issued.agentKey);
      expect((await get(issued.agentKey, '/programs')).statusCode).toBe(200);
      expect(await revokeAgentKey(w.t.db, issued.id)).toBeInstanceOf(Date);
      const after = await get(issued.agentKey, '/programs');
      expect(after.statusCode).toBe(401);
      expect(after.json()).toEqual(envelope(401, 'UnauthorizedError', 'Invalid agent API key'));
    });

    it('record the last use, written at most once a minute', async () => {
      const issued = await issueAgentKey(w.t.db, w.a.workspace.workspaceId, 'last used', ['programs:read']);
      const lastUsed = async () =>
        (await w.t.db.one<{ at: string | null }>(sql('t.agent_key_last_used', `SELECT last_used_at::text AS at FROM agent_keys WHERE id = $1`), [issued.id]))!.at;
      expect(await lastUsed()).toBeNull();
      await get(issued.agentKey, '/programs');
      const first = await lastUsed();
      expect(first).not.toBeNull();
      await get(issued.agentKey, '/programs');
      expect(await lastUsed()).toBe(first);
    });

    it('a program key never authenticates an agent route, nor an agent key a program route (401)', async () => {
      for (const op of OPERATIONS) {
        const res = await call(w.a.apiKey, httpRequest(op, exampleArguments(op, w.a)));
        expect(res.statusCode, op.name).toBe(401);
        expect(res.json()).toEqual(envelope(401, 'UnauthorizedError', 'Invalid agent API key'));
      }
      const mcp = await w.app.inject({ method: 'POST', url: '/api/agent/v1/mcp', headers: bearer(w.a.apiKey), payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
      expect(mcp.statusCode).toBe(401);
      const before = await agentWriteCounts(w.t.db);
      const sale = await w.app.inject({
        method: 'POST',
        url: '/api/v1/track/sale',
        headers: { ...bearer(w.keys.a), 'x-forwarded-for': freshIp() },
        payload: { additional_data: { test_mode: true } },
      });
      expect(sale.statusCode).toBe(401);
      expect(sale.json().error.message).toBe('Invalid API token');
      expect((await w.app.inject({ method: 'GET', url: '/api/v1/programs/me/readiness', headers: bearer(w.keys.a) })).statusCode).toBe(401);
      expect(await agentWriteCounts(w.t.db)).toEqual(before);
    });

    it('a missing or malformed header is 401 with the agent wording', async () => {
      const url = '/api/agent/v1/programs';
      expect((await w.app.inject({ method: 'GET', url })).json()).toEqual(
        envelope(401, 'UnauthorizedError', 'Missing or malformed Authorization header. Expected: Bearer <agent_key>'),
      );
      expect((await w.app.inject({ method: 'GET', url, headers: { authorization: 'Bearer' } })).json()).toEqual(envelope(401, 'UnauthorizedError', 'Missing agent API key'));
      expect((await w.app.inject({ method: 'GET', url, headers: { authorization: w.keys.a } })).statusCode).toBe(401);
    });
  });

  describe('every route', () => {
    it('answers 200 with the scope, with X-Request-ID and the rate-limit headers', async () => {
      for (const op of OPERATIONS) {
        const res = await call(w.keys.a, httpRequest(op, exampleArguments(op, w.a)));
        expect(res.statusCode, `${op.name}: ${res.body}`).toBe(200);
        expect(res.headers['x-request-id'], op.name).toBeTruthy();
        expect(res.headers['x-ratelimit-limit']).toBe(String(AGENT_RATE_LIMIT));
        expect(res.headers['x-ratelimit-remaining']).toBeDefined();
        expect(Number(res.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
      }
    });

    it('refuses a key without the scope with 403 naming it, and writes nothing', async () => {
      const before = await agentWriteCounts(w.t.db);
      for (const op of OPERATIONS) {
        if (op.scope === 'programs:read') continue; // the read-only key has exactly this one
        const res = await call(w.keys.readOnly, httpRequest(op, exampleArguments(op, w.a)));
        expect(res.statusCode, op.name).toBe(403);
        expect(res.json()).toEqual(envelope(403, 'ForbiddenError', `This agent key does not have the ${op.scope} scope`));
      }
      expect(await agentWriteCounts(w.t.db)).toEqual(before);
    });

    it("refuses another workspace's program with the same 404 as an unknown one, and writes nothing", async () => {
      const before = await agentWriteCounts(w.t.db);
      for (const op of operationsOnPrograms) {
        const foreign = await call(w.keys.b, httpRequest(op, exampleArguments(op, w.a)));
        const unknown = await call(w.keys.b, httpRequest(op, exampleArguments(op, { ...w.a, programId: w.a.programId + 999_999 })));
        expect(foreign.statusCode, op.name).toBe(404);
        expect(foreign.json()).toEqual(NOT_FOUND);
        expect(unknown.json()).toEqual(NOT_FOUND);
        // Without the scope as well: the program is not shown to exist before the scope is checked.
        expect((await call(w.keys.readOnly, httpRequest(op, exampleArguments(op, w.b)))).json()).toEqual(NOT_FOUND);
      }
      // A link of another workspace named under one's own program: 404 too.
      const link = await call(w.keys.a, { method: 'PATCH', url: `/api/agent/v1/programs/${w.a.programId}/links/${w.b.affCode}`, payload: { enabled: false } });
      expect(link.json()).toEqual(envelope(404, 'NotFoundError', 'Referral link not found'));
      // Lists filtered by another workspace's partner: nothing of it.
      const sales = await get(w.keys.a, `/programs/${w.a.programId}/sales?partner_id=${w.b.partnerId}`);
      expect(sales.json().data).toEqual([]);
      // Program list: the key's workspace only.
      expect((await get(w.keys.a, '/programs')).json().data.map((p: { id: number }) => p.id)).toEqual([w.a.programId]);
      expect(await agentWriteCounts(w.t.db)).toEqual(before);
    });

    it('is in the OpenAPI document with the agent key scheme and the error envelopes', async () => {
      const doc = (await w.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      expect(doc.components.securitySchemes.agentKey).toMatchObject({ type: 'http', scheme: 'bearer' });
      for (const op of OPERATIONS) {
        const path = `/api/agent/v1${op.path.replace(/:(\w+)/g, '{$1}')}`;
        const entry = doc.paths[path]?.[op.method.toLowerCase()];
        expect(entry, path).toBeDefined();
        expect(entry.security).toEqual([{ agentKey: [] }]);
        expect(entry.description).toContain(op.scope);
        expect(Object.keys(entry.responses)).toEqual(expect.arrayContaining(['200', '401', '403', '404', '429']));
      }
      expect(doc.paths['/api/agent/v1/mcp'].post).toBeDefined();
    });

    it('answers bad input with 400 in the platform envelope', async () => {
      const base = `/programs/${w.a.programId}`;
      const cases: [string, string][] = [
        [`${base}/sales?cursor=not-a-cursor`, 'cursor is not valid; pass the next_cursor of a previous page unchanged'],
        [`${base}/sales?limit=0`, 'limit must be an integer from 1 to 100'],
        [`${base}/sales?status=lost`, 'status must be one of: paid, refunded, chargeback'],
        [`${base}/commissions?from=2026-02-01&to=2026-01-01`, 'from must be before to'],
        [`${base}/clicks?from=yesterday`, 'from must be an ISO 8601 date-time with an offset, such as 2026-01-31T00:00:00Z'],
        [`${base}/partners?colour=red`, 'Unknown query parameter: colour'],
        [`${base}/clicks?cursor=${Buffer.from(JSON.stringify(['2026-01-01 00:00:00+00', '1'])).toString('base64url')}`, 'cursor is not valid; pass the next_cursor of a previous page unchanged'],
      ];
      for (const [url, message] of cases) expect((await get(w.keys.a, url)).json(), url).toEqual(envelope(400, 'BadRequestError', message));
    });
  });

  describe('figures', () => {
    it('performance equals the dashboard endpoint for the same program and period', async () => {
      for (const query of ['', 'period=30d', 'period=all', `dateFrom=${new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10)}&dateTo=${new Date().toISOString().slice(0, 10)}`]) {
        const agent = await get(w.keys.a, `/programs/${w.a.programId}/performance${query ? `?${query}` : ''}`);
        const dashboard = await w.app.inject({
          method: 'GET',
          url: `/api/tracking/performance/${w.a.programId}${query ? `?${query}` : ''}`,
          headers: bearer(w.a.workspace.ownerToken),
        });
        expect(agent.statusCode, agent.body).toBe(200);
        expect(agent.json(), query).toEqual(dashboard.json());
      }
      // The traffic is there: not two empty answers.
      expect((await get(w.keys.a, `/programs/${w.a.programId}/performance`)).json().metrics.totalClicks).toBeGreaterThan(0);
    });

    it('the summary carries the performance totals and trends of the same period', async () => {
      const summary = (await get(w.keys.a, `/programs/${w.a.programId}/summary?period=30d`)).json().data;
      const perf = (await get(w.keys.a, `/programs/${w.a.programId}/performance?period=30d`)).json();
      expect(summary.totals).toEqual(perf.metrics);
      expect(summary.period).toEqual(perf.meta);
      expect(summary.partners.approved).toBeGreaterThanOrEqual(1);
      expect(summary.links.enabled + summary.links.disabled).toBeGreaterThanOrEqual(1);
    });

    it('pages are stable and complete: walking with a small page gives the one-page list, each row once', async () => {
      for (const list of ['sales', 'commissions', 'partners', 'clicks']) {
        const paged = await allPages(`/programs/${w.a.programId}/${list}`, 2);
        const whole = (await get(w.keys.a, `/programs/${w.a.programId}/${list}?limit=100`)).json();
        expect(whole.has_more).toBe(false);
        expect(paged, list).toEqual(whole.data);
        expect(paged.length, list).toBeGreaterThan(0);
      }
      // The same numbers as Postgres holds.
      const counts = (await w.t.db.one<{ sales: number; commissions: number; clicks: number }>(
        sql(
          't.agent_counts',
          `SELECT (SELECT count(*) FROM sale_events WHERE program_id = $1)::int AS sales,
                  (SELECT count(*) FROM commissions WHERE program_id = $1)::int AS commissions,
                  (SELECT count(*) FROM clicks WHERE program_id = $1)::int AS clicks`,
        ),
        [w.a.programId],
      ))!;
      expect((await allPages(`/programs/${w.a.programId}/sales`, 100)).length).toBe(counts.sales);
      expect((await allPages(`/programs/${w.a.programId}/commissions`, 100)).length).toBe(counts.commissions);
      expect((await allPages(`/programs/${w.a.programId}/clicks`, 100)).length).toBe(counts.clicks);
    });

    it('filters by status, partner and time range', async () => {
      const sales = await allPages(`/programs/${w.a.programId}/sales`, 100);
      const refunded = await allPages(`/programs/${w.a.programId}/sales?status=refunded`, 100);
      expect(refunded.length).toBeGreaterThan(0);
      expect(refunded).toEqual(sales.filter((s) => s.status === 'refunded'));
      expect(await allPages(`/programs/${w.a.programId}/sales?partner_id=${w.a.partnerId}`, 100)).toEqual(sales.filter((s) => s.partner_id === w.a.partnerId));
      const middle = sales[Math.floor(sales.length / 2)]!.occurred_at as string;
      expect(await allPages(`/programs/${w.a.programId}/sales?from=${encodeURIComponent(middle)}`, 100)).toEqual(sales.filter((s) => (s.occurred_at as string) >= middle));
      expect(await allPages(`/programs/${w.a.programId}/sales?to=${encodeURIComponent(middle)}`, 100)).toEqual(sales.filter((s) => (s.occurred_at as string) < middle));
      for (const list of ['commissions', 'partners', 'clicks']) {
        const every = await allPages(`/programs/${w.a.programId}/${list}`, 100);
        const own = await allPages(`/programs/${w.a.programId}/${list}?partner_id=${w.a.partnerId}`, 2);
        expect(own.length, list).toBeGreaterThan(0);
        expect(own, list).toEqual(every.filter((row) => row.partner_id === w.a.partnerId));
      }
      const clicks = await allPages(`/programs/${w.a.programId}/clicks`, 100);
      const testClicks = await allPages(`/programs/${w.a.programId}/clicks?status=test`, 100);
      expect(testClicks.length).toBeGreaterThan(0);
      expect(testClicks).toEqual(clicks.filter((c) => c.test));
    });

    it('the reconciliation equals the sums of the commission list, per partner and currency', async () => {
      for (const range of ['', `from=${encodeURIComponent(new Date(Date.now() - 86_400_000).toISOString())}`]) {
        const sep = range ? '&' : '';
        const all = await allPages(`/programs/${w.a.programId}/commissions?${range}`, 2);
        const reversed = await allPages(`/programs/${w.a.programId}/commissions?${range}${sep}status=reversed`, 2);
        expect(reversed.length).toBeGreaterThan(0);
        const sums = new Map<string, { created_count: number; created_cents: number; reversed_count: number; reversed_cents: number }>();
        const line = (c: Record<string, unknown>) => {
          const k = `${c.partner_id}|${c.currency}`;
          if (!sums.has(k)) sums.set(k, { created_count: 0, created_cents: 0, reversed_count: 0, reversed_cents: 0 });
          return sums.get(k)!;
        };
        for (const c of all) {
          line(c).created_count += 1;
          line(c).created_cents += c.amount_cents as number;
        }
        for (const c of reversed) {
          line(c).reversed_count += 1;
          line(c).reversed_cents += c.amount_cents as number;
        }
        const rec = (await get(w.keys.a, `/programs/${w.a.programId}/commissions/reconciliation${range ? `?${range}` : ''}`)).json().data;
        expect(rec.lines.length).toBe(sums.size);
        for (const l of rec.lines) {
          expect({ created_count: l.created_count, created_cents: l.created_cents, reversed_count: l.reversed_count, reversed_cents: l.reversed_cents }).toEqual(
            sums.get(`${l.partner_id}|${l.currency}`),
          );
          expect(l.net_cents).toBe(l.created_cents - l.reversed_cents);
        }
        const net = all.reduce((n, c) => n + (c.status === 'reversed' ? 0 : (c.amount_cents as number)), 0);
        expect(rec.totals.reduce((n: number, t: { net_cents: number }) => n + t.net_cents, 0)).toBe(net);
      }
    });

    it('top partners rank the commissions not reversed, as the list sums them', async () => {
      const pending = (await allPages(`/programs/${w.a.programId}/commissions`, 100)).filter((c) => c.status !== 'reversed');
      const top = (await get(w.keys.a, `/programs/${w.a.programId}/top-partners`)).json().data;
      expect(top.length).toBeGreaterThan(0);
      for (const row of top) {
        const mine = pending.filter((c) => c.partner_id === row.partner_id && c.currency === row.currency);
        expect(row.commissions).toBe(mine.length);
        expect(row.commission_cents).toBe(mine.reduce((n, c) => n + (c.amount_cents as number), 0));
      }
    });
  });

  describe('writes', () => {
    it('create a partner once per aff_code, audit-logged with the key id; a code in use otherwise is 409', async () => {
      const url = `/api/agent/v1/programs/${w.a.programId}/partners`;
      const payload = { name: 'Agent Smith', email: 'smith@agents.example', aff_code: `smith-${kind}` };
      const first = await call(w.keys.a, { method: 'POST', url, payload });
      expect(first.statusCode, first.body).toBe(200);
      expect(first.json().data).toMatchObject({ created: true, aff_code: payload.aff_code, status: 'approved' });
      expect(first.json().data.referral_url).toBe(`https://shop.test.example/?aff=smith-${kind}`);
      const before = await agentWriteCounts(w.t.db);
      const again = await call(w.keys.a, { method: 'POST', url, payload });
      expect(again.json().data).toEqual({ ...first.json().data, created: false });
      expect(await agentWriteCounts(w.t.db)).toEqual({ ...before, audit: before.audit + 1 });
      const clash = await call(w.keys.a, { method: 'POST', url, payload: { ...payload, name: 'Someone else' } });
      expect(clash.json()).toEqual(envelope(409, 'ConflictError', 'aff_code is already in use by another partner or program'));
      const taken = await call(w.keys.a, { method: 'POST', url, payload: { name: 'x', aff_code: w.b.affCode } });
      expect(taken.statusCode).toBe(409);
      // The link works for clicks at once.
      const click = await w.app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { 'x-forwarded-for': freshIp() }, payload: { affiliate_url: `https://shop.test.example/?aff=smith-${kind}` } });
      expect(click.statusCode).toBe(200);
      const audit = await w.t.db.many<{ key_id: number; action: string; outcome: string; target: string }>(
        sql('t.agent_audit', `SELECT key_id, action, outcome, target FROM agent_audit_log WHERE target = $1 ORDER BY id`),
        [payload.aff_code],
      );
      expect(audit.map((a) => [Number(a.key_id), a.action, a.outcome])).toEqual([
        [w.keys.aId, 'partner.create', 'created'],
        [w.keys.aId, 'partner.create', 'existing'],
      ]);
    });

    it('two identical writes at once make one partner and one test event', async () => {
      const before = await agentWriteCounts(w.t.db);
      const partner = { method: 'POST', url: `/api/agent/v1/programs/${w.a.programId}/partners`, payload: { name: 'Twin', aff_code: `twin-${kind}` } };
      const partners = await Promise.all([call(w.keys.a, partner), call(w.keys.a, partner), call(w.keys.a, partner)]);
      expect(partners.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      expect(partners.filter((r) => r.json().data.created)).toHaveLength(1);
      expect(new Set(partners.map((r) => r.json().data.partner_id)).size).toBe(1);
      const run = { method: 'POST', url: `/api/agent/v1/programs/${w.a.programId}/test-events`, payload: { event_type: 'lead', reference: `twin-${kind}` } };
      const runs = await Promise.all([call(w.keys.a, run), call(w.keys.a, run), call(w.keys.a, run)]);
      expect(runs.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      expect(runs.filter((r) => r.json().data.created)).toHaveLength(1);
      const after = await agentWriteCounts(w.t.db);
      expect(after).toMatchObject({ partners: before.partners + 1, links: before.links + 1, tracking_logs: before.tracking_logs + 1 });
    });

    it('turn a link off and on; the same state again changes nothing', async () => {
      const url = `/api/agent/v1/programs/${w.a.programId}/links/${w.a.affCode}`;
      const clickUrl = { affiliate_url: `https://shop.test.example/?aff=${w.a.affCode}` };
      const off = await call(w.keys.a, { method: 'PATCH', url, payload: { enabled: false } });
      expect(off.json().data).toEqual({ aff_code: w.a.affCode, enabled: false, changed: true });
      expect((await call(w.keys.a, { method: 'PATCH', url, payload: { enabled: false } })).json().data.changed).toBe(false);
      const refused = await w.app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { 'x-forwarded-for': freshIp() }, payload: clickUrl });
      expect(refused.statusCode).toBe(410);
      expect((await call(w.keys.a, { method: 'PATCH', url, payload: { enabled: true } })).json().data).toEqual({ aff_code: w.a.affCode, enabled: true, changed: true });
      expect((await w.app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { 'x-forwarded-for': freshIp() }, payload: clickUrl })).statusCode).toBe(200);
      const audit = await w.t.db.many<{ action: string; outcome: string }>(
        sql('t.agent_audit_link', `SELECT action, outcome FROM agent_audit_log WHERE target = $1 AND action LIKE 'link.%' ORDER BY id`),
        [w.a.affCode],
      );
      expect(audit.slice(-3)).toEqual([
        { action: 'link.disable', outcome: 'updated' },
        { action: 'link.disable', outcome: 'unchanged' },
        { action: 'link.enable', outcome: 'updated' },
      ]);
    });

    it('run a synthetic test event once per reference; it counts in the integration status and moves no money', async () => {
      const url = `/api/agent/v1/programs/${w.a.programId}/test-events`;
      const before = await agentWriteCounts(w.t.db);
      const first = await call(w.keys.a, { method: 'POST', url, payload: { event_type: 'sale', reference: `sale-check-${kind}` } });
      expect(first.json().data).toMatchObject({ created: true, event_type: 'sale', reference: `sale-check-${kind}` });
      const again = await call(w.keys.a, { method: 'POST', url, payload: { event_type: 'sale', reference: `sale-check-${kind}` } });
      expect(again.json().data).toEqual({ ...first.json().data, created: false });
      const after = await agentWriteCounts(w.t.db);
      expect(after).toEqual({ ...before, audit: before.audit + 1, tracking_logs: before.tracking_logs + 1, outbox: before.outbox + 1 });
      const bad = await call(w.keys.a, { method: 'POST', url, payload: { event_type: 'refund', reference: 'x' } });
      expect(bad.json()).toEqual(envelope(400, 'BadRequestError', 'Invalid event_type: refund. Valid: click, lead, sale'));
      const click = await call(w.keys.a, { method: 'POST', url, payload: { event_type: 'click', reference: `click-check-${kind}` } });
      expect(click.statusCode).toBe(200);
      const status = (await get(w.keys.a, `/programs/${w.a.programId}/status`)).json().data;
      expect(status.stepStatuses.pageview).toBe('complete');
    });

    it('no operation records sales, refunds, commissions or fees', async () => {
      const before = await agentWriteCounts(w.t.db);
      for (const op of OPERATIONS) await call(w.keys.a, httpRequest(op, exampleArguments(op, w.a)));
      const after = await agentWriteCounts(w.t.db);
      for (const money of ['sales', 'commissions', 'fees', 'refunds'] as const) expect(after[money], money).toBe(before[money]);
    });
  });
});

describe('agent rate limit', () => {
  it('counts per key and answers 429 with the spec headers, before the endpoint', async () => {
    const t = await createTestDatabase('pglite');
    let now = Date.UTC(2026, 0, 1, 12, 0, 10);
    const app = await buildTestApp(t.db, memoryRateLimitStore(), () => now);
    try {
      const ws = (await t.db.one<{ id: number }>(sql('t.agent_ws', `INSERT INTO workspaces (name) VALUES ('rl') RETURNING id`)))!.id;
      const { agentKey } = await issueAgentKey(t.db, Number(ws), 'rl', ['programs:read']);
      const other = await issueAgentKey(t.db, Number(ws), 'rl2', ['programs:read']);
      for (let i = 1; i <= AGENT_RATE_LIMIT; i++) {
        const res = await app.inject({ method: 'GET', url: '/api/agent/v1/programs', headers: bearer(agentKey) });
        expect(res.statusCode).toBe(200);
        expect(res.headers['x-ratelimit-remaining']).toBe(String(AGENT_RATE_LIMIT - i));
      }
      const limited = await app.inject({ method: 'GET', url: '/api/agent/v1/programs', headers: bearer(agentKey) });
      expect(limited.statusCode).toBe(429);
      expect(limited.json().error).toMatchObject({ status: 429, code: 'rate_limited', retry_after_seconds: 50 });
      expect(limited.headers['retry-after']).toBe('50');
      expect(limited.headers['x-ratelimit-reset']).toBe(String(Date.UTC(2026, 0, 1, 12, 1) / 1000));
      expect((await app.inject({ method: 'GET', url: '/api/agent/v1/programs', headers: bearer(other.agentKey) })).statusCode).toBe(200);
      now += 60_000;
      expect((await app.inject({ method: 'GET', url: '/api/agent/v1/programs', headers: bearer(agentKey) })).statusCode).toBe(200);
    } finally {
      await app.close();
      await t.drop();
    }
  });
});

describe('the embedded start', () => {
  it('issues an agent key with every scope for the demo workspace and writes it as agentKey', async () => {
    const t = await createTestDatabase('pglite');
    const dataDir = await mkdtemp(join(tmpdir(), 'ats-agent-demo-'));
    const app = await buildTestApp(t.db);
    try {
      const demo = (await ensureDemo(t.db, dataDir, 'http://localhost:3000'))?.credentials;
      const written = JSON.parse(await readFile(join(dataDir, 'demo-credentials.json'), 'utf8'));
      expect(written.agentKey).toBe(demo!.agentKey);
      expect(written.agentKey).toMatch(/^agt_/);
      const keys = await t.db.many<{ scopes: string[] }>(sql('t.demo_agent_scopes', `SELECT scopes FROM agent_keys`));
      expect(keys.map((k) => [...k.scopes].sort())).toEqual([[...AGENT_SCOPES].sort()]);
      const programs = await app.inject({ method: 'GET', url: '/api/agent/v1/programs', headers: bearer(written.agentKey) });
      expect(programs.json().data.map((p: { id: number }) => p.id)).toEqual([demo!.programId]);
    } finally {
      await app.close();
      await t.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
