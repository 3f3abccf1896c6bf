import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { buildTestApp, createTestProgram, freshIp, tableCounts, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

describe.each(databaseKinds())('POST /api/v1/track/click on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    program = await createTestProgram(app, t.db, { attribution_window_days: 45, allowed_origins: ['https://shop.test.example'] });
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const click = (payload: unknown, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { 'x-forwarded-for': freshIp(), ...headers }, payload: payload as object });

  it('records a click and answers with its id and the attribution window', async () => {
    const res = await click({ affiliate_url: `https://shop.test.example/pricing?aff=${program.affCode}&utm=x` });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({ success: true, click_id: expect.any(String), cookie_window_days: 45 });
    expect(res.headers['x-request-id']).toBeTruthy();
    const row = await t.db.one<{ program_id: number; test: boolean }>(sql('t.click_row', 'SELECT program_id, test FROM clicks WHERE click_id = $1'), [body.click_id]);
    expect(row).toEqual({ program_id: program.programId, test: false });
    const events = await t.db.many<{ event_type: string }>(sql('t.click_events', 'SELECT event_type FROM outbox WHERE aggregate_key = $1'), [body.click_id]);
    expect(events.map((e) => e.event_type)).toEqual(['click.recorded']);
  });

  it.each([
    [{}, 'affiliate_url is required'],
    [{ affiliate_url: '' }, 'affiliate_url is required'],
    [{ affiliate_url: 42 }, 'Invalid affiliate_url'],
    [{ affiliate_url: 'not a url' }, 'Invalid affiliate_url'],
    [{ affiliate_url: '/relative?aff=x' }, 'Invalid affiliate_url'],
    [{ affiliate_url: 'https://shop.test.example/' }, 'No aff parameter found in affiliate_url'],
    [{ affiliate_url: 'https://shop.test.example/?aff=' }, 'No aff parameter found in affiliate_url'],
    [{ affiliate_url: 'https://shop.test.example/?aff=nobody-has-this' }, 'Referral link not found'],
  ])('refuses %j with 400 "%s" and writes nothing', async (payload, message) => {
    const before = await tableCounts(t.db);
    const res = await click(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ data: null, error: { status: 400, name: 'BadRequestError', message, details: {} } });
    expect(await tableCounts(t.db)).toEqual(before);
  });

  it('clicks sent together are written together, each with its own answer', async () => {
    const before = await tableCounts(t.db);
    const bodies = Array.from({ length: 40 }, (_, i) =>
      i % 4 === 3
        ? { affiliate_url: 'https://shop.test.example/?aff=unknown-code' }
        : { affiliate_url: `https://shop.test.example/?aff=${program.affCode}`, additional_data: { test_mode: i % 4 === 1 } },
    );
    const responses = await Promise.all(bodies.map((b) => click(b)));
    responses.forEach((res, i) => {
      expect(res.statusCode, `click ${i}`).toBe(i % 4 === 3 ? 400 : 200);
    });
    const ids = responses.filter((r) => r.statusCode === 200).map((r) => r.json().click_id);
    expect(new Set(ids).size).toBe(30);
    const after = await tableCounts(t.db);
    expect(after.clicks - before.clicks).toBe(30);
    expect(after.tracking_logs - before.tracking_logs).toBe(10);
    expect(after.outbox - before.outbox).toBe(40);
  });
});
