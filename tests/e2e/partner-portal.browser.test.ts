/**
 * Issue 31, point 7, in Chromium with JavaScript off (the pages have none): the public application
 * form (filled, submitted as a plain form post, the confirmation page), then the partner's portal on
 * a 390 px phone: signing in with the one-time link, the links with the sub-id builder, the numbers
 * (clicks, sales, commission) after a real click and sale through the pipeline, setting a payout
 * method, a reused link's page. Every page checked with axe-core and for sideways scrolling.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserTestsRun } from '../support/browser.js';
import { axeViolations, horizontalOverflow, relayAll, send } from '../support/console-browser.js';
import { openConsoleWorld, type ConsoleWorld } from '../support/console-world.js';

const NO_FRAUD_RULES = { self_referral: false, click_flood: false, fast_conversion: false, partner_ip: false };

describe.runIf(browserTestsRun())('the application form and the partner portal in Chromium (no JavaScript, a phone)', () => {
  let world: ConsoleWorld;
  let base: string;
  let context: BrowserContext;
  let noScript: BrowserContext;
  /** A phone with JavaScript on (axe-core needs it; the pages have none of their own). */
  let page: Page;
  /** The same phone with JavaScript off: the forms work as plain HTML. */
  let bare: Page;
  let programId: number;
  let apiKey: string;
  const tag = Date.now().toString(36);
  const applicant = `ada-${tag}@partners.example`;

  beforeAll(async () => {
    world = await openConsoleWorld('ats-partner-portal-', tag);
    base = world.base;
    const owner = world.brand.ownerToken;
    const created = await send(base, 'POST', '/api/tracking/programs', {
      name: 'Acme Shoes', domain: 'shoes.acme.example', commission_type: 'percent', commission_rate: 10, fraud_rules: NO_FRAUD_RULES,
    }, owner);
    programId = created.data.id;
    apiKey = (await send(base, 'POST', `/api/tracking/programs/${programId}/api-key`, undefined, owner)).data.api_key;
    await send(base, 'PATCH', `/api/tracking/programs/${programId}`, { applications_open: true }, owner);
    const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };
    context = await world.browser.newContext(phone);
    noScript = await world.browser.newContext({ ...phone, javaScriptEnabled: false });
    page = await context.newPage();
    bare = await noScript.newPage();
  }, 120_000);
  afterAll(async () => {
    await context?.close();
    await noScript?.close();
    await world?.close();
  });

  const checkPage = async (name: string) => {
    expect(await axeViolations(page), `${name}: axe`).toEqual([]);
    expect(await horizontalOverflow(page), `${name}: sideways scrolling`).toBeLessThanOrEqual(0);
  };

  it('submits the application form without JavaScript and shows the confirmation', async () => {
    await page.goto(`${base}/apply/${programId}`);
    expect(await page.textContent('h1')).toContain('Acme Shoes');
    await checkPage('application form');
    // Without JavaScript: a plain form post and the page it answers.
    await bare.goto(`${base}/apply/${programId}`);
    await bare.fill('#name', 'Ada Lovelace');
    await bare.fill('#email', applicant);
    await bare.fill('#website', 'https://ada.example/blog');
    await bare.fill('#message', 'I write about shoes.');
    await Promise.all([bare.waitForURL(`${base}/apply/${programId}`, { waitUntil: 'load' }), bare.click('button[type="submit"]')]);
    expect(await bare.textContent('h1')).toBe('Application sent');
    expect(await bare.textContent('[role="status"]')).toContain(applicant);
    await page.setContent(await bare.content());
    await checkPage('confirmation');

    // The same email again: a friendly page, no second application.
    await bare.goto(`${base}/apply/${programId}`);
    await bare.fill('#name', 'Ada again');
    await bare.fill('#email', applicant.toUpperCase());
    await Promise.all([bare.waitForLoadState('load'), bare.click('button[type="submit"]')]);
    await bare.waitForSelector('h1:text-is("Already applied")');
  });

  it('signs in with the one-time link and shows links, numbers and the payout method on a phone', async () => {
    const owner = world.brand.ownerToken;
    const pending = await send(base, 'GET', `/api/tracking/programs/${programId}/partners?status=pending`, undefined, owner);
    const partnerId = pending.data.find((p: { email: string }) => p.email === applicant).partner_id as number;
    const approved = await send(base, 'POST', `/api/tracking/programs/${programId}/partners/${partnerId}/approve`, undefined, owner);
    const affCode = approved.data.link_created as string;
    // A click and a sale through the pipeline, so the portal has numbers.
    const click = await send(base, 'POST', '/api/v1/track/click', { affiliate_url: `https://shoes.acme.example/?aff=${affCode}&sub1=newsletter` });
    await send(base, 'POST', '/api/v1/track/lead', { click_id: click.click_id, customer_key: 'customer-secret-key' }, apiKey);
    await send(base, 'POST', '/api/v1/track/sale', { transaction_id: `pi_portal_${tag}`, amount_cents: 12_300, customer_key: 'customer-secret-key' }, apiKey);
    await relayAll(world.db, world.warehouse);

    const link = (await send(base, 'POST', `/api/tracking/programs/${programId}/partners/${partnerId}/portal-link`, undefined, owner)).data.url as string;
    await page.goto(link);
    expect(new URL(page.url()).pathname).toBe('/portal');
    expect(await page.textContent('h1')).toBe('Welcome, Ada Lovelace');
    const body = (await page.textContent('main'))!;
    expect(body).toContain(`aff=${affCode}`);
    expect(body).not.toContain('customer-secret-key');
    const figure = async (label: string) => page.textContent(`.figures div:has(dt:text-is("${label}")) dd`);
    expect(await figure('Clicks')).toBe('1');
    expect(await figure('Sales')).toBe('1');
    expect(await figure('Commission (USD)')).toBe('12.30');
    expect(await page.textContent('#commissions-heading + div')).toContain('12.30 USD');
    await checkPage('portal');

    // The sub-id builder (a GET form).
    await page.click('details summary');
    await page.fill(`#p${programId}-sub1`, 'youtube');
    await page.fill(`#p${programId}-sub2`, 'video 7');
    await Promise.all([page.waitForNavigation(), page.click(`form[action="/portal"] button`)]);
    expect(await page.textContent('main')).toContain(`aff=${affCode}&sub1=youtube&sub2=video+7`);

    // The payout method.
    await page.selectOption('#method', 'paypal');
    await page.fill('#pm-email', 'ada@paypal.example');
    await Promise.all([page.waitForNavigation(), page.click('#payout-heading ~ form button')]);
    expect(await page.textContent('[role="status"]')).toContain('payout method was saved');
    expect(await page.textContent('#payout-current')).toContain('ada@paypal.example');
    // A bad one (Wise without the account holder's name; the browser's own checks pass it): the page says why, nothing changes.
    await page.selectOption('#method', 'wise');
    await page.fill('#pm-email', 'ada@wise.example');
    await page.fill('#pm-name', '');
    await Promise.all([page.waitForNavigation(), page.click('#payout-heading ~ form button')]);
    expect(await page.textContent('[role="alert"]')).toContain('name must be the account holder name');
    expect(await page.textContent('#payout-current')).toContain('paypal');
    await checkPage('portal with an error');

    // The link again: used once already.
    await page.goto(link);
    expect(await page.textContent('h1')).toBe('This sign-in link was already used');
    await checkPage('used link');

    // Sign-out ends the session.
    await page.goto(`${base}/portal`);
    await Promise.all([page.waitForNavigation(), page.click('header button')]);
    expect(await page.textContent('h1')).toBe('Signed out');
    await page.goto(`${base}/portal`);
    expect(await page.textContent('h1')).toBe('Sign in to the partner portal');
  });
});
