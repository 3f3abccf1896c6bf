import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { buildTestApp, createTestProgram, freshIp, tableCounts, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

const customerRow = sql(
  't.lead_customer',
  `SELECT status, provisional, customer_key, email, test, signup_date IS NOT NULL AS signed_up, partner_id, program_id
     FROM customers WHERE id = $1`,
);

describe.each(databaseKinds())('POST /api/v1/track/lead on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let strict: TestProgram; // server_required
  let open: TestProgram; // browser_allowed
  let other: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    strict = await createTestProgram(app, t.db, { allowed_origins: ['https://shop.test.example'] });
    open = await createTestProgram(app, t.db, { lead_auth: 'browser_allowed' });
    other = await createTestProgram(app, t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const newClick = async (p: TestProgram, test = false) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/track/click',
      headers: { 'x-forwarded-for': freshIp() },
      payload: { affiliate_url: `https://shop.test.example/?aff=${p.affCode}`, additional_data: { test_mode: test } },
    });
    expect(res.statusCode).toBe(200);
    return res.json().click_id as string;
  };
  const lead = (payload: unknown, key?: string, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/track/lead',
      headers: { 'x-forwarded-for': freshIp(), ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}), ...headers },
      payload: payload as object,
    });

  it('server mode: a lead from a click, customer key and email saved, partner attributed', async () => {
    const clickId = await newClick(strict);
    const res = await lead({ click_id: clickId, customer_key: 'user-1', email: 'a@b.example' }, strict.apiKey);
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(data).toMatchObject({ program_id: strict.programId, click_id: clickId, status: 'lead' });
    expect(data.provisional).toBeUndefined();
    const row = await t.db.one(customerRow, [data.customer_id]);
    expect(row).toEqual({
      status: 'lead', provisional: false, customer_key: 'user-1', email: 'a@b.example', test: false, signed_up: true,
      partner_id: strict.partnerId, program_id: strict.programId,
    });
  });

  it('a repeated lead answers 400 with the current status and changes nothing', async () => {
    const clickId = await newClick(strict);
    expect((await lead({ click_id: clickId, customer_key: 'user-2' }, strict.apiKey)).statusCode).toBe(200);
    const before = await tableCounts(t.db);
    for (const payload of [{ click_id: clickId }, { customer_key: 'user-2' }]) {
      const res = await lead(payload, strict.apiKey);
      expect(res.statusCode).toBe(400);
      expect(res.json().error.message).toBe('Customer status cannot be updated to lead. Current status: lead');
    }
    expect(await tableCounts(t.db)).toEqual(before);
  });

  it('browser mode on a server_required program: provisional, key not saved; repeat is 200 and records nothing; server lead settles', async () => {
    const clickId = await newClick(strict);
    const first = await lead({ click_id: clickId, customer_key: 'claimed-by-browser' }, undefined);
    expect(first.statusCode).toBe(200);
    expect(first.json().data).toMatchObject({ status: 'lead', provisional: true });
    const id = first.json().data.customer_id;
    expect(await t.db.one(customerRow, [id])).toMatchObject({ provisional: true, customer_key: null, email: null });

    const before = await tableCounts(t.db);
    const again = await app.inject({
      method: 'POST', url: '/api/v1/track/lead', headers: { authorization: 'Bearer   ', 'x-forwarded-for': freshIp() }, payload: { click_id: clickId },
    });
    expect(again.statusCode).toBe(200);
    expect(again.json().data).toMatchObject({ customer_id: id, provisional: true });
    // `Bearer ` as it arrives over real HTTP (trailing whitespace stripped): an empty token, browser mode too.
    const bare = await app.inject({
      method: 'POST', url: '/api/v1/track/lead', headers: { authorization: 'Bearer', 'x-forwarded-for': freshIp() }, payload: { click_id: clickId },
    });
    expect(bare.statusCode).toBe(200);
    expect(bare.json().data).toMatchObject({ customer_id: id, provisional: true });
    expect(await tableCounts(t.db)).toEqual(before);

    const settled = await lead({ click_id: clickId, customer_key: 'user-3' }, strict.apiKey);
    expect(settled.statusCode).toBe(200);
    expect(settled.json().data.provisional).toBeUndefined();
    expect(await t.db.one(customerRow, [id])).toMatchObject({ status: 'lead', provisional: false, customer_key: 'user-3' });
    const events = await t.db.many<{ change: string }>(
      sql('t.lead_changes', `SELECT payload->>'change' AS change FROM outbox WHERE aggregate_key = $1 ORDER BY id`),
      [`customer:${id}`],
    );
    expect(events.map((e) => e.change)).toEqual(['provisional', 'settled']);
  });

  it('browser mode on a browser_allowed program settles at once; a repeat browser lead is 400', async () => {
    const clickId = await newClick(open);
    const res = await lead({ click_id: clickId }, undefined);
    expect(res.statusCode).toBe(200);
    expect(res.json().data.provisional).toBeUndefined();
    expect(await t.db.one(customerRow, [res.json().data.customer_id])).toMatchObject({ provisional: false, customer_key: null });
    const again = await lead({ click_id: clickId }, undefined);
    expect(again.statusCode).toBe(400);
    expect(again.json().error.message).toBe('Customer status cannot be updated to lead. Current status: lead');
  });

  it('first click wins: a known customer keeps the partner of its first click', async () => {
    const first = await newClick(strict);
    const res = await lead({ click_id: first, customer_key: 'user-first' }, strict.apiKey);
    const second = await newClick(strict);
    const again = await lead({ click_id: second, customer_key: 'user-first' }, strict.apiKey);
    expect(again.statusCode).toBe(400);
    const row = await t.db.one<{ click_id: string }>(sql('t.lead_click', 'SELECT click_id FROM customers WHERE id = $1'), [res.json().data.customer_id]);
    expect(row!.click_id).toBe(first);
  });

  it.each([
    [{}, 'click_id or customer_key is required'],
    [{ additional_data: { test_mode: true } }, 'click_id or customer_key is required'],
    [{ click_id: 'no-such-click' }, 'Customer not found. Provide a valid click_id or customer_key.'],
    [{ customer_key: 'nobody' }, 'Customer not found. Provide a valid click_id or customer_key.'],
  ])('400 for %j', async (payload, message) => {
    const before = await tableCounts(t.db);
    const res = await lead(payload, strict.apiKey);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ data: null, error: { status: 400, name: 'BadRequestError', message, details: {} } });
    expect(await tableCounts(t.db)).toEqual(before);
  });

  it('server mode: a customer of another program is refused', async () => {
    const clickId = await newClick(other);
    const res = await lead({ click_id: clickId, customer_key: 'x' }, strict.apiKey);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toBe('Customer does not belong to this program');
  });

  it('a token that matches no program is 401; a malformed header is 401', async () => {
    const clickId = await newClick(strict);
    const res = await lead({ click_id: clickId }, 'aff_not-a-real-key');
    expect(res.statusCode).toBe(401);
    expect(res.json().error).toMatchObject({ status: 401, name: 'UnauthorizedError', message: 'Invalid API token' });
    const basic = await lead({ click_id: clickId }, undefined, { authorization: 'Basic abc' });
    expect(basic.statusCode).toBe(401);
    expect(basic.json().error.message).toBe('Missing or malformed Authorization header. Expected: Bearer <token>');
  });

  it('test mode: the key and additional_data.program_id of another program give 403; a matching one records a test lead', async () => {
    const clickId = await newClick(strict, true);
    const before = await tableCounts(t.db);
    const res = await lead({ click_id: clickId, additional_data: { test_mode: true, program_id: other.programId } }, strict.apiKey);
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toMatchObject({ status: 403, name: 'ForbiddenError', message: 'program_id does not match the API key' });
    expect(await tableCounts(t.db)).toEqual(before);
    // Without a key the check does not apply.
    const ok = await lead({ click_id: clickId, additional_data: { test_mode: true, program_id: other.programId } }, undefined);
    expect(ok.statusCode).toBe(200);
    const logs = await t.db.many(sql('t.lead_logs', `SELECT 1 FROM tracking_logs WHERE event_type = 'lead' AND entity_id = $1`), [
      String(ok.json().data.customer_id),
    ]);
    expect(logs).toHaveLength(1);
  });

  it('CORS: a browser lead from an origin the program does not allow is refused and records nothing', async () => {
    const clickId = await newClick(strict);
    const before = await tableCounts(t.db);
    const denied = await lead({ click_id: clickId }, undefined, { origin: 'https://evil.example' });
    expect(denied.statusCode).toBe(403);
    expect(denied.headers['access-control-allow-origin']).toBeUndefined();
    expect(await tableCounts(t.db)).toEqual(before);
    const allowed = await lead({ click_id: clickId }, undefined, { origin: 'https://shop.test.example' });
    expect(allowed.statusCode).toBe(200);
    expect(allowed.headers['access-control-allow-origin']).toBe('https://shop.test.example');
  });
});
