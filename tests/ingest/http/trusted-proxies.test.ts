import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../core/config.js';
import { createLogger } from '../../../core/log.js';
import { buildApp } from '../../../ingest/app.js';
import { memoryRateLimitStore } from '../../../ingest/http/rate-limit.js';
import type { FastifyInstance } from 'fastify';
import { createTestProgram, DOCS_BASE_URL, FEE_BPS, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

// A fixed instant 5 s into a minute: the window cannot roll over mid-test.
const WINDOW_START = Math.floor(Date.now() / 60_000) * 60_000 + 60_000 * 2000;
const clock = () => WINDOW_START + 5_000;

describe('TRUST_PROXY', () => {
  it('is false, or a list of proxy addresses and CIDR ranges; true (every hop) is refused', () => {
    expect(loadConfig({}).http.trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'false' }).http.trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.5, 10.1.0.0/16,::1' }).http.trustProxy).toEqual(['10.0.0.5', '10.1.0.0/16', '::1']);
    expect(() => loadConfig({ TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY: .*true would trust every hop/);
    expect(() => loadConfig({ TRUST_PROXY: '2' })).toThrow(/TRUST_PROXY: .*not an address: 2/);
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.0/33' })).toThrow(/not an address: 10.0.0.0\/33/);
  });
});

describe.each(databaseKinds())('client addresses behind trusted proxies on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;

  async function appTrusting(trustProxy: false | string[]) {
    const built = await buildApp({
      db: t.db,
      rateLimits: memoryRateLimitStore(),
      clock,
      logger: createLogger('silent'),
      trustProxy,
      tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
    });
    await built.ready();
    return built;
  }

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    // inject() connects from 127.0.0.1: here that is the load balancer's address.
    app = await appTrusting(['127.0.0.1']);
    program = await createTestProgram(app, t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const click = (target: FastifyInstance, forwardedFor: string, remoteAddress?: string) =>
    target.inject({
      method: 'POST',
      url: '/api/v1/track/click',
      headers: { 'x-forwarded-for': forwardedFor },
      payload: { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` },
      ...(remoteAddress ? { remoteAddress } : {}),
    });

  it('a client rotating X-Forwarded-For through the trusted proxy still gets one budget of 60', async () => {
    // The client's own claim comes first; the trusted proxy appends the address it saw.
    const answers = [];
    for (let i = 0; i < 65; i++) answers.push((await click(app, `198.51.100.${i}, 203.0.113.9`)).statusCode);
    expect(answers.filter((s) => s === 200)).toHaveLength(60);
    expect(answers.slice(60)).toEqual([429, 429, 429, 429, 429]);
  });

  it('X-Forwarded-For from an address that is not a trusted proxy is ignored', async () => {
    const answers = [];
    for (let i = 0; i < 65; i++) answers.push((await click(app, `198.51.100.${i}`, '203.0.113.77')).statusCode);
    expect(answers.filter((s) => s === 200)).toHaveLength(60);
    const direct = await appTrusting(false);
    try {
      const limited = [];
      for (let i = 0; i < 62; i++) limited.push((await click(direct, `192.0.2.${i}`, '203.0.113.78')).statusCode);
      expect(limited.slice(60)).toEqual([429, 429]);
    } finally {
      await direct.close();
    }
  });
});
