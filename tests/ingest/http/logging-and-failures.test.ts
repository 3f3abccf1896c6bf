import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../core/log.js';
import { buildApp } from '../../../ingest/app.js';
import { memoryRateLimitStore, type RateLimitStore } from '../../../ingest/http/rate-limit.js';
import { DOCS_BASE_URL, buildTestApp, createTestProgram, type TestProgram } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';

describe('logs and degraded dependencies', () => {
  let t: TestDatabase;
  let program: TestProgram;
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    const setup = await buildTestApp(t.db);
    program = await createTestProgram(setup, t.db);
    await setup.close();
  });
  afterAll(async () => {
    await t?.drop();
  });

  const appWith = (rateLimits: RateLimitStore) =>
    buildApp({
      db: t.db,
      rateLimits,
      logger: createLogger('debug', sink),
      trustProxy: false,
      tracking: { platformFeeBps: 2_000, docsBaseUrl: DOCS_BASE_URL },
    });

  it('keys and session tokens never reach the logs, on success or refusal', async () => {
    const app = await appWith(memoryRateLimitStore());
    await app.inject({ method: 'POST', url: '/api/v1/track/sale', headers: { authorization: `Bearer ${program.apiKey}` }, payload: { additional_data: { test_mode: true } } });
    await app.inject({ method: 'POST', url: '/api/v1/track/sale', headers: { authorization: `Bearer ${program.apiKey}x` }, payload: {} });
    await app.inject({ method: 'PATCH', url: `/api/tracking/programs/${program.programId}`, headers: { authorization: `Bearer ${program.workspace.ownerToken}` }, payload: { name: 'n' } });
    await app.close();
    const log = lines.join('');
    expect(log).toContain('request refused'); // the 401 was logged, as a warning
    expect(log).not.toContain(program.apiKey);
    expect(log).not.toContain(program.workspace.ownerToken);
  });

  it('a rate-limit store that fails lets requests through and logs an error', async () => {
    lines.length = 0;
    const broken: RateLimitStore = {
      hit: async () => {
        throw new Error('store unreachable');
      },
      close: async () => {},
    };
    const app = await appWith(broken);
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/track/click',
      payload: { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` },
    });
    await app.close();
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    const errors = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 50);
    expect(errors.map((e) => e.msg)).toContain('rate limit store unavailable; request allowed');
  });
});
