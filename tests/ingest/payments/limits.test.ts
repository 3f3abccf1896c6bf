import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../core/config.js';
import { sql } from '../../../core/db.js';
import { createLogger } from '../../../core/log.js';
import { buildApp } from '../../../ingest/app.js';
import { memoryRateLimitStore, redisRateLimitStore, type RateLimitStore } from '../../../ingest/http/rate-limit.js';
import { PROCESSOR_WEBHOOK_RATE_LIMIT } from '../../../ingest/payments/webhooks.js';
import { DOCS_BASE_URL, FEE_BPS, PROCESSOR_SECRETS, storeKinds, tableCounts } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { event, id, signed } from '../../support/processor.js';

// Issue 27, point 9: the processor webhook route is rate limited per client address, refusals
// included, and a flood of refused bodies does not flood the log.

// 5 s into a minute far from any other test's (a Redis shared with other files holds nothing of it).
const WINDOW_START = Math.floor(Date.now() / 60_000) * 60_000 + 60_000 * 7000 + 60_000 * Math.floor(Math.random() * 1000);
const randomAddress = () => `198.18.${randomBytes(1)[0]}.${randomBytes(1)[0]}`;

const events = sql('t.webhook_limit_events', `SELECT count(*)::int AS n FROM processor_events`);

const combos = databaseKinds().flatMap((db) => storeKinds().map((store) => [db, store] as const));

describe.each(combos)('POST /api/v1/webhooks/processor limits on %s with the %s store', (dbKind, storeKind) => {
  let t: TestDatabase;
  let now = WINDOW_START + 5_000;
  const lines: Record<string, unknown>[] = [];
  const opened: { app: FastifyInstance; store: RateLimitStore }[] = [];

  async function appWith(processorWebhookRateLimit?: number) {
    const store = storeKind === 'redis' ? await redisRateLimitStore(process.env.REDIS_URL!) : memoryRateLimitStore();
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const app = await buildApp({
      db: t.db,
      rateLimits: store,
      clock: () => now,
      logger: createLogger('info', sink),
      trustProxy: ['127.0.0.1'],
      tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
      processorWebhookSecrets: () => PROCESSOR_SECRETS,
      ...(processorWebhookRateLimit === undefined ? {} : { processorWebhookRateLimit }),
    });
    await app.ready();
    opened.push({ app, store });
    return app;
  }

  beforeAll(async () => {
    t = await createTestDatabase(dbKind);
  });
  afterAll(async () => {
    for (const { app, store } of opened) {
      await app.close();
      await store.close();
    }
    await t?.drop();
  });

  const post = (app: FastifyInstance, remoteAddress: string, payload: string, signature?: string) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/webhooks/processor',
      remoteAddress,
      headers: { 'content-type': 'application/json', ...(signature === undefined ? {} : { 'stripe-signature': signature }) },
      payload,
    });
  const validEvent = (app: FastifyInstance, remoteAddress: string) => {
    const payload = JSON.stringify(event('customer.created', { id: id('cus'), object: 'customer' }));
    return post(app, remoteAddress, payload, signed(payload, { timestamp: Math.floor(now / 1000) }));
  };
  const badSignature = (app: FastifyInstance, remoteAddress: string) => post(app, remoteAddress, JSON.stringify(event('customer.created', {})), 't=1,v1=00');
  const badBody = (app: FastifyInstance, remoteAddress: string) => {
    const payload = '{"not": "an event"';
    return post(app, remoteAddress, payload, signed(payload, { timestamp: Math.floor(now / 1000) }));
  };

  it('every request of an address counts, refused ones included; past the limit a typed 429 that records nothing', async () => {
    const app = await appWith(10);
    const address = randomAddress();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await badSignature(app, address)).statusCode);
    for (let i = 0; i < 3; i++) statuses.push((await badBody(app, address)).statusCode);
    for (let i = 0; i < 2; i++) statuses.push((await post(app, address, '')).statusCode); // no signature at all
    const last = await validEvent(app, address);
    statuses.push(last.statusCode);
    expect(statuses).toEqual([400, 400, 400, 400, 400, 400, 400, 400, 400, 200]);
    expect(last.headers['x-ratelimit-limit']).toBe('10');
    expect(last.headers['x-ratelimit-remaining']).toBe('0');
    expect(last.headers['x-ratelimit-reset']).toBe(String((WINDOW_START + 60_000) / 1000));

    const before = { ...(await tableCounts(t.db)), ...(await t.db.one<{ n: number }>(events)) };
    const limited = await validEvent(app, address);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ error: { status: 429, code: 'rate_limited', message: expect.any(String), retry_after_seconds: 55 } });
    expect(limited.headers['retry-after']).toBe('55');
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    expect((await badSignature(app, address)).statusCode).toBe(429);
    expect({ ...(await tableCounts(t.db)), ...(await t.db.one<{ n: number }>(events)) }).toEqual(before);

    // Another address (the processor sends from several) has its own budget.
    expect((await validEvent(app, randomAddress())).statusCode).toBe(200);
    // The next minute the address is served again.
    now += 60_000;
    try {
      expect((await validEvent(app, address)).statusCode).toBe(200);
    } finally {
      now -= 60_000;
    }
  });

  it('unless configured, an address may send PROCESSOR_WEBHOOK_RATE_LIMIT a minute', async () => {
    const app = await appWith();
    const res = await badSignature(app, randomAddress());
    expect(res.statusCode).toBe(400);
    expect(res.headers['x-ratelimit-limit']).toBe(String(PROCESSOR_WEBHOOK_RATE_LIMIT));
    expect(res.headers['x-ratelimit-remaining']).toBe(String(PROCESSOR_WEBHOOK_RATE_LIMIT - 1));
    const openapi = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(openapi.paths['/api/v1/webhooks/processor'].post.responses['429']).toBeDefined();
  });

  it('a flood of refused bodies writes one line per address a minute, then the count of the lines left out', async () => {
    const app = await appWith(100);
    now = WINDOW_START + 60_000 * 10 + 5_000;
    lines.length = 0;
    const [x, y] = [randomAddress(), randomAddress()];
    const statuses: number[] = [];
    for (let i = 0; i < 200; i++) statuses.push((await (i % 2 ? badBody : badSignature)(app, x)).statusCode);
    for (let i = 0; i < 50; i++) statuses.push((await badSignature(app, y)).statusCode);
    // The flood was refused with 400 up to the limit and 429 past it.
    expect(statuses.filter((s) => s === 400)).toHaveLength(150);
    expect(statuses.filter((s) => s === 429)).toHaveLength(100);

    const warnings = () => lines.filter((l) => (l.level as number) >= 40);
    expect(warnings()).toHaveLength(2);
    expect(warnings().map((l) => l.client)).toEqual([x, y]);
    expect(warnings()[0]).toMatchObject({ msg: 'processor event refused: signature', reason: expect.any(String) });

    // A signed event is still logged, each one.
    now += 60_000;
    lines.length = 0;
    expect((await validEvent(app, x)).statusCode).toBe(200);
    expect((await validEvent(app, x)).statusCode).toBe(200);
    expect(lines.filter((l) => l.msg === 'processor event')).toHaveLength(2);
    expect(warnings()).toEqual([]);

    // The next refusal writes the last minute's count of lines left out, and its own line.
    expect((await badSignature(app, x)).statusCode).toBe(400);
    expect(warnings()).toHaveLength(2);
    expect(warnings()[0]).toMatchObject({ suppressed: 248, clients: 2 });
    expect(warnings()[1]).toMatchObject({ client: x, msg: 'processor event refused: signature' });
    for (let i = 0; i < 5; i++) await badBody(app, y);
    expect(warnings()).toHaveLength(3);

    // Closing the service writes what was left out of the current minute.
    lines.length = 0;
    const { store } = opened.pop()!;
    await app.close();
    await store.close();
    expect(warnings()).toEqual([expect.objectContaining({ suppressed: 4, clients: 2 })]);
  });
});

describe('PROCESSOR_WEBHOOK_RATE_LIMIT', () => {
  it('is 6000 requests a minute per address unless set; a positive integer', () => {
    expect(loadConfig({}).rateLimit.processorWebhookPerMinute).toBe(PROCESSOR_WEBHOOK_RATE_LIMIT);
    expect(PROCESSOR_WEBHOOK_RATE_LIMIT).toBe(6_000);
    expect(loadConfig({ PROCESSOR_WEBHOOK_RATE_LIMIT: '50' }).rateLimit.processorWebhookPerMinute).toBe(50);
    expect(() => loadConfig({ PROCESSOR_WEBHOOK_RATE_LIMIT: '0' })).toThrow(/PROCESSOR_WEBHOOK_RATE_LIMIT/);
    expect(() => loadConfig({ PROCESSOR_WEBHOOK_RATE_LIMIT: 'lots' })).toThrow(/PROCESSOR_WEBHOOK_RATE_LIMIT/);
  });
});
