import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../core/log.js';
import { buildApp } from '../../../ingest/app.js';
import { memoryRateLimitStore } from '../../../ingest/http/rate-limit.js';
import { DOCS_BASE_URL, buildTestApp, createTestProgram, freshIp, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

/** What the click path's shortcuts (direct 200 serializer, lazy request loggers) must keep exactly. */
describe.each(databaseKinds())('click path on %s', (kind) => {
  let t: TestDatabase;
  let program: TestProgram;
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const apps: FastifyInstance[] = [];

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    const setup = await buildTestApp(t.db);
    program = await createTestProgram(setup, t.db, { attribution_window_days: 45 });
    await setup.close();
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await t?.drop();
  });

  const appAt = async (level: string) => {
    const app = await buildApp({
      db: t.db,
      rateLimits: memoryRateLimitStore(),
      logger: createLogger(level, sink),
      trustProxy: ['127.0.0.1'],
      tracking: { platformFeeBps: 2_000, docsBaseUrl: DOCS_BASE_URL },
    });
    apps.push(app);
    return app;
  };
  const click = (app: FastifyInstance, payload: object) =>
    app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { 'x-forwarded-for': freshIp() }, payload });
  const logged = () => lines.splice(0).map((l) => JSON.parse(l) as { level: number; msg: string; reqId?: string });

  it('answers a click with the bytes JSON.stringify gives for the documented shape', async () => {
    const app = await appAt('warn');
    const res = await click(app, { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const { click_id } = res.json() as { click_id: string };
    expect(click_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(res.body).toBe(JSON.stringify({ success: true, click_id, cookie_window_days: 45 }));
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(res.body)));
  });

  it('at warn, a click that succeeds logs nothing and a refused one logs its warning with the request id', async () => {
    const app = await appAt('warn');
    logged();
    const ok = await click(app, { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` });
    expect(ok.statusCode).toBe(200);
    expect(logged()).toEqual([]);
    const refused = await click(app, { affiliate_url: 'https://shop.test.example/?aff=no-such-link' });
    expect(refused.statusCode).toBe(400);
    const warnings = logged();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, msg: 'request refused', reqId: refused.headers['x-request-id'] });
  });

  it('at info, every request logs incoming and completed lines carrying its request id', async () => {
    const app = await appAt('info');
    logged();
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/track/click',
      headers: { 'x-forwarded-for': freshIp(), 'x-request-id': 'caller-id-1' },
      payload: { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` },
    });
    expect(res.statusCode).toBe(200);
    const entries = logged();
    expect(entries.map((e) => [e.msg, e.reqId])).toEqual([
      ['incoming request', 'caller-id-1'],
      ['request completed', 'caller-id-1'],
    ]);
  });
});
