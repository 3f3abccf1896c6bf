import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createTestProgram, createTestWorkspace, freshIp, type Workspace } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

describe.each(databaseKinds())('management API on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let ws: Workspace;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    ws = await createTestWorkspace(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const as = (token: string | null): Record<string, string> => (token === null ? {} : { authorization: `Bearer ${token}` });
  const create = (payload: unknown, token: string | null = ws.ownerToken) =>
    app.inject({ method: 'POST', url: '/api/tracking/programs', headers: as(token), payload: payload as object });

  it('creates a program with the spec defaults and a masked key, never the key itself', async () => {
    const res = await create({ name: 'Shop', domain: 'shop.example', commission_type: 'recurring_percent', commission_rate: 12.5 });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({
      workspace_id: ws.workspaceId,
      name: 'Shop',
      domain: 'shop.example',
      commission_type: 'recurring_percent',
      commission_rate: 12.5,
      attribution_window_days: 60,
      lead_auth: 'server_required',
      paymentTrackingMode: 'processor_connect',
      allowed_origins: [],
      api_token_masked: expect.stringMatching(/^aff_\*{8}.{4}$/),
    });
    expect(res.json().data.api_key).toBeUndefined();
  });

  it.each([
    [{}, 'Missing required fields: name, domain, commission_type, commission_rate'],
    [{ name: 'a', domain: 'b', commission_type: 'percent' }, 'Missing required fields: name, domain, commission_type, commission_rate'],
    [{ name: 'a', domain: 'b', commission_type: 'cpa', commission_rate: 1 }, 'Invalid commission_type: cpa. Valid: percent, fixed, recurring_percent, recurring_fixed'],
    [{ name: 'a', domain: 'b', commission_type: 'fixed', commission_rate: 0 }, 'commission_rate must be a positive number'],
    [{ name: 'a', domain: 'b', commission_type: 'fixed', commission_rate: '5' }, 'commission_rate must be a positive number'],
    [{ name: 'a', domain: 'b', commission_type: 'percent', commission_rate: 150 }, 'commission_rate must be at most 100 for percent commissions'],
    [{ name: 'a', domain: 'b', commission_type: 'fixed', commission_rate: 5, allowed_origins: ['https://a.example/path'] }, 'allowed_origins must be a list of at most 50 origins such as https://shop.example.com'],
    [{ name: 'a', domain: 'b', commission_type: 'fixed', commission_rate: 5, lead_auth: 'anyone' }, 'lead_auth must be server_required or browser_allowed'],
    [{ name: 'a', domain: 'b', commission_type: 'fixed', commission_rate: 5, colour: 'red' }, 'Unknown field: colour'],
  ])('refuses %j: %s', async (payload, message) => {
    const res = await create(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ data: null, error: { status: 400, name: 'BadRequestError', message, details: {} } });
  });

  it('takes the domain as a host name only, stored lower case (IDN as punycode); anything else is refused and writes nothing', async () => {
    const made = await create({ name: 'Shop', domain: 'Shop.Bücher.Example', commission_type: 'fixed', commission_rate: 5 });
    expect(made.statusCode).toBe(200);
    expect(made.json().data.domain).toBe('shop.xn--bcher-kva.example');
    const id = made.json().data.id as number;
    const list = async () => (await app.inject({ method: 'GET', url: '/api/tracking/programs', headers: as(ws.ownerToken) })).json().data as { id: number; domain: string }[];
    const before = await list();
    const message = 'domain must be a host name such as shop.example.com (no scheme, port or path)';
    for (const domain of ['https://shop.example', 'shop.example/path', 'shop.example:8080', 'shop example', 'user@shop.example', 'a..b', '-shop.example', 'shop_1.example', '', 'x'.repeat(64) + '.example', 'shop.example?aff=1', 7]) {
      const created = await create({ name: 'Shop', domain, commission_type: 'fixed', commission_rate: 5 });
      expect(created.statusCode, String(domain)).toBe(400);
      expect(created.json().error.message).toBe(message);
      const patched = await app.inject({ method: 'PATCH', url: `/api/tracking/programs/${id}`, headers: as(ws.ownerToken), payload: { domain } });
      expect(patched.statusCode, String(domain)).toBe(400);
      expect(patched.json().error.message).toBe(message);
    }
    expect(await list()).toEqual(before);
    expect(before.find((p) => p.id === id)?.domain).toBe('shop.xn--bcher-kva.example');
  });

  it('needs a dashboard session; a program key is not one', async () => {
    const p = await createTestProgram(app, t.db, {}, ws);
    for (const token of [null, 'dsh_unknown', p.apiKey]) {
      const res = await create({ name: 'a', domain: 'b', commission_type: 'fixed', commission_rate: 1 }, token);
      expect(res.statusCode).toBe(401);
      expect(res.json().error.name).toBe('UnauthorizedError');
    }
  });

  it("refuses a non-member with 403, the same as an unknown program", async () => {
    const p = await createTestProgram(app, t.db, {}, ws);
    const stranger = await createTestWorkspace(t.db);
    for (const url of [`/api/tracking/programs/${p.programId}`, '/api/tracking/programs/999999']) {
      const res = await app.inject({ method: 'PATCH', url, headers: as(stranger.ownerToken), payload: { name: 'x' } });
      expect(res.statusCode).toBe(403);
    }
  });

  it('members change settings; partners and links are created; a disabled link answers 410 link_disabled and records nothing', async () => {
    const p = await createTestProgram(app, t.db, {}, ws);
    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/tracking/programs/${p.programId}`,
      headers: as(ws.memberToken),
      payload: { lead_auth: 'browser_allowed', attribution_window_days: 30, allowed_origins: ['https://shop.example/'] },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data).toMatchObject({ lead_auth: 'browser_allowed', attribution_window_days: 30, allowed_origins: ['https://shop.example'] });

    const partner = await app.inject({
      method: 'POST',
      url: `/api/tracking/programs/${p.programId}/partners`,
      headers: as(ws.memberToken),
      payload: { name: 'Alice', email: 'alice@example.com', aff_code: 'alice-2026' },
    });
    expect(partner.statusCode).toBe(200);
    expect(partner.json().data).toMatchObject({ aff_code: 'alice-2026', status: 'approved', referral_url: 'https://shop.test.example/?aff=alice-2026' });
    const taken = await app.inject({
      method: 'POST',
      url: `/api/tracking/programs/${p.programId}/partners`,
      headers: as(ws.memberToken),
      payload: { name: 'Bob', aff_code: 'alice-2026' },
    });
    expect(taken.statusCode).toBe(409);

    const link = `/api/tracking/programs/${p.programId}/links/alice-2026`;
    const off = await app.inject({ method: 'PATCH', url: link, headers: as(ws.ownerToken), payload: { enabled: false } });
    expect(off.json().data).toEqual({ aff_code: 'alice-2026', enabled: false });
    const click = () =>
      app.inject({
        method: 'POST',
        url: '/api/v1/track/click',
        headers: { 'x-forwarded-for': freshIp() },
        payload: { affiliate_url: 'https://shop.example/?aff=alice-2026' },
      });
    const gone = await click();
    expect(gone.statusCode).toBe(410);
    expect(gone.json()).toEqual({
      success: false,
      message: expect.any(String),
      error: { code: 'link_disabled', message: expect.any(String), hint: expect.any(String) },
    });
    await app.inject({ method: 'PATCH', url: link, headers: as(ws.ownerToken), payload: { enabled: true } });
    expect((await click()).statusCode).toBe(200);
    const missing = await app.inject({ method: 'PATCH', url: `/api/tracking/programs/${p.programId}/links/nope`, headers: as(ws.ownerToken), payload: { enabled: true } });
    expect(missing.statusCode).toBe(404);
  });

  it('serves an OpenAPI document describing every route', async () => {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toMatch(/^3\./);
    for (const path of [
      '/api/v1/track/click', '/api/v1/track/lead', '/api/v1/track/sale', '/api/v1/track/refund', '/api/v1/programs/me/readiness',
      '/api/tracking/programs', '/api/tracking/programs/{programId}', '/api/tracking/programs/{programId}/api-key',
      '/api/tracking/programs/{programId}/partners', '/api/tracking/programs/{programId}/links/{affCode}',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    expect(doc.paths['/api/v1/track/sale'].post.requestBody.content['application/json'].schema.properties.amount_cents).toBeDefined();
  });
});
