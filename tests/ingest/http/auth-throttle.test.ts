import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, NamedQuery } from '../../../core/db.js';
import { createLogger } from '../../../core/log.js';
import { buildApp } from '../../../ingest/app.js';
import { AUTH_FAILURES_PER_MINUTE } from '../../../ingest/http/auth/failed-auth.js';
import { MEMORY_STORE_MAX_KEYS, memoryRateLimitStore, redisRateLimitStore, type RateLimitStore } from '../../../ingest/http/rate-limit.js';
import { createTestProgram, DOCS_BASE_URL, FEE_BPS, storeKinds, tableCounts, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

// A fixed instant 5 s into a minute far from any other test's: the window cannot roll over mid-test.
const WINDOW_START = Math.floor(Date.now() / 60_000) * 60_000 + 60_000 * 3000 + 60_000 * Math.floor(Math.random() * 1000);
const clock = () => WINDOW_START + 5_000;
const randomIp = () => `10.${[0, 0, 0].map(() => randomBytes(1)[0]).join('.')}`;
const guess = () => `aff_${randomBytes(24).toString('base64url')}`;

/** The database as the app sees it, counting the statements that look a credential up. */
function countingLookups(db: Database) {
  const counter = { lookups: 0 };
  const isLookup = (q: NamedQuery) => /key|session|token/i.test(q.name);
  const counted: Database = Object.assign(Object.create(db) as Database, {
    many: <R>(q: NamedQuery, p?: readonly unknown[]) => {
      if (isLookup(q)) counter.lookups += 1;
      return db.many<R>(q, p);
    },
    one: <R>(q: NamedQuery, p?: readonly unknown[]) => {
      if (isLookup(q)) counter.lookups += 1;
      return db.one<R>(q, p);
    },
  });
  return { counted, counter };
}

const combos = databaseKinds().flatMap((db) => storeKinds().map((store) => [db, store] as const));

describe.each(combos)('failed authentications on %s with the %s store', (dbKind, storeKind) => {
  let t: TestDatabase;
  let store: RateLimitStore;
  let apps: FastifyInstance[];
  let program: TestProgram;
  let counter: { lookups: number };

  beforeAll(async () => {
    t = await createTestDatabase(dbKind);
    store = storeKind === 'redis' ? await redisRateLimitStore(process.env.REDIS_URL!) : memoryRateLimitStore();
    const lookups = countingLookups(t.db);
    counter = lookups.counter;
    const build = async () => {
      const app = await buildApp({
        db: lookups.counted,
        rateLimits: store,
        clock,
        logger: createLogger('silent'),
        trustProxy: ['127.0.0.1'],
        tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
      });
      await app.ready();
      return app;
    };
    // Two ingest processes sharing one store share one count.
    apps = [await build(), await build()];
    program = await createTestProgram(apps[0]!, t.db);
  });
  afterAll(async () => {
    for (const app of apps ?? []) await app.close();
    await store?.close();
    await t?.drop();
  });

  const sale = (i: number, ip: string, key: string) =>
    apps[i % 2]!.inject({
      method: 'POST',
      url: '/api/v1/track/sale',
      headers: { 'x-forwarded-for': ip, authorization: `Bearer ${key}` },
      payload: { transaction_id: `throttle-${randomBytes(6).toString('hex')}`, additional_data: { test_mode: true } },
    });

  it('an address guessing keys gets 401s up to the limit, then 429 without a lookup, writing nothing', async () => {
    const ip = randomIp();
    const before = await tableCounts(t.db);
    for (let i = 0; i < AUTH_FAILURES_PER_MINUTE; i++) expect((await sale(i, ip, guess())).statusCode).toBe(401);
    const limited = await sale(0, ip, guess());
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ error: { status: 429, code: 'rate_limited', message: expect.stringContaining('invalid key'), retry_after_seconds: 55 } });
    expect(limited.headers['retry-after']).toBe('55');
    expect(limited.headers['x-ratelimit-limit']).toBe(String(AUTH_FAILURES_PER_MINUTE));
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    expect(limited.headers['x-ratelimit-reset']).toBe(String((WINDOW_START + 60_000) / 1000));
    // From then on this process answers before any lookup, whatever key comes next.
    const lookups = counter.lookups;
    for (let i = 0; i < 5; i++) expect((await sale(0, ip, i === 4 ? program.apiKey : guess())).statusCode).toBe(429);
    expect(counter.lookups).toBe(lookups);
    expect(await tableCounts(t.db)).toEqual(before);
    // Another address with the real key is not affected.
    expect((await sale(0, randomIp(), program.apiKey)).statusCode).toBe(200);
  });

  it('dashboard sessions and account tokens count against the same address', async () => {
    const ip = randomIp();
    const perf = (token: string) =>
      apps[0]!.inject({ method: 'GET', url: `/api/tracking/status/${program.programId}`, headers: { 'x-forwarded-for': ip, authorization: `Bearer ${token}` } });
    for (let i = 0; i < AUTH_FAILURES_PER_MINUTE; i++) expect((await perf(`dsh_${randomBytes(24).toString('base64url')}`)).statusCode).not.toBe(429);
    expect((await perf(`dsh_${randomBytes(24).toString('base64url')}`)).statusCode).toBe(429);
    const programs = await apps[0]!.inject({ method: 'GET', url: '/api/v1/cli/programs', headers: { 'x-forwarded-for': ip, authorization: 'Bearer cli_guess' } });
    expect(programs.statusCode).toBe(429);
  });

  it('valid keys are never counted as failures', async () => {
    const ip = randomIp();
    for (let i = 0; i < AUTH_FAILURES_PER_MINUTE + 5; i++) {
      const res = await apps[i % 2]!.inject({
        method: 'GET',
        url: '/api/v1/cli/status',
        headers: { 'x-forwarded-for': ip, authorization: `Bearer ${program.apiKey}` },
      });
      expect(res.statusCode).toBe(200);
    }
  });
});

describe('the memory rate-limit store is bounded', () => {
  it('counts at most maxKeys keys a window exactly; new keys past the bound are counted in the sketch, never let through', () => {
    const full: number[] = [];
    const store = memoryRateLimitStore({ maxKeys: 1_000, onFull: (max) => full.push(max) });
    const window = 60_000;
    expect(store.hit('victim', window, 60_000)).toBe(1);
    for (let i = 0; i < 50_000; i++) store.hit(`spoofed:${i}`, window, 60_000);
    expect(full).toEqual([1_000]);
    // A key never counted is counted from its first hit (the sketch only ever adds).
    const late = [store.hit('late', window, 60_000), store.hit('late', window, 60_000)] as number[];
    expect(late[0]).toBeGreaterThanOrEqual(1);
    expect(late[1]).toBeGreaterThan(late[0]!);
    // A key counted before the bound keeps its exact count, so its limit holds.
    expect(store.hit('victim', window, 60_000)).toBe(2);
    // The next window starts empty.
    expect(store.hit('late', window * 2, 60_000)).toBe(1);
    expect(store.hit('late', window * 2, 60_000)).toBe(2);
  });

  it('the default bound holds under a flood of random keys', () => {
    let full = 0;
    const store = memoryRateLimitStore({ onFull: () => (full += 1) });
    for (let i = 0; i <= MEMORY_STORE_MAX_KEYS + 10; i++) store.hit(`k${i}`, 0, 60_000);
    expect(full).toBe(1);
    expect(store.hit('k0', 0, 60_000)).toBe(2);
    // Past the bound: counted, not let through.
    const past = `k${MEMORY_STORE_MAX_KEYS + 5}`;
    expect(store.hit(past, 0, 60_000)).toBeGreaterThanOrEqual(2);
  });
});
