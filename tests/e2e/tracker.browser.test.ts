import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import type { FastifyInstance } from 'fastify';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { createLogger } from '../../core/log.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { buildApp } from '../../ingest/app.js';
import { memoryRateLimitStore } from '../../ingest/http/rate-limit.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import { DEAD_LETTER_TOPIC } from '../../processors/embedded-pipeline.js';
import { createLoader } from '../../processors/loader/loader.js';
import { createLoadingLog } from '../../processors/loader/loading-log.js';
import { createRelay } from '../../processors/relay.js';
import { DOCS_BASE_URL, FEE_BPS, createTestProgram, createTestWorkspace, type TestProgram } from '../support/app.js';
import { browserTestsRun, launchChromium, openTokenForm } from '../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';

/**
 * The tracker script, the browser SDK and the React provider in Debian's Chromium, against the
 * real app (PGlite, chDB for the dashboard figures). The brand's site and the service live on
 * different hostnames, all mapped to 127.0.0.1 by Chromium's host resolver rules; one front
 * server per scheme (HTTP, and HTTPS with a certificate made for this run) serves the brand's
 * pages and passes api.svc.test through to the app, as a TLS-terminating proxy would.
 */

const BRAND = 'shop.brand.co.uk';
const ROOT = 'brand.co.uk';
const API = 'api.svc.test';
const STRANGER = 'other.example';
const WINDOW_DAYS = 30;

type Scheme = 'http' | 'https';

/** The SDK as the page sees it (window.svc); the project compiles without the DOM library. */
interface SignupResult {
  ok: boolean;
  status: number;
  provisional: boolean;
  data: { customer_id: number; program_id: number; click_id: string | null; status: string; provisional?: true } | null;
  error: { code?: string; message: string } | null;
}
interface SvcInPage {
  ready: Promise<string | null>;
  getClickId(): string | null;
  getData(): { clickId: string | null; programId: string; hasAttribution: boolean; affiliateUrl: string | null };
  signup(userId: string, email?: string): Promise<SignupResult>;
}
interface SdkInPage {
  init(options: { programId: number; apiUrl: string; debug?: boolean }): SvcInPage | null;
  loadSvc(options: { programId: number; apiUrl: string; debug?: boolean }): Promise<SvcInPage | null>;
  getClickId(): string | null;
  getData(): ReturnType<SvcInPage['getData']>;
  signup(userId: string, email?: string): Promise<SignupResult>;
}
declare const window: { svc?: SvcInPage; sdk: SdkInPage };
declare const document: { querySelector(selector: string): { textContent: string | null; getAttribute(name: string): string | null } | null };

const exec = promisify(execFile);

describe.runIf(browserTestsRun())('tracker script, browser SDK and React provider in a real Chromium', () => {
  let browser: Browser;
  let t: TestDatabase;
  let dir: string;
  let warehouse: Warehouse;
  let app: FastifyInstance;
  let appPort: number;
  const fronts: Partial<Record<Scheme, http.Server>> = {};
  const ports: Partial<Record<Scheme, number>> = {};
  let reactBundle: Buffer;
  let sdkBundle: Buffer;
  let renderReact: (props: { programId: number; apiUrl: string }) => string;
  /** The page /snippet serves: a checklist snippet pasted as printed. */
  let pastedSnippet = '';
  let shop: TestProgram;
  let secondPartner: { affCode: string };
  let strict: TestProgram;

  const origin = (scheme: Scheme, host: string) => `${scheme}://${host}:${ports[scheme]}`;
  const api = (scheme: Scheme) => origin(scheme, API);

  beforeAll(async () => {
    browser = await launchChromium([
      `--host-resolver-rules=${[BRAND, ROOT, API, STRANGER].map((host) => `MAP ${host} 127.0.0.1`).join(', ')}`,
      '--ignore-certificate-errors',
    ]);
    t = await createTestDatabase('pglite');
    dir = await mkdtemp(join(tmpdir(), 'ats-tracker-browser-'));
    warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    await migrateWarehouse(warehouse);
    app = await buildApp({
      db: t.db,
      warehouse,
      rateLimits: memoryRateLimitStore(),
      logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
      trustProxy: false,
      tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    appPort = (app.server.address() as AddressInfo).port;

    // A self-signed certificate for every hostname of the test (Chromium is told to accept it).
    await exec('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=svc-browser-test',
      '-addext', `subjectAltName=${[BRAND, ROOT, API, STRANGER].map((h) => `DNS:${h}`).join(',')}`,
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    ]);
    fronts.http = http.createServer(front('http'));
    fronts.https = https.createServer({ key: await readFile(join(dir, 'key.pem')), cert: await readFile(join(dir, 'cert.pem')) }, front('https'));
    for (const scheme of ['http', 'https'] as const) {
      await new Promise<void>((resolve) => fronts[scheme]!.listen(0, '127.0.0.1', resolve));
      ports[scheme] = (fronts[scheme]!.address() as AddressInfo).port;
    }

    await bundleReactApp();

    const allowed = (['http', 'https'] as const).flatMap((scheme) => [origin(scheme, BRAND), origin(scheme, ROOT)]);
    shop = await createTestProgram(app, t.db, {
      name: 'Brand UK',
      domain: BRAND,
      lead_auth: 'browser_allowed',
      attribution_window_days: WINDOW_DAYS,
      allowed_origins: allowed,
    });
    secondPartner = await addPartner(shop, 'Second partner');
    strict = await createTestProgram(app, t.db, { name: 'Brand UK strict', domain: BRAND, allowed_origins: allowed }, shop.workspace);
  });

  afterAll(async () => {
    await browser?.close();
    for (const server of Object.values(fronts)) await new Promise((resolve) => server.close(resolve));
    await app?.close();
    await warehouse?.close();
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The front server of one scheme: api.svc.test goes to the app, every other host is the brand's site. */
  function front(scheme: Scheme) {
    return (request: IncomingMessage, response: ServerResponse) => {
      const host = String(request.headers.host ?? '').split(':')[0];
      if (host === API) {
        const upstream = http.request({ host: '127.0.0.1', port: appPort, method: request.method, path: request.url, headers: request.headers }, (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        });
        upstream.on('error', () => response.destroy());
        request.pipe(upstream);
        return;
      }
      const url = new URL(request.url ?? '/', `${scheme}://${request.headers.host}`);
      const program = url.searchParams.get('program') ?? String(shop.programId);
      if (url.pathname === '/react.js') return respond(response, 'text/javascript', reactBundle);
      if (url.pathname === '/sdk.js') return respond(response, 'text/javascript', sdkBundle);
      if (url.pathname === '/sdk') return respond(response, 'text/html', `<!doctype html><title>Brand (SDK)</title><script src="/sdk.js"></script>`);
      if (url.pathname === '/react') {
        const props = { programId: Number(program), apiUrl: api(scheme) };
        return respond(
          response,
          'text/html',
          `<!doctype html><title>Brand (React)</title><div id="root" data-props='${JSON.stringify(props)}'>${renderReact(props)}</div><script src="/react.js"></script>`,
        );
      }
      if (url.pathname === '/snippet') return respond(response, 'text/html', `<!doctype html><title>Brand</title>${pastedSnippet}<h1>Brand</h1>`);
      return respond(
        response,
        'text/html',
        `<!doctype html><title>Brand</title><script defer src="${api(scheme)}/js/svc-tracker.js" data-svc-program-id="${program}" data-svc-debug></script><h1>Brand</h1>`,
      );
    };
  }

  function respond(response: ServerResponse, type: string, body: string | Buffer) {
    response.writeHead(200, { 'content-type': `${type}; charset=utf-8` });
    response.end(body);
  }

  /** The React app of tests/fixtures/react-app, for Chromium (hydrating) and for Node (server render). */
  async function bundleReactApp() {
    const common = { bundle: true, write: false, conditions: ['source'], logLevel: 'silent' as const, absWorkingDir: process.cwd() };
    const client = await build({ ...common, entryPoints: ['tests/fixtures/react-app/client.js'], format: 'iife', platform: 'browser', define: { 'process.env.NODE_ENV': '"production"' } });
    reactBundle = Buffer.from(client.outputFiles![0]!.contents);
    const sdk = await build({ ...common, entryPoints: ['tests/fixtures/sdk-page.js'], format: 'iife', platform: 'browser' });
    sdkBundle = Buffer.from(sdk.outputFiles![0]!.contents);
    // CommonJS: react-dom/server requires Node's built-ins, which an ES module bundle cannot.
    const server = await build({ ...common, entryPoints: ['tests/fixtures/react-app/server.js'], format: 'cjs', platform: 'node', outfile: join(dir, 'server.cjs'), write: true });
    expect(server.errors).toEqual([]);
    const loaded = await import(pathToFileURL(join(dir, 'server.cjs')).href);
    renderReact = (loaded.default ?? loaded).render;
  }

  async function addPartner(program: TestProgram, name: string) {
    const res = await app.inject({
      method: 'POST',
      url: `/api/tracking/programs/${program.programId}/partners`,
      headers: { authorization: `Bearer ${program.workspace.ownerToken}` },
      payload: { name },
    });
    expect(res.statusCode).toBe(200);
    return { affCode: res.json().data.aff_code as string };
  }

  const count = async (table: 'clicks' | 'customers', programId: number) =>
    (await t.db.one<{ n: number }>(sql(`t.tracker_browser_count_${table}`, `SELECT count(*)::int AS n FROM ${table} WHERE program_id = $1`), [programId]))!.n;

  /** A tab with its requests and console lines recorded. */
  async function openTab(context: BrowserContext) {
    const page = await context.newPage();
    const requests: string[] = [];
    const logs: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => {
      if (!r.url().endsWith('/favicon.ico')) requests.push(`${r.method()} ${r.url()}`);
    });
    page.on('console', (m) => logs.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => errors.push(e.message));
    return { page, requests, logs, errors };
  }

  /** Loads a page and waits until the tracker has done its work; answers the click id in effect. */
  async function visit(page: Page, url: string) {
    await page.goto(url);
    await page.waitForFunction(() => window.svc !== undefined);
    return page.evaluate(() => window.svc!.ready);
  }

  const svcCookie = async (context: BrowserContext) => (await context.cookies()).find((c) => c.name === 'svc_click_id');
  const trackCalls = (requests: string[]) => requests.filter((r) => r.includes('/api/v1/track/'));

  describe.each(['http', 'https'] as const)('over %s', (scheme) => {
    let context: BrowserContext;
    let firstClickId: string;
    beforeAll(async () => {
      context = await browser.newContext({ ignoreHTTPSErrors: true });
    });
    afterAll(async () => {
      await context?.close();
    });

    it('a page without ?aff= loads the tracker and sends nothing', async () => {
      const clicksBefore = await count('clicks', shop.programId);
      const tab = await openTab(context);
      expect(await visit(tab.page, `${origin(scheme, BRAND)}/`)).toBeNull();
      expect(tab.requests).toEqual([`GET ${origin(scheme, BRAND)}/`, `GET ${api(scheme)}/js/svc-tracker.js`]);
      expect(await svcCookie(context)).toBeUndefined();
      expect(await tab.page.evaluate(() => window.svc!.getData())).toEqual({ clickId: null, programId: String(shop.programId), hasAttribution: false, affiliateUrl: null });
      expect(tab.logs).toContain('info: [svc] no click ' + shop.programId + ' null');
      expect(tab.errors).toEqual([]);
      expect(await count('clicks', shop.programId)).toBe(clicksBefore);
      await tab.page.close();
    });

    it('a partner link records the click and sets svc_click_id on the root domain, SameSite=Lax, Secure on HTTPS, for cookie_window_days', async () => {
      const tab = await openTab(context);
      const landing = `${origin(scheme, BRAND)}/?aff=${shop.affCode}&utm_source=partner`;
      const clickId = await visit(tab.page, landing);
      expect(clickId).toMatch(/^[0-9a-f-]{36}$/);
      firstClickId = clickId!;
      expect(trackCalls(tab.requests)).toEqual([`POST ${api(scheme)}/api/v1/track/click`]);

      const cookie = (await svcCookie(context))!;
      const { name, domain, path, sameSite, secure, httpOnly } = cookie;
      console.info(`${scheme}: ${JSON.stringify({ name, domain, path, sameSite, secure, httpOnly })}, expires in ${((cookie.expires - Date.now() / 1000) / 86_400).toFixed(3)} days`);
      expect(cookie).toMatchObject({ value: clickId, domain: `.${ROOT}`, path: '/', sameSite: 'Lax', secure: scheme === 'https', httpOnly: false });
      const expected = Date.now() / 1000 + WINDOW_DAYS * 86_400;
      expect(Math.abs(cookie.expires - expected)).toBeLessThan(600);

      const row = await t.db.one<{ program_id: string; partner_id: string; affiliate_url: string; test: boolean }>(
        sql('t.tracker_browser_click', 'SELECT program_id, partner_id, affiliate_url, test FROM clicks WHERE click_id = $1'),
        [clickId],
      );
      expect(row).toMatchObject({ affiliate_url: landing, test: false });
      expect(Number(row!.program_id)).toBe(shop.programId);
      expect(Number(row!.partner_id)).toBe(shop.partnerId);
      expect(await tab.page.evaluate(() => window.svc!.getData())).toEqual({ clickId, programId: String(shop.programId), hasAttribution: true, affiliateUrl: landing });
      expect(tab.errors).toEqual([]);

      // The root domain and the shop share it.
      const root = await openTab(context);
      expect(await visit(root.page, `${origin(scheme, ROOT)}/`)).toBe(clickId);
      expect(await root.page.evaluate(() => window.svc!.getClickId())).toBe(clickId);
      await tab.page.close();
      await root.page.close();
    });

    it("a second partner's link keeps the first click and sends no click", async () => {
      const clicksBefore = await count('clicks', shop.programId);
      const tab = await openTab(context);
      expect(await visit(tab.page, `${origin(scheme, BRAND)}/?aff=${secondPartner.affCode}`)).toBe(firstClickId);
      expect(trackCalls(tab.requests)).toEqual([]);
      expect((await svcCookie(context))!.value).toBe(firstClickId);
      expect(tab.logs).toContain(`info: [svc] no click ${shop.programId} ${firstClickId}`);
      expect(await count('clicks', shop.programId)).toBe(clicksBefore);
      await tab.page.close();
    });

    it('signup() records a browser-mode lead for the click in the cookie', async () => {
      const tab = await openTab(context);
      await visit(tab.page, `${origin(scheme, BRAND)}/welcome`);
      const result = await tab.page.evaluate(() => window.svc!.signup('user-42', 'user42@example.com'));
      expect(result).toMatchObject({ ok: true, status: 200, provisional: false, error: null });
      expect(result.data).toMatchObject({ click_id: firstClickId, program_id: shop.programId, status: 'lead' });
      expect(trackCalls(tab.requests)).toEqual([`POST ${api(scheme)}/api/v1/track/lead`]);
      const customer = await t.db.one<{ status: string; provisional: boolean; customer_key: string | null; email: string | null }>(
        sql('t.tracker_browser_customer', 'SELECT status, provisional, customer_key, email FROM customers WHERE click_id = $1'),
        [firstClickId],
      );
      // A browser's word about the customer is not kept: the server sends the key (trackLead).
      expect(customer).toEqual({ status: 'lead', provisional: false, customer_key: null, email: null });

      // A repeat is refused by the service and reported, not thrown.
      const again = await tab.page.evaluate(() => window.svc!.signup('user-42'));
      expect(again).toMatchObject({ ok: false, status: 400, provisional: false, data: null, error: { message: 'Customer status cannot be updated to lead. Current status: lead' } });
      expect(tab.errors).toEqual([]);
      await tab.page.close();
    });

    it('on a server_required program signup() surfaces provisional: true', async () => {
      const strictContext = await browser.newContext({ ignoreHTTPSErrors: true });
      try {
        const tab = await openTab(strictContext);
        const clickId = await visit(tab.page, `${origin(scheme, BRAND)}/?aff=${strict.affCode}&program=${strict.programId}`);
        expect(clickId).toBeTruthy();
        const result = await tab.page.evaluate(() => window.svc!.signup('user-7'));
        expect(result).toMatchObject({ ok: true, status: 200, provisional: true, data: { click_id: clickId, provisional: true } });
        const row = await t.db.one<{ provisional: boolean }>(sql('t.tracker_browser_provisional', 'SELECT provisional FROM customers WHERE click_id = $1'), [clickId]);
        expect(row).toEqual({ provisional: true });
      } finally {
        await strictContext.close();
      }
    });

    it('an origin not on the allowed list records nothing: no click, no lead, no cookie', async () => {
      const strangerContext = await browser.newContext({ ignoreHTTPSErrors: true });
      try {
        const clicksBefore = await count('clicks', shop.programId);
        const customersBefore = await count('customers', shop.programId);
        const tab = await openTab(strangerContext);
        expect(await visit(tab.page, `${origin(scheme, STRANGER)}/?aff=${shop.affCode}`)).toBeNull();
        expect(trackCalls(tab.requests)).toEqual([`POST ${api(scheme)}/api/v1/track/click`]);
        expect(await svcCookie(strangerContext)).toBeUndefined();
        expect(tab.logs.some((l) => l.startsWith('error: [svc] click'))).toBe(true);
        expect(tab.errors).toEqual([]);

        // A click id carried over by hand: the lead is refused for this origin as well.
        const click = await app.inject({ method: 'POST', url: '/api/v1/track/click', payload: { affiliate_url: `https://${BRAND}/?aff=${shop.affCode}` } });
        const clickId = click.json().click_id as string;
        await strangerContext.addCookies([{ name: 'svc_click_id', value: clickId, domain: STRANGER, path: '/' }]);
        await visit(tab.page, `${origin(scheme, STRANGER)}/signup`);
        const result = await tab.page.evaluate(() => window.svc!.signup('user-9'));
        expect(result.ok).toBe(false);
        expect(result.data).toBeNull();
        expect(await count('clicks', shop.programId)).toBe(clicksBefore + 1); // the one made by hand
        expect(await count('customers', shop.programId)).toBe(customersBefore);

        // The refusal itself, as the browser's request gets it.
        const refused = await app.inject({ method: 'POST', url: '/api/v1/track/lead', headers: { origin: origin(scheme, STRANGER), 'content-type': 'text/plain;charset=UTF-8' }, payload: JSON.stringify({ click_id: clickId }) });
        expect(refused.statusCode).toBe(403);
        // No program lists this origin, so the page may not even read the refusal.
        expect(refused.headers['access-control-allow-origin']).toBeUndefined();
        // An allowed origin reads its refusals (the SDK reports them): here a click id that does not exist.
        const unknown = await app.inject({ method: 'POST', url: '/api/v1/track/lead', headers: { origin: origin(scheme, BRAND), 'content-type': 'text/plain;charset=UTF-8' }, payload: JSON.stringify({ click_id: 'no-such-click' }) });
        expect(unknown.statusCode).toBe(400);
        expect(unknown.headers['access-control-allow-origin']).toBe(origin(scheme, BRAND));
        expect(await count('customers', shop.programId)).toBe(customersBefore);
      } finally {
        await strangerContext.close();
      }
    });
  });

  it('the API and the dashboard page show the clicks and the leads signup() recorded', async () => {
    await relayAll();
    const realClicks = (await t.db.one<{ n: number }>(sql('t.tracker_browser_real_clicks', 'SELECT count(*)::int AS n FROM clicks WHERE program_id = $1 AND NOT test'), [shop.programId]))!.n;
    const res = await app.inject({ method: 'GET', url: `/api/tracking/performance/${shop.programId}?period=7d`, headers: { authorization: `Bearer ${shop.workspace.ownerToken}` } });
    const metrics = res.json().metrics as Record<string, number>;
    // One click and one signup from each scheme, plus the click made by hand for the refused lead.
    expect(metrics).toMatchObject({ totalClicks: realClicks, totalLeads: 2 });
    expect(realClicks).toBe(4);

    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    try {
      const page = await context.newPage();
      await page.goto(`${api('https')}/dashboard`);
      await openTokenForm(page);
      await page.fill('#token', shop.workspace.ownerToken);
      await page.click('#sign-in-button');
      await page.waitForSelector(`main[data-state="ready"][data-program-id="${shop.programId}"]`);
      const shown = await page.evaluate(() => ({
        clicks: document.querySelector('[data-metric="clicks"]')!.getAttribute('data-value'),
        leads: document.querySelector('[data-metric="leads"]')!.getAttribute('data-value'),
      }));
      expect(shown).toEqual({ clicks: String(realClicks), leads: '2' });
    } finally {
      await context.close();
    }
  });

  it('the React provider renders to null on the server and gives the SDK once hydrated in the page', async () => {
    const props = { programId: shop.programId, apiUrl: api('http') };
    const html = renderReact(props);
    expect(typeof (globalThis as { document?: unknown }).document).toBe('undefined');
    expect(html).toBe('<main><output id="attribution" data-svc="null">no sdk</output></main>');

    const context = await browser.newContext();
    try {
      const tab = await openTab(context);
      await tab.page.goto(`${origin('http', BRAND)}/react?aff=${shop.affCode}`);
      await tab.page.waitForFunction(() => /^[0-9a-f-]{36}$/.test(document.querySelector('#attribution')?.textContent ?? ''));
      const clickId = await tab.page.textContent('#attribution');
      expect(clickId).toMatch(/^[0-9a-f-]{36}$/);
      expect((await svcCookie(context))).toMatchObject({ value: clickId, domain: `.${ROOT}` });
      expect(trackCalls(tab.requests)).toEqual([`POST ${api('http')}/api/v1/track/click`]);
      expect(tab.errors).toEqual([]);
      expect(tab.logs.filter((l) => l.startsWith('error'))).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('the SDK package: loadSvc({ debug: true }) logs info with the [svc] prefix, errors are logged without debug; the spec calls work', async () => {
    const context = await browser.newContext();
    try {
      const options = { programId: shop.programId, apiUrl: api('http') };
      // Without debug: a link to no partner is refused; only the error is logged.
      const quiet = await openTab(context);
      await quiet.page.goto(`${origin('http', BRAND)}/sdk?aff=no-such-code`);
      expect(await quiet.page.evaluate(async (o) => (await window.sdk.loadSvc(o))!.getClickId(), options)).toBeNull();
      // (Chromium adds its own line for the 400 response.)
      expect(quiet.logs.filter((l) => l.includes('[svc]'))).toEqual(['error: [svc] click [400, Referral link not found]']);
      expect(quiet.errors).toEqual([]);
      await quiet.page.close();

      // A signup with no click id sends nothing; that is a warning, shown only with debug.
      for (const debug of [false, true]) {
        const organic = await openTab(context);
        await organic.page.goto(`${origin('http', BRAND)}/sdk`);
        const result = await organic.page.evaluate(async (o) => (await window.sdk.loadSvc(o))!.signup('user-organic'), { ...options, debug });
        expect(result).toEqual({ ok: false, status: 0, provisional: false, data: null, error: { message: 'No click id' } });
        expect(trackCalls(organic.requests)).toEqual([]);
        expect(organic.logs).toEqual(debug ? [`info: [svc] no click ${shop.programId} null`, 'warning: [svc] signup 0 {message: No click id}'] : []);
        await organic.page.close();
      }

      // With debug: info too. init with the same options gives the same instance: one click only.
      const tab = await openTab(context);
      await tab.page.goto(`${origin('http', BRAND)}/sdk?aff=${shop.affCode}`);
      const seen = await tab.page.evaluate(async (o) => {
        const svc = await window.sdk.loadSvc({ ...o, debug: true });
        const again = window.sdk.init({ ...o, debug: true });
        return { same: svc === again, clickId: window.sdk.getClickId(), data: window.sdk.getData(), lead: await window.sdk.signup('user-sdk') };
      }, options);
      expect(seen.same).toBe(true);
      expect(seen.clickId).toBe((await svcCookie(context))!.value);
      expect(seen.data).toEqual({ clickId: seen.clickId, programId: String(shop.programId), hasAttribution: true, affiliateUrl: `${origin('http', BRAND)}/sdk?aff=${shop.affCode}` });
      expect(seen.lead).toMatchObject({ ok: true, status: 200, provisional: false, data: { click_id: seen.clickId } });
      expect(trackCalls(tab.requests)).toEqual([`POST ${api('http')}/api/v1/track/click`, `POST ${api('http')}/api/v1/track/lead`]);
      expect(tab.logs).toEqual([`info: [svc] click ${seen.clickId}`, expect.stringMatching(/^info: \[svc\] signup 200 /)]);
    } finally {
      await context.close();
    }
  });

  it("the dashboard checklist's snippets work as printed", async () => {
    // A program with nothing yet (no partner either), so every step shows its snippets.
    const workspace = await createTestWorkspace(t.db);
    const owner = { authorization: `Bearer ${workspace.ownerToken}` };
    const created = await app.inject({
      method: 'POST',
      url: '/api/tracking/programs',
      headers: owner,
      payload: { name: 'Fresh brand', domain: BRAND, commission_type: 'percent', commission_rate: 10, allowed_origins: [origin('http', BRAND)] },
    });
    const programId = created.json().data.id as number;
    const apiKey = (await app.inject({ method: 'POST', url: `/api/tracking/programs/${programId}/api-key`, headers: owner })).json().data.api_key as string;

    const context = await browser.newContext();
    try {
      // The service at an address a shell reaches too (curl knows nothing of Chromium's host rules).
      const service = `http://127.0.0.1:${appPort}`;
      const dashboard = await context.newPage();
      await dashboard.goto(`${service}/dashboard`);
      await openTokenForm(dashboard);
      await dashboard.fill('#token', workspace.ownerToken);
      await dashboard.click('#sign-in-button');
      await dashboard.waitForSelector(`main[data-state="ready"][data-program-id="${programId}"]`);
      const printed = Object.fromEntries(
        await dashboard.$$eval('#checklist li[data-step]', (items) =>
          items.map((li) => [
            (li as unknown as { dataset: Record<string, string> }).dataset.step!,
            { next: li.querySelector('.next')?.textContent ?? '', code: [...li.querySelectorAll('code')].map((c) => c.textContent ?? '') },
          ]),
        ),
      ) as Record<'pageview' | 'referrals' | 'payments' | 'partners', { next: string; code: string[] }>;
      expect(Object.values(printed).map((step) => step.code.length)).toEqual([2, 1, 1, 1]);

      /** A shell snippet with its placeholders filled in, run as printed; its JSON answer. */
      const run = async (snippet: string, values: Record<string, string>) => {
        let command = snippet;
        for (const [placeholder, value] of Object.entries(values)) command = command.replaceAll(placeholder, value);
        expect(command).not.toMatch(/<[a-z][a-z _]*>/i);
        const { stdout } = await exec('sh', ['-c', command]);
        return JSON.parse(stdout) as { data?: Record<string, unknown>; success?: boolean };
      };

      // Partners: the snippet adds one, whose code the links below carry.
      const partner = await run(printed.partners.code[0]!, { '<dashboard token>': workspace.ownerToken, '<partner name>': 'Snippet partner' });
      const affCode = partner.data?.aff_code as string;
      expect(affCode).toEqual(expect.any(String));

      // Clicks: the script tag pasted into the brand's page, opened through a partner link in test mode as the text says.
      const [scriptTag, clickCurl] = printed.pageview.code;
      expect(scriptTag).toBe(`<script defer src="${service}/js/svc-tracker.js" data-svc-program-id="${programId}"></script>`);
      expect(printed.pageview.next).toContain('&svc_test=1');
      pastedSnippet = scriptTag!;
      const tab = await openTab(context);
      const testClickId = await visit(tab.page, `${origin('http', BRAND)}/snippet?aff=${affCode}&svc_test=1`);
      expect(tab.errors).toEqual([]);
      expect(await t.db.one(sql('t.tracker_browser_test_click', 'SELECT test FROM clicks WHERE click_id = $1'), [testClickId])).toEqual({ test: true });
      expect(await run(clickCurl!, { '<partner code>': affCode })).toMatchObject({ success: true });

      // Leads and payments.
      const lead = await run(printed.referrals.code[0]!, { '<program API key>': apiKey, '<svc_click_id cookie>': testClickId!, '<your user id>': 'user-1' });
      expect(lead).toMatchObject({ data: { click_id: testClickId, status: 'lead' } });
      expect(await run(printed.payments.code[0]!, { '<dashboard token>': workspace.ownerToken })).toMatchObject({ data: { paymentTrackingMode: 's2s' } });

      const status = await app.inject({ method: 'GET', url: `/api/tracking/status/${programId}`, headers: owner });
      expect(status.json().data).toMatchObject({ stepStatuses: { pageview: 'complete', referrals: 'complete', payments: 'complete' }, hasPartners: true });
      await dashboard.click('#refresh');
      await dashboard.waitForFunction(() => document.querySelector('#checklist-summary')?.textContent?.startsWith('4 of 4 done'));
    } finally {
      await context.close();
    }
  });

  /** The embedded relay and loader: outbox to Avro to chDB, until nothing is left. */
  async function relayAll() {
    const codec = createAvroCodec();
    const deadLetters: string[] = [];
    const log = createLoadingLog({
      loader: createLoader({ warehouse, decode: codec.decode }),
      deadLetterTopic: DEAD_LETTER_TOPIC,
      reportDeadLetter: (_topic, reason) => deadLetters.push(reason),
    });
    const relay = createRelay({ db: t.db, log, encode: codec.message, deadLetterTopic: DEAD_LETTER_TOPIC });
    let result = await relay.relayOnce();
    while (result.kind === 'ok') result = await relay.relayOnce();
    if (result.kind !== 'idle') throw new Error(`relay stopped with ${result.kind}`);
    expect(deadLetters).toEqual([]);
  }
});
