import { readFileSync } from 'node:fs';
import { gunzipSync, brotliDecompressSync, gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRACKER_FILE } from '../../../ingest/tracking/tracker-script.js';
import { buildTracker } from '../../../scripts/build-tracker.js';
import { buildTestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';

/** Plausible's tracker is 743 B gzipped, Dub's 1,690 B; ours may not pass 1 KiB. */
const GZIP_BUDGET = 1024;

describe('the tracker script file', () => {
  const committed = readFileSync(TRACKER_FILE);

  it('is what `npm run build:tracker` makes of clients/browser/src (rebuild after changing the sources)', async () => {
    const rebuilt = await buildTracker();
    expect(rebuilt.equals(committed), 'clients/browser/svc-tracker.js is stale: run npm run build:tracker').toBe(true);
  });

  it(`stays within ${GZIP_BUDGET} bytes gzipped`, () => {
    const size = gzipSync(committed, { level: 9 }).length;
    console.info(`svc-tracker.js: ${committed.length} B, ${size} B gzipped`);
    expect(size).toBeLessThanOrEqual(GZIP_BUDGET);
  });

  it('is a classic script that declares no globals but window.svc', () => {
    const text = committed.toString('utf8');
    expect(text.startsWith('(()=>{')).toBe(true);
    expect(text.trimEnd().endsWith('})();')).toBe(true);
    expect(text).not.toMatch(/\b(import|export)\b/);
  });
});

describe('the browser SDK outside a browser (server rendering)', () => {
  it('init and loadSvc answer null, getClickId null, signup a result; nothing touches document', async () => {
    // A non-literal specifier: the package is typed for the DOM, this project is not; vitest runs its source.
    const entry = '../../../clients/browser/src/index.js';
    const sdk = (await import(entry)) as {
      init(o: object): unknown;
      loadSvc(o: object): Promise<unknown>;
      getClickId(): string | null;
      getData(): object;
      signup(userId: string): Promise<object>;
    };
    expect(typeof (globalThis as { document?: unknown }).document).toBe('undefined');
    const options = { programId: 1, apiUrl: 'https://track.example.com', debug: true };
    expect(sdk.init(options)).toBeNull();
    expect(await sdk.loadSvc(options)).toBeNull();
    expect(sdk.getClickId()).toBeNull();
    expect(sdk.getData()).toEqual({ clickId: null, programId: '', hasAttribution: false, affiliateUrl: null });
    expect(await sdk.signup('user-1')).toMatchObject({ ok: false, status: 0, provisional: false, data: null });
  });
});

describe('GET /js/svc-tracker.js', () => {
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

  const get = (headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: '/js/svc-tracker.js', headers });

  it('serves the file with cache headers, an ETag, and a 304 for a current copy', async () => {
    const plain = await get();
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(plain.headers['cache-control']).toBe('public, max-age=3600');
    expect(plain.headers['cross-origin-resource-policy']).toBe('cross-origin');
    expect(plain.headers['x-content-type-options']).toBe('nosniff');
    expect(plain.headers.vary).toBe('Accept-Encoding');
    expect(plain.rawPayload.equals(readFileSync(TRACKER_FILE))).toBe(true);
    const etag = String(plain.headers.etag);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);

    const again = await get({ 'if-none-match': etag });
    expect(again.statusCode).toBe(304);
    expect(again.rawPayload.length).toBe(0);
    expect(again.headers.etag).toBe(etag);
    expect((await get({ 'if-none-match': `W/${etag}` })).statusCode).toBe(304);
    expect((await get({ 'if-none-match': '"something-else"' })).statusCode).toBe(200);
  });

  it('sends brotli or gzip when accepted, each with its own ETag', async () => {
    const file = readFileSync(TRACKER_FILE);
    const gz = await get({ 'accept-encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.rawPayload).equals(file)).toBe(true);
    expect(gz.rawPayload.length).toBeLessThanOrEqual(GZIP_BUDGET);
    const br = await get({ 'accept-encoding': 'gzip, deflate, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.rawPayload).equals(file)).toBe(true);
    expect(new Set([gz.headers.etag, br.headers.etag, (await get()).headers.etag]).size).toBe(3);
    expect((await get({ 'accept-encoding': 'br', 'if-none-match': String(br.headers.etag) })).statusCode).toBe(304);
  });
});
