import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../core/config.js';
import { createLogger } from '../../../core/log.js';
import { buildApp } from '../../../ingest/app.js';
import { AUTH_FAILURES_PER_MINUTE } from '../../../ingest/http/auth/failed-auth.js';
import { memoryRateLimitStore, redisRateLimitStore, type RateLimitStore } from '../../../ingest/http/rate-limit.js';
import { createTestProgram, DOCS_BASE_URL, FEE_BPS, storeKinds, tableCounts, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

// Issue 27, point 2: no caller can switch the rate limits off.

// A fixed instant 5 s into a minute far from any other test's: the window cannot roll over mid-test,
// and a Redis shared with other files holds no count of this window.
const WINDOW_START = Math.floor(Date.now() / 60_000) * 60_000 + 60_000 * 5000 + 60_000 * Math.floor(Math.random() * 1000);
const clock = () => WINDOW_START + 5_000;
const randomIp = () => `10.${[0, 0, 0].map(() => randomBytes(1)[0]).join('.')}`;
const randomKey = () => `flood:${randomBytes(8).toString('hex')}`;
const W = 60_000;

describe('the memory store past its bound keeps limiting', () => {
  it('keys counted before the bound keep exact counts, and a flood cannot reset them', () => {
    const full: number[] = [];
    const store = memoryRateLimitStore({ maxKeys: 16, onFull: (max) => full.push(max) });
    for (let i = 1; i <= 59; i++) expect(store.hit('victim', W, W)).toBe(i);
    for (let i = 0; i < 10_000; i++) store.hit(randomKey(), W, W);
    expect(full).toEqual([16]);
    expect([store.hit('victim', W, W), store.hit('victim', W, W)]).toEqual([60, 61]);
  });

  it('a key first seen past the bound is counted, not let through: 60 clicks, then the 61st is over', () => {
    const store = memoryRateLimitStore({ maxKeys: 16 });
    for (let i = 0; i < 10_000; i++) store.hit(randomKey(), W, W);
    const counts = Array.from({ length: 61 }, () => store.hit('late', W, W));
    // Exact unless the key's four cells all collided with the flood's (about 1 in 30,000 with a
    // flood this size): the sketch can only add, so the 61st is over the limit whatever happened.
    expect(counts).toEqual(Array.from({ length: 61 }, (_, i) => i + 1));
    expect(counts[60]).toBeGreaterThan(60);
  });

  it('past the bound a count is never lower than the true count, however the keys collide', () => {
    // A sketch of 64 cells a row for 3,000 keys: collisions everywhere, over-counts only.
    const store = memoryRateLimitStore({ maxKeys: 16, sketchWidth: 64 });
    const truth = new Map<string, number>();
    let overCounted = 0;
    for (let i = 0; i < 20_000; i++) {
      const key = `k${Math.floor(Math.random() * 3_000)}`;
      const count = (truth.get(key) ?? 0) + 1;
      truth.set(key, count);
      const seen = store.hit(key, W, W) as number;
      expect(seen).toBeGreaterThanOrEqual(count);
      if (seen > count) overCounted += 1;
    }
    expect(overCounted).toBeGreaterThan(0); // the collisions did happen
  });

  it('the next window starts empty, exact again', () => {
    const store = memoryRateLimitStore({ maxKeys: 4, sketchWidth: 8 });
    for (let i = 0; i < 1_000; i++) store.hit(randomKey(), W, W);
    expect(store.hit('late', W, W)).toBeGreaterThanOrEqual(1);
    expect([store.hit('late', 2 * W, W), store.hit('late', 2 * W, W), store.hit('other', 2 * W, W)]).toEqual([1, 2, 1]);
  });
});

/** The real store, with the keys it was asked to count written down. */
function recordingKeys(store: RateLimitStore) {
  const keys = new Set<string>();
  const recording: RateLimitStore = {
    hit(key, windowStart, windowMs) {
      keys.add(key);
      return store.hit(key, windowStart, windowMs);
    },
    close: () => store.close(),
  };
  return { keys, store: recording };
}

const combos = databaseKinds().flatMap((db) => storeKinds().map((store) => [db, store] as const));

describe.each(combos)('rate limits a caller cannot switch off, on %s with the %s store', (dbKind, storeKind) => {
  let t: TestDatabase;
  let program: TestProgram;
  const opened: { app: FastifyInstance; store: RateLimitStore }[] = [];

  /** An ingest process on its own store: in memory bounded to 16 keys, so a handful of requests fills it. */
  async function fresh(shared?: RateLimitStore) {
    const recorded = recordingKeys(shared ?? (storeKind === 'redis' ? await redisRateLimitStore(process.env.REDIS_URL!) : memoryRateLimitStore({ maxKeys: 16 })));
    const app = await buildApp({
      db: t.db,
      rateLimits: recorded.store,
      clock,
      logger: createLogger('silent'),
      trustProxy: ['127.0.0.1'],
      tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
    });
    await app.ready();
    opened.push({ app, store: recorded.store });
    const bucketKeys = (bucket: string) => [...recorded.keys].filter((k) => k.startsWith(`${bucket}:`));
    return { app, store: recorded.store, bucketKeys };
  }

  beforeAll(async () => {
    t = await createTestDatabase(dbKind);
    program = await createTestProgram((await fresh()).app, t.db);
  });
  afterAll(async () => {
    for (const { app, store } of opened) {
      await app.close();
      await store.close();
    }
    await t?.drop();
  });

  const click = (app: FastifyInstance, ip: string) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/track/click',
      headers: { 'x-forwarded-for': ip },
      payload: { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` },
    });
  const sixtyThenRefused = async (app: FastifyInstance, ip: string) => {
    const statuses = [];
    for (let i = 0; i < 62; i++) statuses.push((await click(app, ip)).statusCode);
    expect(statuses.slice(0, 60).every((s) => s === 200)).toBe(true);
    expect(statuses.slice(60)).toEqual([429, 429]);
  };

  it('after a flood of client addresses fills the store, a client still gets exactly its 60 clicks, then 429', async () => {
    const { app } = await fresh();
    for (let i = 0; i < 40; i++) expect((await click(app, randomIp())).statusCode).toBe(200);
    await sixtyThenRefused(app, randomIp());
  });

  it('random bearer tokens are counted under the client address: no key per token, and the limits keep holding', async () => {
    const { app, bucketKeys } = await fresh();
    const ip = randomIp();
    const before = await tableCounts(t.db);
    for (let i = 0; i < 25; i++) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/track/sale',
        headers: { 'x-forwarded-for': ip, authorization: `Bearer aff_${randomBytes(24).toString('base64url')}` },
        payload: { additional_data: { test_mode: true } },
      });
      expect(res.statusCode).toBe(401);
      expect(res.headers['x-ratelimit-limit']).toBe('120');
    }
    expect(await tableCounts(t.db)).toEqual(before);
    expect(bucketKeys('sale_refund')).toEqual([expect.stringContaining(ip)]);
    expect(bucketKeys('auth_failures')).toEqual([expect.stringContaining(ip)]);
    // They did not fill the store: a new client is counted exactly.
    await sixtyThenRefused(app, randomIp());
  });

  it('the same on readiness, the CLI and the agent API', async () => {
    const { app, bucketKeys } = await fresh();
    const routes = [
      { bucket: 'readiness', method: 'GET', url: '/api/v1/programs/me/readiness', prefix: 'aff' },
      { bucket: 'cli', method: 'GET', url: '/api/v1/cli/status', prefix: 'aff' },
      { bucket: 'agent', method: 'GET', url: '/api/agent/v1/programs', prefix: 'agt' },
    ] as const;
    for (const route of routes) {
      const ip = randomIp();
      for (let i = 0; i < 8; i++) {
        const authorization = `Bearer ${route.prefix}_${randomBytes(24).toString('base64url')}`;
        const res = await app.inject({ method: route.method, url: route.url, headers: { 'x-forwarded-for': ip, authorization } });
        expect(res.statusCode).toBe(401);
      }
      expect(bucketKeys(route.bucket)).toEqual([expect.stringContaining(ip)]);
    }
  });

  it('a valid key is still counted per key, from its first request, in every process', async () => {
    const first = await fresh();
    const second = await fresh(first.store);
    const p = await createTestProgram(first.app, t.db);
    const remaining: string[] = [];
    for (let i = 0; i < 4; i++) {
      // A new address each time: the key, not the address, is counted.
      const res = await [first, second][i % 2]!.app.inject({
        method: 'GET',
        url: '/api/v1/programs/me/readiness',
        headers: { 'x-forwarded-for': randomIp(), authorization: `Bearer ${p.apiKey}` },
      });
      expect(res.statusCode).toBe(200);
      remaining.push(String(res.headers['x-ratelimit-remaining']));
    }
    expect(remaining).toEqual(['29', '28', '27', '26']);
  });
});

describe.each(databaseKinds())('IPv6 clients on %s', (dbKind) => {
  let t: TestDatabase;
  let program: TestProgram;
  const apps: FastifyInstance[] = [];

  const appWith = async (clientIpv6Prefix?: number) => {
    const app = await buildApp({
      db: t.db,
      rateLimits: memoryRateLimitStore(),
      clock,
      logger: createLogger('silent'),
      trustProxy: false,
      tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
      ...(clientIpv6Prefix === undefined ? {} : { clientIpv6Prefix }),
    });
    apps.push(app);
    return app;
  };

  beforeAll(async () => {
    t = await createTestDatabase(dbKind);
    program = await createTestProgram(await appWith(), t.db);
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await t?.drop();
  });

  const click = (app: FastifyInstance, remoteAddress: string) =>
    app.inject({ method: 'POST', url: '/api/v1/track/click', remoteAddress, payload: { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` } });

  it('are counted per /64 by default: every address of one /64 shares one budget of 60', async () => {
    const app = await appWith();
    const statuses = [];
    for (let i = 1; i <= 62; i++) statuses.push((await click(app, `2001:db8:a:b:${i.toString(16)}:0:${randomBytes(2).toString('hex')}:1`)).statusCode);
    expect(statuses.slice(0, 60).every((s) => s === 200)).toBe(true);
    expect(statuses.slice(60)).toEqual([429, 429]);
    // The neighbouring /64 is someone else.
    expect((await click(app, '2001:db8:a:c::1')).statusCode).toBe(200);
  });

  it('an IPv4-mapped IPv6 address is its IPv4 address', async () => {
    const app = await appWith();
    const statuses = [];
    for (let i = 0; i < 61; i++) statuses.push((await click(app, i % 2 ? '::ffff:192.0.2.7' : '192.0.2.7')).statusCode);
    expect(statuses.filter((s) => s === 200)).toHaveLength(60);
    expect(statuses[60]).toBe(429);
  });

  it('the prefix is configurable: /56 puts two /64s into one budget', async () => {
    const app = await appWith(56);
    const statuses = [];
    for (let i = 0; i < 61; i++) statuses.push((await click(app, i % 2 ? '2001:db8:a:b0::1' : '2001:db8:a:b1::9')).statusCode);
    expect(statuses.filter((s) => s === 200)).toHaveLength(60);
    expect(statuses[60]).toBe(429);
    expect((await click(app, '2001:db8:a:100::1')).statusCode).toBe(200);
  });

  it('failed authentications from one /64 share one budget', async () => {
    const app = await appWith();
    const sale = (remoteAddress: string) =>
      app.inject({
        method: 'POST',
        url: '/api/v1/track/sale',
        remoteAddress,
        headers: { authorization: `Bearer aff_${randomBytes(24).toString('base64url')}` },
        payload: { additional_data: { test_mode: true } },
      });
    for (let i = 0; i < AUTH_FAILURES_PER_MINUTE; i++) expect((await sale(`2001:db8:f:1:${randomBytes(2).toString('hex')}::${i.toString(16)}`)).statusCode).toBe(401);
    const limited = await sale('2001:db8:f:1:ffff::1');
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe('rate_limited');
  });
});

describe('RATE_LIMIT_IPV6_PREFIX', () => {
  it('is 64 unless set; a prefix length from 16 to 128', () => {
    expect(loadConfig({}).rateLimit.ipv6Prefix).toBe(64);
    expect(loadConfig({ RATE_LIMIT_IPV6_PREFIX: '48' }).rateLimit.ipv6Prefix).toBe(48);
    expect(loadConfig({ RATE_LIMIT_IPV6_PREFIX: '128', REDIS_URL: 'redis://localhost:6379' }).rateLimit).toMatchObject({ kind: 'redis', ipv6Prefix: 128 });
    expect(() => loadConfig({ RATE_LIMIT_IPV6_PREFIX: '129' })).toThrow(/RATE_LIMIT_IPV6_PREFIX/);
    expect(() => loadConfig({ RATE_LIMIT_IPV6_PREFIX: '8' })).toThrow(/RATE_LIMIT_IPV6_PREFIX/);
    expect(() => loadConfig({ RATE_LIMIT_IPV6_PREFIX: '/64' })).toThrow(/RATE_LIMIT_IPV6_PREFIX/);
  });
});
