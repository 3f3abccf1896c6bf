import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { createLogger } from '../../core/log.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { buildApp } from '../../ingest/app.js';
import { hashSecret } from '../../domain/access/secrets.js';
import { addMember, createSession } from '../../domain/access/workspaces.js';
import { memoryRateLimitStore } from '../../ingest/http/rate-limit.js';
import { DOCS_BASE_URL, FEE_BPS, createTestProgram, type TestProgram } from '../support/app.js';
import { browserTestsRun, launchChromium, openTokenForm } from '../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { embeddedDelivery } from '../support/oracle.js';

/**
 * The page.evaluate callbacks run in the page; the project compiles without the DOM library (it is
 * Node code), so they are typed against this much of it, declared for this module only.
 */
interface PageElement {
  dataset: Record<string, string | undefined>;
  textContent: string | null;
  getAttribute(name: string): string | null;
  querySelector(selector: string): PageElement | null;
}
declare const document: { querySelector(selector: string): PageElement | null; querySelectorAll(selector: string): ArrayLike<PageElement> & Iterable<PageElement> };
declare const sessionStorage: Record<string, string> & { readonly length: number };

interface DayRow {
  date: string;
  clicks: number;
  leads: number;
  conversions: number;
  revenue: number;
}

interface Trend {
  trend: number | null;
  trendDirection: 'up' | 'down' | 'stable';
  previous: number;
}

interface Performance {
  data: DayRow[];
  metrics: Record<string, number> & Record<`${string}Trend`, Trend>;
  reporting: { reporting_currency: string; revenue: number; commission: number; unconverted: unknown[] };
}

/** The metric cards of the page and the performance fields behind them. */
const CARDS = [
  { metric: 'clicks', total: 'totalClicks', trend: 'clicksTrend' },
  { metric: 'leads', total: 'totalLeads', trend: 'leadsTrend' },
  { metric: 'conversions', total: 'totalConversions', trend: 'conversionsTrend' },
  { metric: 'revenue', total: 'totalRevenue', trend: 'revenueTrend' },
  { metric: 'sales', total: 'totalSales', trend: 'salesTrend' },
  { metric: 'commission', total: 'totalPartnersCommission', trend: 'commissionTrend' },
  { metric: 'partners', total: 'totalPartners', trend: 'partnersTrend' },
  { metric: 'conversionRate', total: 'conversionRate' },
  { metric: 'averageOrderValue', total: 'averageOrderValue' },
] as const;

const ARROWS = { up: '▲', down: '▼', stable: '▬' };

describe.runIf(browserTestsRun())('dashboard page in a real Chromium, on the real app with PGlite and chDB', () => {
  let t: TestDatabase;
  let dir: string;
  let warehouse: Warehouse;
  let app: FastifyInstance;
  let base: string;
  let browser: Browser;
  let page: Page;
  let shop: TestProgram;
  let outlet: TestProgram;
  const sent = { realClicks: 0, amountsCents: [] as number[] };
  const requests: { url: string; authorization: string | undefined }[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    browser = await launchChromium(); // first: a missing browser fails at once
    t = await createTestDatabase('pglite');
    dir = await mkdtemp(join(tmpdir(), 'ats-dashboard-page-'));
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
    const address = app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

    shop = await createTestProgram(app, t.db, { name: 'Acme Shoes', domain: 'shoes.acme.example' });
    outlet = await createTestProgram(app, t.db, { name: 'Acme Outlet', domain: 'outlet.acme.example' }, shop.workspace);
    await sendTraffic();
    await relayAll();

    page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.on('request', (request) => requests.push({ url: request.url(), authorization: request.headers().authorization }));
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      // The refused sign-in below is an expected 401; anything else logged as an error is a problem.
      if (message.type() === 'error' && !message.text().includes('status of 401')) problems.push(`console: ${message.text()}`);
    });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await warehouse?.close();
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function post(path: string, body: object, key?: string) {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (!res.ok) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(json)}`);
    return json;
  }

  /** Real clicks, server-mode leads for some, sales for some of those; then one test click and lead. */
  async function sendTraffic() {
    const url = `https://shoes.acme.example/?aff=${shop.affCode}`;
    const amounts = [4_900, 12_550];
    for (let i = 0; i < 6; i++) {
      const click = await post('/api/v1/track/click', { affiliate_url: url });
      sent.realClicks += 1;
      if (i >= 4) continue;
      await post('/api/v1/track/lead', { click_id: click.click_id, customer_key: `customer-${i}` }, shop.apiKey);
      const amount = amounts[i];
      if (amount === undefined) continue;
      await post('/api/v1/track/sale', { transaction_id: `inv-${i}`, amount_cents: amount, customer_key: `customer-${i}` }, shop.apiKey);
      sent.amountsCents.push(amount);
    }
    const testClick = await post('/api/v1/track/click', { affiliate_url: url, additional_data: { test_mode: true } });
    await post('/api/v1/track/lead', { click_id: testClick.click_id, customer_key: 'test-customer', additional_data: { test_mode: true } }, shop.apiKey);
  }

  /** The embedded relay and loader until every committed row is loaded (the oracle's). */
  const relayAll = () => embeddedDelivery(warehouse)(t.db);

  async function apiGet<T>(path: string): Promise<T> {
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${shop.workspace.ownerToken}` } });
    if (!res.ok) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as T;
  }

  const ready = (programId: number, period: string) =>
    page.waitForSelector(`main[data-state="ready"][data-program-id="${programId}"][data-period="${period}"]`);

  /** What the page shows: card values and trends, and the chart's days as drawn. */
  async function shown() {
    return page.evaluate(() => ({
      cards: Object.fromEntries(
        [...document.querySelectorAll('[data-metric]')].map((node) => [
          node.dataset.metric!,
          {
            value: Number(node.dataset.value),
            text: node.querySelector('[data-value]')!.textContent,
            trendDirection: node.dataset.trendDirection,
            trend: node.dataset.trend,
            previous: node.dataset.previous === undefined ? undefined : Number(node.dataset.previous),
            arrow: node.querySelector('.arrow')?.textContent,
          },
        ]),
      ),
      days: Number(document.querySelector('#chart svg')!.getAttribute('data-days')),
      rows: [...document.querySelectorAll('#chart rect.day')].map((r) => ({
        date: r.dataset.date!,
        clicks: Number(r.dataset.clicks),
        leads: Number(r.dataset.leads),
        conversions: Number(r.dataset.conversions),
        revenue: Number(r.dataset.revenue),
      })),
      lines: [...document.querySelectorAll('#chart polyline, #chart circle')].length,
      tableRows: document.querySelectorAll('#chart-table tbody tr').length,
    }));
  }

  async function expectPageShows(programId: number, period: string) {
    const api = await apiGet<Performance>(`/api/tracking/performance/${programId}?period=${period}`);
    const view = await shown();
    for (const card of CARDS) {
      const onPage = view.cards[card.metric]!;
      expect(onPage.value, card.metric).toBe(api.metrics[card.total]);
      if (!('trend' in card)) continue;
      const trend = api.metrics[card.trend]!;
      expect(onPage.trendDirection, card.metric).toBe(trend.trendDirection);
      expect(onPage.trend, card.metric).toBe(String(trend.trend));
      expect(onPage.previous, card.metric).toBe(trend.previous);
      expect(onPage.arrow, card.metric).toBe(ARROWS[trend.trendDirection]);
    }
    expect(view.days).toBe(api.data.length);
    expect(view.tableRows).toBe(api.data.length);
    expect(view.rows).toEqual(api.data.map(({ date, clicks, leads, conversions, revenue }) => ({ date, clicks, leads, conversions, revenue })));
    return { api, view };
  }

  it('refuses a wrong token and keeps nothing', async () => {
    await page.goto(`${base}/dashboard`);
    await openTokenForm(page);
    await page.fill('#token', 'dsh_not-a-session');
    await page.click('#sign-in-button');
    await page.waitForSelector('#sign-in-error:not([hidden])');
    expect(await page.textContent('#sign-in-error')).toContain('not accepted');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(await page.isVisible('#dashboard')).toBe(false);
  });

  it('signs in with a session token and shows the figures the API gives, drawn from the events sent', async () => {
    await openTokenForm(page);
    await page.fill('#token', shop.workspace.ownerToken);
    await page.click('#sign-in-button');
    await ready(shop.programId, '7d');

    expect(await page.$$eval('#program option', (options) => options.map((o) => o.textContent))).toEqual(['Acme Shoes', 'Acme Outlet']);
    expect(await page.textContent('#program-name')).toBe('Acme Shoes');

    const { api, view } = await expectPageShows(shop.programId, '7d');
    // The numbers trace back to the traffic sent above, through relay, loader and warehouse.
    const revenue = sent.amountsCents.reduce((a, b) => a + b, 0) / 100;
    expect(api.metrics.totalClicks).toBe(sent.realClicks);
    expect(api.metrics.totalConversions).toBe(sent.amountsCents.length);
    expect(api.metrics.totalRevenue).toBe(revenue);
    const today = new Date().toISOString().slice(0, 10);
    expect(view.rows.find((r) => r.date === today)).toMatchObject({ clicks: sent.realClicks, conversions: sent.amountsCents.length, revenue });
    expect(view.lines).toBeGreaterThan(0);

    // Readable text, not only attributes.
    const money = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(revenue);
    expect(await page.textContent('[data-metric="revenue"] [data-value]')).toBe(money);
    expect(await page.textContent('[data-metric="clicks"] [data-value]')).toBe(String(sent.realClicks));
    expect(await page.textContent('[data-metric="clicks"] [data-trend]')).toMatch(/▲\s*Up\s*new vs 0/);
    // Issue 30: the totals in the reporting currency (USD by default; every sale here is USD).
    expect(api.reporting).toMatchObject({ reporting_currency: 'USD', revenue, unconverted: [] });
    expect(Number(await page.getAttribute('[data-reporting="revenue"]', 'data-value'))).toBe(api.reporting.revenue);
    expect(await page.textContent('[data-reporting="revenue"] [data-value]')).toBe(money);
    expect(await page.textContent('[data-reporting="commission"] h2')).toContain('(USD)');
  });

  it('shows the integration checklist from the status endpoint, with what to do next for each pending step', async () => {
    const status = (await apiGet<{ data: { stepStatuses: Record<string, string>; hasPartners: boolean } }>(`/api/tracking/status/${shop.programId}`)).data;
    // The test click and test lead sent above complete the first two steps; payments wait for a processor or s2s.
    expect(status.stepStatuses).toEqual({ pageview: 'complete', referrals: 'complete', payments: 'pending' });
    const steps = await page.evaluate(() =>
      [...document.querySelectorAll('#checklist li')].map((li) => ({ step: li.dataset.step, status: li.dataset.status, text: li.textContent ?? '' })),
    );
    expect(steps.map((s) => [s.step, s.status])).toEqual([
      ['pageview', status.stepStatuses.pageview],
      ['referrals', status.stepStatuses.referrals],
      ['payments', status.stepStatuses.payments],
      ['partners', status.hasPartners ? 'complete' : 'pending'],
    ]);
    const byStep = Object.fromEntries(steps.map((s) => [s.step, s.text]));
    expect(byStep.pageview).toMatch(/1 test click seen, latest/);
    expect(byStep.referrals).toMatch(/1 test lead seen, latest/);
    expect(byStep.pageview).not.toContain('Next:');
    expect(byStep.payments).toContain('Next:');
    expect(byStep.payments).toContain(`/api/tracking/programs/${shop.programId}`);
    expect(byStep.payments).toContain('"paymentTrackingMode":"s2s"');
    expect(await page.textContent('#checklist-summary')).toMatch(/^3 of 4 done/);
  });

  it('switches period and program; the view survives a reload of the tab', async () => {
    await page.click('#periods button[data-period="30d"]');
    await ready(shop.programId, '30d');
    await expectPageShows(shop.programId, '30d');
    expect(new URL(page.url()).hash).toBe(`#program=${shop.programId}&period=30d`);

    await page.selectOption('#program', String(outlet.programId));
    await ready(outlet.programId, '30d');
    const { api } = await expectPageShows(outlet.programId, '30d');
    expect(api.metrics.totalClicks).toBe(0);
    expect(await page.textContent('#chart svg')).toContain('No activity in this period yet');
    const pending = await page.evaluate(() => [...document.querySelectorAll('#checklist li[data-status="pending"]')].map((li) => li.dataset.step));
    expect(pending).toEqual(['pageview', 'referrals', 'payments']);
    expect(await page.textContent('#checklist li[data-step="pageview"]')).toContain(`data-svc-program-id="${outlet.programId}"`);

    await page.click('#periods button[data-period="all"]');
    await ready(outlet.programId, 'all');
    await expectPageShows(outlet.programId, 'all');

    await page.reload();
    await ready(outlet.programId, 'all');
    expect(await page.textContent('#program-name')).toBe('Acme Outlet');
  });

  it('hovering a day shows its figures', async () => {
    await page.selectOption('#program', String(shop.programId));
    await ready(shop.programId, 'all');
    const today = new Date().toISOString().slice(0, 10);
    const box = (await page.locator(`#chart rect.day[data-date="${today}"]`).boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const tip = await page.textContent('#chart .tooltip:not([hidden])');
    expect(tip).toContain(`Clicks: ${sent.realClicks}`);
    expect(tip).toContain(`Conversions: ${sent.amountsCents.length}`);
  });

  it('follows a link to a period, walks the days with the keyboard and hides a series from its legend', async () => {
    await page.goto(`${base}/dashboard#program=${shop.programId}&period=7d`);
    await ready(shop.programId, '7d');
    expect(await page.getAttribute('#periods button[data-period="7d"]', 'aria-pressed')).toBe('true');
    const days = await page.$$eval('#chart rect.day', (rects) => rects.map((r) => r.getAttribute('data-date')));
    expect(days).toHaveLength(7);
    // The day under the guide line, whose centre is the guide's x.
    const guided = () =>
      page.evaluate(() => {
        const x = Number(document.querySelector('#chart line.guide')!.getAttribute('x1'));
        const day = [...document.querySelectorAll('#chart rect.day')].find(
          (r) => Math.abs(Number(r.getAttribute('x')) + Number(r.getAttribute('width')) / 2 - x) < 0.01,
        );
        return day?.dataset.date;
      });
    await page.focus('#chart svg');
    await page.waitForSelector('#chart .tooltip:not([hidden])');
    expect(await guided()).toBe(days[6]);
    await page.keyboard.press('ArrowLeft');
    expect(await guided()).toBe(days[5]);
    await page.keyboard.press('Home');
    expect(await guided()).toBe(days[0]);
    await page.keyboard.press('End');
    expect(await guided()).toBe(days[6]);

    const seriesShown = () => page.$$eval('#chart g[class^="series-"]', (groups) => groups.map((g) => g.getAttribute('class')!.split(' ')[0]));
    expect(await seriesShown()).toEqual(['series-revenue', 'series-clicks', 'series-leads', 'series-conversions']);
    await page.click('#legend button[data-series="clicks"]');
    expect(await page.getAttribute('#legend button[data-series="clicks"]', 'aria-pressed')).toBe('false');
    expect(await seriesShown()).toEqual(['series-revenue', 'series-leads', 'series-conversions']);
    await page.click('#legend button[data-series="clicks"]');
    expect(await seriesShown()).toEqual(['series-revenue', 'series-clicks', 'series-leads', 'series-conversions']);
  });

  it('keeps the token in sessionStorage and the Authorization header, never in a URL; no CSP or script error', async () => {
    const token = shop.workspace.ownerToken;
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([token]);
    expect(requests.length).toBeGreaterThan(0);
    for (const request of requests) expect(request.url).not.toContain(token);
    const apiCalls = requests.filter((r) => new URL(r.url).pathname.startsWith('/api/tracking/'));
    expect(apiCalls.length).toBeGreaterThan(5);
    // The refused token's calls first (the session and the program list), then only the signed-in token.
    for (const call of apiCalls.filter((c) => c.authorization !== 'Bearer dsh_not-a-session')) expect(call.authorization, call.url).toBe(`Bearer ${token}`);
    expect(requests.every((r) => r.url.startsWith(base))).toBe(true);
    expect(problems).toEqual([]);

    await page.click('#sign-out');
    await page.waitForSelector('main[data-state="signed-out"]');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    // Signing out revokes the session on the server: a copy of the token no longer works.
    await expect
      .poll(async () => (await fetch(`${base}/api/tracking/programs`, { headers: { authorization: `Bearer ${token}` } })).status)
      .toBe(401);
    expect(requests.some((r) => new URL(r.url).pathname === '/api/tracking/session' && r.authorization === `Bearer ${token}`)).toBe(true);
  });

  it('a session that ends while the page is open sends the user back to sign in, token dropped', async () => {
    const userId = await addMember(t.db, shop.workspace.workspaceId, `short-lived-${Date.now()}@test.example`, 'member');
    const token = await createSession(t.db, userId);
    await openTokenForm(page);
    await page.fill('#token', token);
    await page.click('#sign-in-button');
    await page.waitForSelector('main[data-state="ready"]');
    await t.db.many(sql('t.dashboard_page_expire_session', `UPDATE dashboard_sessions SET expires_at = now() - interval '1 second' WHERE token_hash = $1`), [
      hashSecret(token),
    ]);
    await page.click('#refresh');
    await page.waitForSelector('main[data-state="signed-out"]');
    expect(await page.textContent('#sign-in-error')).toContain('session has ended');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });
});
