/**
 * The audit log (issue 32, point 6): each brand-side write appends one entry in its own transaction,
 * with actor, action, target, before, after and request id, and never a secret; a refused write
 * appends nothing; the database refuses to change or remove an entry; the log is read in cursor
 * pages by owners, members and agents with `audit:read`, each workspace only its own.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { issueAgentKey } from '../../../domain/access/agent-keys.js';
import { createEndpoint } from '../../../domain/webhooks/endpoints.js';
import { createTestProgram, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { buildWebhookApp, testBox } from '../../support/webhooks.js';

const count = sql('test.audit_count', `SELECT count(*)::int AS n FROM audit_log`);

interface Entry {
  id: string;
  program_id: number | null;
  actor: { type: string; id: string; label: string | null };
  action: string;
  target: { type: string; id: string };
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  request_id: string;
  created_at: string;
}

describe.each(databaseKinds())('audit log on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let a: TestProgram;
  let b: TestProgram;
  const as = (token: string) => ({ authorization: `Bearer ${token}` });
  const entries = async () => (await t.db.one<{ n: number }>(count))!.n;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildWebhookApp(t.db, { allowPrivateUrls: true });
    a = await createTestProgram(app, t.db);
    b = await createTestProgram(app, t.db);
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const hooks = (p: TestProgram) => `/api/tracking/programs/${p.programId}/webhook-endpoints`;
  const log = (p: TestProgram) => `/api/tracking/programs/${p.programId}/audit-log`;

  /** The whole log of a program, page by page. */
  async function readAll(p: TestProgram, token: string, limit = 100): Promise<Entry[]> {
    const all: Entry[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `${log(p)}?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await app.inject({ method: 'GET', url, headers: as(token) });
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json() as { data: Entry[]; next_cursor: string | null };
      all.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    return all;
  }

  it('records each webhook endpoint write with its actor, before, after and request id, and no secret', async () => {
    const owner = as(a.workspace.ownerToken);
    const write = async (method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) => {
      const res = await app.inject({ method, url, headers: { ...owner, 'x-request-id': `req-${method}-${Math.random().toString(36).slice(2)}` }, payload });
      expect(res.statusCode, res.body).toBeLessThan(300);
      return { body: res.body ? res.json() : undefined, requestId: String(res.headers['x-request-id']) };
    };
    const created = await write('POST', hooks(a), { url: 'http://127.0.0.1:9/hook', events: ['sale.recorded'], description: 'CRM' });
    const id = created.body.data.id as string;
    const updated = await write('PATCH', `${hooks(a)}/${id}`, { events: ['sale.recorded', 'commission.created'], description: null });
    const rotated = await write('POST', `${hooks(a)}/${id}/rotate-secret`);
    const tested = await write('POST', `${hooks(a)}/${id}/test`);
    const redelivered = await write('POST', `${hooks(a)}/${id}/deliveries/${tested.body.data.delivery_id}/redeliver`);
    const deleted = await write('DELETE', `${hooks(a)}/${id}`);

    const mine = (await readAll(a, a.workspace.memberToken)).filter((e) => e.target.id === id || e.target.id === tested.body.data.delivery_id);
    // Newest first.
    expect(mine.map((e) => e.action)).toEqual([
      'webhook_endpoint.deleted',
      'webhook_delivery.redelivered',
      'webhook_endpoint.tested',
      'webhook_endpoint.secret_rotated',
      'webhook_endpoint.updated',
      'webhook_endpoint.created',
    ]);
    expect(mine.map((e) => e.request_id)).toEqual([deleted, redelivered, tested, rotated, updated, created].map((w) => w.requestId));
    const ownerEmail = (await t.db.one<{ email: string }>(sql('test.owner_email', `SELECT email FROM users u JOIN members m ON m.user_id = u.id WHERE m.workspace_id = $1 AND m.role = 'owner'`), [a.workspace.workspaceId]))!.email;
    for (const e of mine) expect(e.actor).toMatchObject({ type: 'user', label: ownerEmail });
    const [del, redo, test, rotate, update, create] = mine as [Entry, Entry, Entry, Entry, Entry, Entry];
    expect(create).toMatchObject({ program_id: a.programId, target: { type: 'webhook_endpoint', id }, before: null, after: { url: 'http://127.0.0.1:9/hook', events: ['sale.recorded'], description: 'CRM' } });
    expect(update.before).toMatchObject({ events: ['sale.recorded'], description: 'CRM' });
    expect(update.after).toMatchObject({ events: ['sale.recorded', 'commission.created'], description: null });
    expect(rotate.before).toMatchObject({ previous_secret_until: null });
    expect(rotate.after!.previous_secret_until).toBe(rotated.body.data.previous_secret_until);
    expect(test.after).toEqual({ delivery_id: tested.body.data.delivery_id, event_id: tested.body.data.event_id });
    expect(redo.target).toEqual({ type: 'webhook_delivery', id: tested.body.data.delivery_id });
    expect(redo.after).toMatchObject({ endpoint_id: id, status: 'pending' });
    expect(del).toMatchObject({ before: { id, events: ['sale.recorded', 'commission.created'] }, after: null });

    // The secrets shown once appear nowhere in the log, nor in its rows.
    const raw = JSON.stringify(await t.db.many(sql('test.audit_rows', `SELECT before, after FROM audit_log`)));
    for (const secret of [created.body.data.secret, rotated.body.data.secret]) {
      expect(secret).toMatch(/^whsec_/);
      expect(raw).not.toContain(secret.slice(6));
    }
    expect(raw).not.toMatch(/"v1\.[A-Za-z0-9_-]{40,}"/);
  });

  it('records the processor connection without its webhook secret', async () => {
    const url = `/api/tracking/programs/${a.programId}/processor-connection`;
    const secret = 'whsec_audit_connection_secret_0001';
    const put = await app.inject({ method: 'PUT', url, headers: as(a.workspace.ownerToken), payload: { account_id: 'acct_audit1', webhook_secret: secret } });
    expect(put.statusCode, put.body).toBe(200);
    const del = await app.inject({ method: 'DELETE', url, headers: as(a.workspace.ownerToken) });
    expect(del.statusCode, del.body).toBe(200);
    const [disconnected, connected] = (await readAll(a, a.workspace.ownerToken)).filter((e) => e.target.type === 'processor_connection');
    expect(connected).toMatchObject({ action: 'processor_connection.connected', before: null, after: { account_id: 'acct_audit1', webhook_secret: '[redacted]' } });
    expect(disconnected).toMatchObject({ action: 'processor_connection.disconnected', before: { account_id: 'acct_audit1' }, after: null });
    expect(JSON.stringify(await t.db.many(sql('test.audit_all', `SELECT * FROM audit_log`)))).not.toContain(secret.slice(6));
  });

  it('appends nothing for a refused write', async () => {
    const before = await entries();
    const created = await app.inject({ method: 'POST', url: hooks(a), headers: as(a.workspace.ownerToken), payload: { url: 'http://127.0.0.1:9/x', events: ['sale.recorded'] } });
    const id = created.json().data.id;
    const afterCreate = await entries();
    expect(afterCreate).toBe(before + 1);
    const refusals = [
      // A member: owners only.
      await app.inject({ method: 'PATCH', url: `${hooks(a)}/${id}`, headers: as(a.workspace.memberToken), payload: { enabled: false } }),
      // Another workspace's owner.
      await app.inject({ method: 'DELETE', url: `${hooks(a)}/${id}`, headers: as(b.workspace.ownerToken) }),
      // Bad input.
      await app.inject({ method: 'POST', url: hooks(a), headers: as(a.workspace.ownerToken), payload: { url: 'ftp://x', events: ['sale.recorded'] } }),
      // Unknown targets.
      await app.inject({ method: 'POST', url: `${hooks(a)}/00000000-0000-4000-8000-000000000000/rotate-secret`, headers: as(a.workspace.ownerToken) }),
      await app.inject({ method: 'POST', url: `${hooks(a)}/${id}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`, headers: as(a.workspace.ownerToken) }),
    ];
    expect(refusals.map((r) => r.statusCode)).toEqual([403, 403, 400, 404, 404]);
    for (const r of refusals) expect(r.json()).toHaveProperty('error');
    expect(await entries()).toBe(afterCreate);
  });

  it('writes the entry in the transaction of the write: an entry that cannot be written undoes the write', async () => {
    const endpoints = sql('test.endpoint_count', `SELECT count(*)::int AS n FROM webhook_endpoints`);
    const before = (await t.db.one<{ n: number }>(endpoints))!.n;
    const entriesBefore = await entries();
    // A request id the table refuses (NOT NULL): the insert of the entry fails after the endpoint's.
    const broken = { actor: { type: 'user' as const, id: 1 }, requestId: null as unknown as string };
    await expect(createEndpoint(t.db, testBox(), { allowPrivate: true, resolve: async () => [] }, a.programId, { url: 'http://127.0.0.1:9/y', events: ['sale.recorded'], description: null }, broken)).rejects.toThrow();
    expect((await t.db.one<{ n: number }>(endpoints))!.n).toBe(before);
    expect(await entries()).toBe(entriesBefore);
  });

  it('refuses UPDATE, DELETE and TRUNCATE in the database', async () => {
    expect(await entries()).toBeGreaterThan(0);
    const n = await entries();
    for (const [name, text] of [
      ['test.audit_update', `UPDATE audit_log SET action = 'forged'`],
      ['test.audit_delete', `DELETE FROM audit_log`],
      ['test.audit_truncate', `TRUNCATE audit_log`],
    ] as const) {
      await expect(t.db.many(sql(name, text))).rejects.toThrow(/audit_log is append-only/);
    }
    expect(await entries()).toBe(n);
    expect(await t.db.one(sql('test.audit_forged', `SELECT 1 FROM audit_log WHERE action = 'forged'`))).toBeUndefined();
  });

  it('pages with a cursor, newest first, each entry once; a bad cursor or limit is a 400 in the envelope', async () => {
    for (let i = 0; i < 5; i += 1) {
      const res = await app.inject({ method: 'POST', url: hooks(b), headers: as(b.workspace.ownerToken), payload: { url: `http://127.0.0.1:9/p${i}`, events: ['sale.recorded'] } });
      expect(res.statusCode).toBe(200);
    }
    const whole = await readAll(b, b.workspace.ownerToken);
    const paged = await readAll(b, b.workspace.ownerToken, 2);
    expect(paged.map((e) => e.id)).toEqual(whole.map((e) => e.id));
    expect(new Set(paged.map((e) => e.id)).size).toBe(paged.length);
    const times = paged.map((e) => Date.parse(e.created_at));
    expect([...times].sort((x, y) => y - x)).toEqual(times);
    expect(whole.filter((e) => e.action === 'webhook_endpoint.created')).toHaveLength(5);

    for (const query of ['limit=0', 'limit=101', 'cursor=not-a-cursor', 'cursor=WyJ3ZWJob29rX2RlbGl2ZXJpZXMiLCJ4IiwieSJd', 'extra=1']) {
      const res = await app.inject({ method: 'GET', url: `${log(b)}?${query}`, headers: as(b.workspace.ownerToken) });
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.message, query).toBeTruthy();
    }
  });

  it('is in the OpenAPI document, for sessions and agents', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(doc.paths['/api/tracking/programs/{programId}/audit-log'].get).toBeDefined();
    expect(doc.paths['/api/agent/v1/programs/{programId}/audit-log'].get.description).toContain('audit:read');
  });

  it("shows each workspace only its own programs' log; needs a session", async () => {
    const ofB = await readAll(b, b.workspace.memberToken);
    expect(ofB.every((e) => e.program_id === b.programId || e.program_id === null)).toBe(true);
    expect(ofB.some((e) => e.target.type === 'webhook_endpoint' && e.after && (e.after as { url?: string }).url === 'http://127.0.0.1:9/hook')).toBe(false);
    expect((await app.inject({ method: 'GET', url: log(b), headers: as(a.workspace.ownerToken) })).statusCode).toBe(403);
    expect((await app.inject({ method: 'GET', url: log(a), headers: as(b.workspace.memberToken) })).statusCode).toBe(403);
    expect((await app.inject({ method: 'GET', url: log(a) })).statusCode).toBe(401);
  });

  it('is read by an agent key with audit:read, over HTTP and MCP; a key without it, or of another workspace, is refused', async () => {
    const reader = await issueAgentKey(t.db, a.workspace.workspaceId, 'auditor', ['audit:read']);
    const other = await issueAgentKey(t.db, a.workspace.workspaceId, 'programs', ['programs:read']);
    const stranger = await issueAgentKey(t.db, b.workspace.workspaceId, 'b auditor', ['audit:read']);
    const url = `/api/agent/v1/programs/${a.programId}/audit-log`;
    const ok = await app.inject({ method: 'GET', url: `${url}?limit=3`, headers: as(reader.agentKey) });
    expect(ok.statusCode, ok.body).toBe(200);
    const viaSession = await app.inject({ method: 'GET', url: `${log(a)}?limit=3`, headers: as(a.workspace.ownerToken) });
    expect(ok.json()).toEqual(viaSession.json());
    const refused = await app.inject({ method: 'GET', url, headers: as(other.agentKey) });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.message).toContain('audit:read');
    expect((await app.inject({ method: 'GET', url, headers: as(stranger.agentKey) })).statusCode).toBe(404);

    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    const client = new Client({ name: 'audit-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/api/agent/v1/mcp', address), { requestInit: { headers: as(reader.agentKey) } }));
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['list_audit_log']);
      const result = await client.callTool({ name: 'list_audit_log', arguments: { programId: a.programId, limit: 3 } });
      expect((result as { structuredContent: unknown }).structuredContent).toEqual(viaSession.json());
    } finally {
      await client.close();
    }
  });
});
