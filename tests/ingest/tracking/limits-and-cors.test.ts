import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryRateLimitStore, redisRateLimitStore, type RateLimitStore } from '../../../ingest/http/rate-limit.js';
import { buildTestApp, createTestProgram, storeKinds, tableCounts, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';


// A fixed instant 5 s into a minute: the window cannot roll over mid-test.
const WINDOW_START = Math.floor(Date.now() / 60_000) * 60_000 + 60_000 * 1000;
const clock = () => WINDOW_START + 5_000;
const randomIp = () => `10.${[0, 0, 0].map(() => randomBytes(1)[0]).join('.')}`;

describe.each(storeKinds())('rate limits with the %s store', (storeKind) => {
  let t: TestDatabase;
  let store: RateLimitStore;
  let apps: FastifyInstance[];
  let program: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    store = storeKind === 'redis' ? await redisRateLimitStore(process.env.REDIS_URL!) : memoryRateLimitStore();
    // Two ingest processes sharing one store share one budget.
    apps = [await buildTestApp(t.db, store, clock), await buildTestApp(t.db, store, clock)];
    program = await createTestProgram(apps[0]!, t.db);
  });
  afterAll(async () => {
    for (const app of apps ?? []) await app.close();
    await store?.close();
    await t?.drop();
  });

  it('clicks: 60 a minute per client IP across both processes, then a typed 429 that records nothing', async () => {
    const ip = randomIp();
    const click = (i: number) =>
      apps[i % 2]!.inject({
        method: 'POST',
        url: '/api/v1/track/click',
        headers: { 'x-forwarded-for': ip },
        payload: { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` },
      });
    for (let i = 0; i < 60; i++) {
      const res = await click(i);
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('60');
      expect(res.headers['x-ratelimit-remaining']).toBe(String(59 - i));
      expect(res.headers['x-ratelimit-reset']).toBe(String((WINDOW_START + 60_000) / 1000));
      expect(res.headers['retry-after']).toBeUndefined();
    }
    const before = await tableCounts(t.db);
    const limited = await click(60);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ error: { status: 429, code: 'rate_limited', message: expect.any(String), retry_after_seconds: 55 } });
    expect(limited.headers['retry-after']).toBe('55');
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    expect(await tableCounts(t.db)).toEqual(before);
    // Another client is not affected.
    const other = await apps[0]!.inject({
      method: 'POST',
      url: '/api/v1/track/click',
      headers: { 'x-forwarded-for': randomIp() },
      payload: { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` },
    });
    expect(other.statusCode).toBe(200);
  });

  it('leads: 30 a minute per client IP', async () => {
    const ip = randomIp();
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) {
      const res = await apps[i % 2]!.inject({ method: 'POST', url: '/api/v1/track/lead', headers: { 'x-forwarded-for': ip }, payload: {} });
      statuses.push(res.statusCode);
    }
    expect(statuses.slice(0, 30).every((s) => s === 400)).toBe(true);
    expect(statuses[30]).toBe(429);
  });

  it('sale and refund share 120 a minute per API key', async () => {
    const p = await createTestProgram(apps[0]!, t.db);
    const headers = { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': randomIp() };
    for (let i = 0; i < 120; i++) {
      const res =
        i % 2 === 0
          ? await apps[i % 2]!.inject({ method: 'POST', url: '/api/v1/track/sale', headers, payload: { additional_data: { test_mode: true } } })
          : await apps[i % 2]!.inject({ method: 'POST', url: '/api/v1/track/refund', headers, payload: { transaction_id: 'none' } });
      expect(res.statusCode).toBe(i % 2 === 0 ? 200 : 404);
      expect(res.headers['x-ratelimit-limit']).toBe('120');
    }
    const limited = await apps[0]!.inject({ method: 'POST', url: '/api/v1/track/refund', headers, payload: { transaction_id: 'none' } });
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe('rate_limited');
    // The budget is per key: another key from the same IP is fine.
    const otherKey = await apps[1]!.inject({
      method: 'POST',
      url: '/api/v1/track/sale',
      headers: { authorization: `Bearer ${program.apiKey}`, 'x-forwarded-for': headers['x-forwarded-for'] },
      payload: { additional_data: { test_mode: true } },
    });
    expect(otherKey.statusCode).toBe(200);
  });

  it('readiness: 30 a minute per API key', async () => {
    const p = await createTestProgram(apps[0]!, t.db);
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) {
      const res = await apps[i % 2]!.inject({
        method: 'GET',
        url: '/api/v1/programs/me/readiness',
        headers: { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': randomIp() },
      });
      statuses.push(res.statusCode);
    }
    expect(statuses.slice(0, 30).every((s) => s === 200)).toBe(true);
    expect(statuses[30]).toBe(429);
  });
});

describe.each(databaseKinds())('CORS for browser-mode calls on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    program = await createTestProgram(app, t.db, { allowed_origins: ['https://brand.example'] });
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  it('preflight is answered for an allowed origin only', async () => {
    const ok = await app.inject({
      method: 'OPTIONS',
      url: '/api/v1/track/click',
      headers: { origin: 'https://brand.example', 'access-control-request-method': 'POST' },
    });
    expect(ok.statusCode).toBe(204);
    expect(ok.headers['access-control-allow-origin']).toBe('https://brand.example');
    expect(ok.headers['access-control-allow-methods']).toBe('POST');
    const denied = await app.inject({
      method: 'OPTIONS',
      url: '/api/v1/track/lead',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(denied.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('a click from an origin the program does not allow is refused and records nothing', async () => {
    const payload = { affiliate_url: `https://brand.example/?aff=${program.affCode}` };
    const before = await tableCounts(t.db);
    const denied = await app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { origin: 'https://evil.example' }, payload });
    expect(denied.statusCode).toBe(403);
    expect(await tableCounts(t.db)).toEqual(before);
    const ok = await app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { origin: 'https://brand.example' }, payload });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe('https://brand.example');
  });

  it('server-mode routes never answer browsers', async () => {
    const res = await app.inject({
      method: 'OPTIONS',
      url: '/api/v1/track/sale',
      headers: { origin: 'https://brand.example', 'access-control-request-method': 'POST' },
    });
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });
});
