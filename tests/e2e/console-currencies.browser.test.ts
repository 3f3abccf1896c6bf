/**
 * Issue 30 in Chromium: an owner's rates loaded, EUR and VND sales converted in the overview's
 * totals in the reporting currency (with the rates named), one amount without a rate listed apart;
 * the reporting currency changed in the settings. Checked with axe-core, no page or console error.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserTestsRun } from '../support/browser.js';
import { axeViolations, relayAll, send, signInWithProvider, type Brand } from '../support/console-browser.js';
import { openConsoleWorld, type ConsoleWorld } from '../support/console-world.js';
import { NO_FRAUD_RULES } from '../../domain/fraud/rules.js';

const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

describe.runIf(browserTestsRun())('the console’s totals in the reporting currency, in Chromium', () => {
  let world: ConsoleWorld;
  let base: string;
  let page: Page;
  let brand: Brand;
  let programId: number;
  const tag = Date.now().toString(36);
  const problems: string[] = [];

  const performance = async () => (await send(base, 'GET', `/api/tracking/performance/${programId}?period=7d`, undefined, brand.ownerToken)) as unknown as {
    reporting: { reporting_currency: string; revenue: number; commission: number; unconverted: { currency: string }[] };
  };

  beforeAll(async () => {
    world = await openConsoleWorld('ats-console-currencies-', tag);
    ({ base, brand } = world);
    const created = await send(base, 'POST', '/api/tracking/programs', { name: 'Acme Global', domain: 'global.acme.example', commission_type: 'percent', commission_rate: 10, fraud_rules: NO_FRAUD_RULES }, brand.ownerToken);
    programId = created.data.id;
    const apiKey = (await send(base, 'POST', `/api/tracking/programs/${programId}/api-key`, undefined, brand.ownerToken)).data.api_key;
    await send(base, 'POST', `/api/tracking/programs/${programId}/partners`, { name: 'Linh', aff_code: 'linh' }, brand.ownerToken);
    const sale = async (n: number, amount: number, currency: string) => {
      const click = await send(base, 'POST', '/api/v1/track/click', { affiliate_url: 'https://global.acme.example/?aff=linh' });
      await send(base, 'POST', '/api/v1/track/sale', { transaction_id: `in_${tag}_${n}`, amount_cents: amount, currency, click_id: click.click_id }, apiKey);
    };
    await sale(1, 10_000, 'EUR');
    await sale(2, 2_700_000, 'VND');
    await sale(3, 5_000, 'USD');
    // USD and VND rates two days ago (EUR is the base); none for JPY, which no sale uses.
    const res = await fetch(`${base}/api/tracking/fx-rates`, {
      method: 'POST',
      headers: { authorization: `Bearer ${brand.ownerToken}`, 'content-type': 'text/csv' },
      body: `Date,USD,VND,JPY,\n${daysAgo(2)},1.25,27000,N/A,\n`,
    });
    expect(res.status, await res.clone().text()).toBe(200);
    await relayAll(world.db, world.warehouse);
    page = await world.browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
  }, 120_000);
  afterAll(async () => {
    await world?.close();
  });

  const ready = (screen: string) => page.waitForSelector(`main[data-state="ready"][data-screen="${screen}"]`);
  const tab = async (screen: string) => {
    await page.click(`#tabs a[data-screen="${screen}"]`);
    await ready(screen);
  };

  it('the overview shows EUR and VND converted into USD, with the rates used', async () => {
    await signInWithProvider(page, base, brand.owner);
    await ready('overview');
    const api = await performance();
    // 50.00 USD + 100.00 EUR * 1.25 + 27,000.00 VND * 1.25 / 27000.
    expect(api.reporting).toMatchObject({ reporting_currency: 'USD', revenue: 50 + 125 + 1.25, unconverted: [] });
    await page.waitForSelector(`[data-reporting="revenue"][data-value="${api.reporting.revenue}"]`);
    expect(await page.textContent('[data-reporting="revenue"] [data-value]')).toBe('$176.25');
    expect(await page.textContent('[data-reporting="commission"] [data-value]')).toBe(new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(api.reporting.commission));
    const note = await page.textContent('#fx-note');
    expect(note).toContain('1 EUR = 1.25 USD');
    expect(note).toContain(`1 VND = ${Number((1.25 / 27_000).toPrecision(10))} USD (${daysAgo(2)})`);
    expect(await axeViolations(page)).toEqual([]);
  });

  it('the reporting currency changed in the settings: the overview converts into EUR; a currency without a rate is listed apart', async () => {
    await tab('settings');
    expect(await page.inputValue('#set-reporting-currency')).toBe('USD');
    await page.fill('#set-reporting-currency', 'gbp');
    await page.click('#settings-form button[type="submit"]');
    await page.waitForSelector('#settings-saved:not([hidden])');
    expect((await send(base, 'GET', `/api/tracking/programs/${programId}`, undefined, brand.ownerToken)).data.reporting_currency).toBe('GBP');
    await tab('overview');
    // No GBP rate: every amount is listed as unconverted, none summed.
    await page.waitForSelector('#fx-note:not([hidden])');
    expect(await page.textContent('#fx-note')).toMatch(/^Without a rate, not in these totals: /);
    expect(await page.getAttribute('#fx-note', 'data-unconverted')).toBe('EUR,USD,VND');
    expect(await page.getAttribute('[data-reporting="revenue"]', 'data-value')).toBe('0');

    await tab('settings');
    await page.fill('#set-reporting-currency', 'EUR');
    await page.click('#settings-form button[type="submit"]');
    await page.waitForSelector('#settings-saved:not([hidden])');
    await tab('overview');
    const api = await performance();
    // 100.00 EUR + 50.00 USD / 1.25 + 27,000.00 VND / 27000.
    expect(api.reporting).toMatchObject({ reporting_currency: 'EUR', revenue: 100 + 40 + 1, unconverted: [] });
    await page.waitForSelector(`[data-reporting="revenue"][data-value="${api.reporting.revenue}"]`);
    expect(await page.textContent('[data-reporting="revenue"] h2')).toContain('(EUR)');
    expect(problems).toEqual([]);
  });
});
