/**
 * Issue 33, point 9: the console's first load under 150 KB gzipped in all. Measured as the browser
 * gets it: the page and every file it names (the modules it preloads, the stylesheet, the icon),
 * each as this server sends it with `Accept-Encoding: gzip`. Nothing else loads before the first
 * screen's API calls.
 */
import { gunzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';

const BUDGET_BYTES = 150 * 1024;

describe("the console's first load", () => {
  let t: TestDatabase;
  let app: FastifyInstance;

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    app = await buildTestApp(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  it('is under 150 KB gzipped: the page and every file it names', async () => {
    const gz = { 'accept-encoding': 'gzip' };
    const page = await app.inject({ url: '/dashboard', headers: gz });
    expect(page.headers['content-encoding']).toBe('gzip');
    const html = gunzipSync(page.rawPayload).toString('utf8');
    const files = [...new Set([...html.matchAll(/\/dashboard\/assets\/[^"]+/g)].map((m) => m[0]))];
    let gzipped = page.rawPayload.length;
    let plain = 0;
    const sizes: string[] = [];
    for (const url of files) {
      const res = await app.inject({ url, headers: gz });
      expect(res.statusCode, url).toBe(200);
      const raw = await app.inject({ url });
      const bytes = res.headers['content-encoding'] === 'gzip' ? res.rawPayload.length : raw.rawPayload.length;
      gzipped += bytes;
      plain += raw.rawPayload.length;
      sizes.push(`${url.split('/').pop()} ${bytes}`);
    }
    console.log(`console first load: ${files.length + 1} files, ${(gzipped / 1024).toFixed(1)} KB gzipped (${(plain / 1024).toFixed(1)} KB uncompressed assets); ${sizes.join(', ')}`);
    expect(files.filter((f) => f.endsWith('.js')).length).toBeGreaterThan(10);
    expect(gzipped).toBeLessThan(BUDGET_BYTES);
  });
});
