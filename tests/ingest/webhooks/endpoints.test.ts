/**
 * The webhook endpoints API (issue 32, points 1, 4 and 5): owners write, members read; the secret
 * is shown once and stored sealed; every bad input is a 400 in the platform envelope that writes
 * nothing, every refused address class and http:// among them; the delivery log's cursor is checked.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { systemResolver } from '../../../core/outbound-address.js';
import { createTestProgram, createTestWorkspace, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { buildWebhookApp } from '../../support/webhooks.js';

const counts = sql(
  'test.webhook_counts',
  `SELECT (SELECT count(*) FROM webhook_endpoints)::int AS endpoints, (SELECT count(*) FROM webhook_events)::int AS events,
          (SELECT count(*) FROM webhook_deliveries)::int AS deliveries`,
);

describe.each(databaseKinds())('webhook endpoints API on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;
  // Names as the test's DNS answers them (the creation check resolves names).
  const dns: Record<string, string[]> = { 'hooks.brand.example': ['93.184.215.14'], 'internal.brand.example': ['10.1.2.3'], 'six.brand.example': ['2606:4700::1111', 'fd12::1'] };

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    // Other names (localhost) through the system's resolver.
    app = await buildWebhookApp(t.db, { allowPrivateUrls: false, resolve: async (host) => dns[host] ?? systemResolver(host) });
    program = await createTestProgram(app, t.db);
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const base = () => `/api/tracking/programs/${program.programId}/webhook-endpoints`;
  const as = (token: string) => ({ authorization: `Bearer ${token}` });
  const owner = () => as(program.workspace.ownerToken);
  const member = () => as(program.workspace.memberToken);
  const written = async () => (await t.db.one<{ endpoints: number; events: number; deliveries: number }>(counts))!;

  it('creates, lists, reads, changes and deletes endpoints; the secret is shown once and stored sealed', async () => {
    const created = await app.inject({ method: 'POST', url: base(), headers: owner(), payload: { url: 'https://hooks.brand.example/affiliates', events: ['sale.recorded', 'commission.created'], description: 'CRM' } });
    expect(created.statusCode, created.body).toBe(200);
    const ep = created.json().data;
    expect(ep).toMatchObject({ url: 'https://hooks.brand.example/affiliates', events: ['sale.recorded', 'commission.created'], description: 'CRM', status: 'enabled', disabled_reason: null });
    expect(ep.secret).toMatch(/^whsec_[A-Za-z0-9]{44}$/);
    const stored = await t.db.one<{ secret: string }>(sql('test.sealed', `SELECT secret FROM webhook_endpoints WHERE id = $1`), [ep.id]);
    expect(stored!.secret).not.toContain(ep.secret.slice(6));
    expect(stored!.secret.startsWith('v1.')).toBe(true);
    const second = await app.inject({ method: 'POST', url: base(), headers: owner(), payload: { url: 'https://[2606:4700::1111]/h', events: ['lead.created'] } });
    expect(second.statusCode, second.body).toBe(200);

    const list = await app.inject({ method: 'GET', url: base(), headers: member() });
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((e: { id: string }) => e.id)).toEqual([ep.id, second.json().data.id]);
    expect(list.json().data[0]).not.toHaveProperty('secret');
    const one = await app.inject({ method: 'GET', url: `${base()}/${ep.id}`, headers: member() });
    expect(one.json().data).toMatchObject({ id: ep.id, events: ['sale.recorded', 'commission.created'] });

    const changed = await app.inject({ method: 'PATCH', url: `${base()}/${ep.id}`, headers: owner(), payload: { events: ['sale.refunded'], description: null, enabled: false } });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().data).toMatchObject({ events: ['sale.refunded'], description: null, status: 'disabled', disabled_reason: 'manual' });

    const gone = await app.inject({ method: 'DELETE', url: `${base()}/${ep.id}`, headers: owner() });
    expect(gone.json()).toEqual({ data: { id: ep.id } });
    expect((await app.inject({ method: 'GET', url: `${base()}/${ep.id}`, headers: owner() })).statusCode).toBe(404);
    await app.inject({ method: 'DELETE', url: `${base()}/${second.json().data.id}`, headers: owner() });
  });

  it('lets members read but only owners write; other workspaces see nothing', async () => {
    const created = await app.inject({ method: 'POST', url: base(), headers: owner(), payload: { url: 'https://hooks.brand.example/x', events: ['sale.recorded'] } });
    const id = created.json().data.id;
    const before = await written();
    for (const [method, url, payload] of [
      ['POST', base(), { url: 'https://hooks.brand.example/y', events: ['sale.recorded'] }],
      ['PATCH', `${base()}/${id}`, { enabled: false }],
      ['DELETE', `${base()}/${id}`, undefined],
      ['POST', `${base()}/${id}/rotate-secret`, undefined],
      ['POST', `${base()}/${id}/test`, undefined],
    ] as const) {
      const res = await app.inject({ method, url, headers: member(), payload });
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.json().error.message).toBe('Only a workspace owner can create, change, rotate, test or delete webhook endpoints and redeliver their events');
    }
    const stranger = await createTestWorkspace(t.db);
    expect((await app.inject({ method: 'GET', url: base(), headers: as(stranger.ownerToken) })).statusCode).toBe(403);
    expect((await app.inject({ method: 'GET', url: base() })).statusCode).toBe(401);
    expect(await written()).toEqual(before);
    await app.inject({ method: 'DELETE', url: `${base()}/${id}`, headers: owner() });
  });

  const refusedUrls: [string, string | RegExp][] = [
    ['http://hooks.brand.example/h', 'url must use https'],
    ['https://127.0.0.1/h', 'url must not point to a private, loopback, link-local or metadata address: 127.0.0.1 is loopback'],
    ['https://localhost/h', /^url must not point to a private, loopback, link-local or metadata address: localhost resolves to (127\.0\.0\.1|::1), which is loopback$/],
    ['https://[::1]/h', 'url must not point to a private, loopback, link-local or metadata address: ::1 is loopback'],
    ['https://10.0.0.8/h', 'url must not point to a private, loopback, link-local or metadata address: 10.0.0.8 is private'],
    ['https://192.168.1.20:8443/h', 'url must not point to a private, loopback, link-local or metadata address: 192.168.1.20 is private'],
    ['https://172.16.5.4/h', 'url must not point to a private, loopback, link-local or metadata address: 172.16.5.4 is private'],
    ['https://[fd00::5]/h', 'url must not point to a private, loopback, link-local or metadata address: fd00::5 is private'],
    ['https://169.254.10.10/h', 'url must not point to a private, loopback, link-local or metadata address: 169.254.10.10 is link-local'],
    ['https://[fe80::1]/h', 'url must not point to a private, loopback, link-local or metadata address: fe80::1 is link-local'],
    ['https://169.254.169.254/latest/meta-data', 'url must not point to a private, loopback, link-local or metadata address: 169.254.169.254 is metadata'],
    ['https://[::ffff:127.0.0.1]/h', 'url must not point to a private, loopback, link-local or metadata address: ::ffff:7f00:1 is loopback'],
    ['https://2130706433/h', 'url must not point to a private, loopback, link-local or metadata address: 127.0.0.1 is loopback'],
    ['https://0.0.0.0/h', 'url must not point to a private, loopback, link-local or metadata address: 0.0.0.0 is reserved'],
    ['https://internal.brand.example/h', 'url must not point to a private, loopback, link-local or metadata address: internal.brand.example resolves to 10.1.2.3, which is private'],
    ['https://six.brand.example/h', 'url must not point to a private, loopback, link-local or metadata address: six.brand.example resolves to fd12::1, which is private'],
  ];

  it.each(refusedUrls)('refuses %s at creation and writes nothing', async (url, message) => {
    const before = await written();
    const res = await app.inject({ method: 'POST', url: base(), headers: owner(), payload: { url, events: ['sale.recorded'] } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ data: null, error: { status: 400, name: 'BadRequestError', message: expect.stringMatching(message), details: {} } });
    expect(await written()).toEqual(before);
  });

  it('refuses a changed URL as it refuses a new one', async () => {
    const id = (await app.inject({ method: 'POST', url: base(), headers: owner(), payload: { url: 'https://hooks.brand.example/x', events: ['sale.recorded'] } })).json().data.id;
    const res = await app.inject({ method: 'PATCH', url: `${base()}/${id}`, headers: owner(), payload: { url: 'https://10.0.0.1/x' } });
    expect(res.statusCode).toBe(400);
    expect((await app.inject({ method: 'GET', url: `${base()}/${id}`, headers: owner() })).json().data.url).toBe('https://hooks.brand.example/x');
    await app.inject({ method: 'DELETE', url: `${base()}/${id}`, headers: owner() });
  });

  const badBodies: [string, unknown, string][] = [
    ['no url', { events: ['sale.recorded'] }, 'url must be an absolute https URL of at most 2048 characters, without a fragment'],
    ['a relative url', { url: '/hooks', events: ['sale.recorded'] }, 'url must be an absolute https URL of at most 2048 characters, without a fragment'],
    ['a ftp url', { url: 'ftp://hooks.brand.example/', events: ['sale.recorded'] }, 'url must be an absolute https URL of at most 2048 characters, without a fragment'],
    ['a fragment', { url: 'https://hooks.brand.example/#x', events: ['sale.recorded'] }, 'url must be an absolute https URL of at most 2048 characters, without a fragment'],
    ['a long url', { url: `https://hooks.brand.example/${'a'.repeat(2048)}`, events: ['sale.recorded'] }, 'url must be an absolute https URL of at most 2048 characters, without a fragment'],
    ['no events', { url: 'https://hooks.brand.example/' }, 'events must be a non-empty list of distinct event types'],
    ['empty events', { url: 'https://hooks.brand.example/', events: [] }, 'events must be a non-empty list of distinct event types'],
    ['an unknown event', { url: 'https://hooks.brand.example/', events: ['click.recorded'] }, 'events must be a non-empty list of distinct event types'],
    ['a repeated event', { url: 'https://hooks.brand.example/', events: ['sale.recorded', 'sale.recorded'] }, 'events must be a non-empty list of distinct event types'],
    ['a long description', { url: 'https://hooks.brand.example/', events: ['sale.recorded'], description: 'd'.repeat(501) }, 'description must be a string of 1 to 500 characters, or null'],
    ['an unknown field', { url: 'https://hooks.brand.example/', events: ['sale.recorded'], secret: 'whsec_mine' }, 'Unknown field: secret'],
  ];

  it.each(badBodies)('answers %s with a 400 that writes nothing', async (_name, payload, message) => {
    const before = await written();
    const res = await app.inject({ method: 'POST', url: base(), headers: owner(), payload: payload as object });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message.startsWith(message)).toBe(true);
    expect(await written()).toEqual(before);
  });

  it('answers unknown endpoints and deliveries with 404, bad ids and cursors with 400', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    expect((await app.inject({ method: 'GET', url: `${base()}/${missing}`, headers: owner() })).json().error).toMatchObject({ status: 404, message: 'Webhook endpoint not found' });
    expect((await app.inject({ method: 'GET', url: `${base()}/not-a-uuid`, headers: owner() })).json().error).toMatchObject({ status: 400, message: 'endpointId must be a webhook endpoint id' });
    const id = (await app.inject({ method: 'POST', url: base(), headers: owner(), payload: { url: 'https://hooks.brand.example/x', events: ['sale.recorded'] } })).json().data.id;
    const redeliver = await app.inject({ method: 'POST', url: `${base()}/${id}/deliveries/${missing}/redeliver`, headers: owner() });
    expect(redeliver.json().error).toMatchObject({ status: 404, message: 'Delivery not found' });
    const cursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const bad of ['***', cursor(['webhook_deliveries', 'yesterday', missing]), cursor(['sales', '2026-01-01 00:00:00+00', missing]), cursor(['webhook_deliveries', '2026-01-01 00:00:00+00', '12'])]) {
      const res = await app.inject({ method: 'GET', url: `${base()}/${id}/deliveries?cursor=${bad}`, headers: owner() });
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().error.message).toBe('cursor is not valid; pass the next_cursor of a previous page unchanged');
    }
    expect((await app.inject({ method: 'GET', url: `${base()}/${id}/deliveries?limit=0`, headers: owner() })).statusCode).toBe(400);
    expect((await app.inject({ method: 'GET', url: `${base()}/${id}/deliveries?status=lost`, headers: owner() })).statusCode).toBe(400);
    await app.inject({ method: 'DELETE', url: `${base()}/${id}`, headers: owner() });
  });

  it('pages the delivery log newest first with next_cursor', async () => {
    const id = (await app.inject({ method: 'POST', url: base(), headers: owner(), payload: { url: 'https://hooks.brand.example/x', events: ['sale.recorded'] } })).json().data.id;
    for (let i = 0; i < 5; i += 1) expect((await app.inject({ method: 'POST', url: `${base()}/${id}/test`, headers: owner() })).statusCode).toBe(202);
    const seen: string[] = [];
    let url = `${base()}/${id}/deliveries?limit=2`;
    for (let pages = 0; pages < 5; pages += 1) {
      const res = await app.inject({ method: 'GET', url, headers: member() });
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      seen.push(...body.data.map((d: { id: string; status: string; event_type: string }) => `${d.event_type}:${d.status}:${d.id}`));
      if (!body.next_cursor) break;
      url = `${base()}/${id}/deliveries?limit=2&cursor=${body.next_cursor}`;
    }
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
    expect(seen.every((s) => s.startsWith('webhook.test:pending:'))).toBe(true);
    await app.inject({ method: 'DELETE', url: `${base()}/${id}`, headers: owner() });
  });
});
