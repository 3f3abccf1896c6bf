/**
 * The console in Chromium as a member, who sees everything but cannot change the terms, the key,
 * the payouts, the processor or the team (each refusal shown on the page, nothing changed); then every screen
 * on a 390 px phone (no sideways scrolling), checked with axe-core, and the forms by keyboard.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { M } from '../../ingest/http/messages.js';
import { browserTestsRun } from '../support/browser.js';
import { axeViolations, horizontalOverflow, relayAll, screenshot, send, signInWithProvider, type Brand } from '../support/console-browser.js';
import { openConsoleWorld, type ConsoleWorld } from '../support/console-world.js';
import { checkoutSession, event, signed, webhookSecret } from '../support/processor.js';
// Issue 31: the fraud rules off (a sale a moment after its click would be held for review).
import { NO_FRAUD_RULES } from '../../domain/fraud/rules.js';

const SCREENS = ['overview', 'partners', 'money', 'settings', 'integrations', 'webhooks', 'audit', 'team'] as const;

describe.runIf(browserTestsRun())('the console as a member, on a phone, with axe-core and the keyboard, in Chromium', () => {
  let world: ConsoleWorld;
  let base: string;
  let page: Page;
  let brand: Brand;
  let programId: number;
  let apiKey: string;
  const tag = Date.now().toString(36);
  const problems: string[] = [];

  beforeAll(async () => {
    world = await openConsoleWorld('ats-console-member-', tag);
    ({ base, brand } = world);
    const created = await send(base, 'POST', '/api/tracking/programs', { name: 'Acme Shoes', domain: 'shoes.acme.example', commission_type: 'percent', commission_rate: 10, fraud_rules: NO_FRAUD_RULES }, brand.ownerToken);
    programId = created.data.id;
    apiKey = (await send(base, 'POST', `/api/tracking/programs/${programId}/api-key`, undefined, brand.ownerToken)).data.api_key;
    await send(base, 'POST', `/api/tracking/programs/${programId}/partners`, { name: 'Ada Lovelace with a rather long name', email: 'ada.lovelace.the.first@partners.example', aff_code: 'ada' }, brand.ownerToken);
    const click = await send(base, 'POST', '/api/v1/track/click', { affiliate_url: 'https://shoes.acme.example/?aff=ada' });
    await send(base, 'POST', '/api/v1/track/lead', { click_id: click.click_id, customer_key: 'c-1' }, apiKey);
    await send(base, 'POST', '/api/v1/track/sale', { transaction_id: 'inv-1', amount_cents: 12_345, customer_key: 'c-1' }, apiKey);
    // A processor account connected by the owner, and one event, so the events table has a row.
    const acct = `acct_${tag}Member`;
    const secret = webhookSecret();
    await send(base, 'PUT', `/api/tracking/programs/${programId}/processor-connection`, { account_id: acct, webhook_secret: secret }, brand.ownerToken);
    const payload = JSON.stringify(event('checkout.session.completed', checkoutSession({ metadata: { svc_click_id: click.click_id } })));
    await fetch(`${base}/api/v1/webhooks/processor/${acct}`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signed(payload, { secret }) }, body: payload });
    await send(base, 'POST', `/api/tracking/workspaces/${brand.workspaceId}/invites`, { email: `pending-${tag}@acme.example`, role: 'member' }, brand.ownerToken);
    // A pending payout of the sale's commission (its hold ended, a low minimum), for the money screen.
    await send(base, 'PATCH', `/api/tracking/programs/${programId}/payout-settings`, { payout_minimum_minor: 100 }, brand.ownerToken);
    await world.db.many(sql('t.console_member_end_holds', `UPDATE commissions SET available_at = now() - interval '1 second' WHERE program_id = $1 AND status = 'pending'`), [programId]);
    await send(base, 'POST', `/api/tracking/programs/${programId}/payouts`, {}, brand.ownerToken);
    await relayAll(world.db, world.warehouse);

    page = await world.browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' && !/status of 403/.test(message.text())) problems.push(`console: ${message.text()}`);
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
  const program = async () => (await send(base, 'GET', `/api/tracking/programs/${programId}`, undefined, brand.ownerToken)).data;

  it('signs in as a member: sees every screen; terms, payouts, key, processor and team refused on the page, nothing changed', async () => {
    await signInWithProvider(page, base, brand.member);
    expect(await page.getAttribute('main', 'data-role')).toBe('member');
    const before = await program();

    await tab('settings');
    await page.fill('#set-commission-rate', '50');
    await page.click('#settings-form button[type="submit"]');
    await page.waitForSelector('#settings-error:not([hidden])');
    expect(await page.textContent('#settings-error')).toBe(M.management.termsOwnerOnly);
    // The payout settings move money: owners' alone.
    await page.fill('#set-commission-rate', String(before.commission_rate));
    await page.fill('#set-hold-days', '0');
    await page.click('#settings-form button[type="submit"]');
    await page.waitForSelector(`#settings-error:has-text("${M.money.ownerOnly}")`);
    expect(await page.textContent('#settings-error')).toBe(`payout settings: ${M.money.ownerOnly}`);
    expect((await send(base, 'GET', `/api/tracking/programs/${programId}/payout-settings`, undefined, brand.ownerToken)).data.commission_hold_days).toBe(30);
    await page.fill('#set-hold-days', '30');
    await page.fill('#set-commission-rate', '50');
    await page.click('#key-button');
    await page.waitForSelector('#key-error:not([hidden])');
    expect(await page.textContent('#key-error')).toBe(M.management.ownerOnly);
    expect(await page.isHidden('#key-once')).toBe(true);
    await screenshot(page, 'member-settings-refused');
    // What a member may change, they change.
    await page.fill('#set-commission-rate', '10');
    await page.fill('#set-name', 'Acme Shoes (member edit)');
    await page.click('#settings-form button[type="submit"]');
    await page.waitForSelector('#settings-saved:not([hidden])');
    const after = await program();
    expect({ ...after, name: before.name, updated_at: before.updated_at }).toEqual(before);
    expect(after.name).toBe('Acme Shoes (member edit)');
    expect((await fetch(`${base}/api/v1/cli/status`, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(200);

    await tab('money');
    await page.click('#payout-run-form button[type="submit"]');
    await page.waitForSelector('#payout-run-error:not([hidden])');
    expect(await page.textContent('#payout-run-error')).toBe(M.money.ownerOnly);
    await page.click('button[data-cancel-payout]');
    await page.waitForSelector('#payout-error:not([hidden])');
    expect(await page.textContent('#payout-error')).toBe(M.money.ownerOnly);
    const payouts = (await send(base, 'GET', `/api/tracking/programs/${programId}/payouts`, undefined, brand.ownerToken)).data;
    expect(payouts.map((p: { status: string }) => p.status)).toEqual(['pending']);
    await screenshot(page, 'member-money-refused');

    await tab('integrations');
    await page.fill('#processor-account', 'acct_Elsewhere1');
    await page.fill('#processor-secret', webhookSecret());
    await page.click('#processor-connect');
    await page.waitForSelector('#processor-error:not([hidden])');
    expect(await page.textContent('#processor-error')).toBe(M.processor.ownerOnly);
    expect(await page.textContent('#payments-facts dd[data-fact="Account"]')).toBe(`acct_${tag}Member`);

    await tab('webhooks');
    await page.fill('#endpoint-url', 'https://hooks.acme.example/affiliates');
    await page.check('#event-choices input[value="sale.recorded"]');
    await page.click('#endpoint-form button[type="submit"]');
    await page.waitForSelector('#endpoint-error:not([hidden])');
    expect(await page.textContent('#endpoint-error')).toBe(M.webhooks.ownerOnly);
    expect((await send(base, 'GET', `/api/tracking/programs/${programId}/webhook-endpoints`, undefined, brand.ownerToken)).data).toEqual([]);
    // The audit log is every member's to read: the owner's processor connection is in it.
    await tab('audit');
    expect(await page.$$eval('#audit-table tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-action')))).toContain('processor_connection.connected');

    await tab('team');
    await page.fill('#invite-email', `sneaky-${tag}@acme.example`);
    await page.click('#invite-form button[type="submit"]');
    await page.waitForSelector('#invite-error:not([hidden])');
    expect(await page.textContent('#invite-error')).toBe(M.team.ownerOnly);
    await page.click(`#members-table tr:has-text("${brand.owner}") button[data-remove-member]`);
    await page.waitForSelector('#members-error:not([hidden])');
    expect(await page.textContent('#members-error')).toBe(M.team.ownerOnly);
    const team = (await send(base, 'GET', `/api/tracking/workspaces/${brand.workspaceId}/team`, undefined, brand.ownerToken)).data;
    expect(team.members).toHaveLength(2);
    expect(team.invites.map((i: { email: string }) => i.email)).toEqual([`pending-${tag}@acme.example`]);
    await screenshot(page, 'member-team-refused');
  });

  it('every screen passes axe-core (WCAG 2.1 A and AA) on a desktop', async () => {
    for (const screen of SCREENS) {
      await tab(screen);
      expect(await axeViolations(page), screen).toEqual([]);
    }
    await page.click('#new-program-button');
    await ready('new-program');
    expect(await axeViolations(page), 'new-program').toEqual([]);
  });

  it('on a 390 px phone every screen fits: no sideways scrolling; screenshots', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const screen of SCREENS) {
      await tab(screen);
      expect(await horizontalOverflow(page), screen).toBeLessThanOrEqual(0);
      await screenshot(page, `phone-${screen}`);
    }
    expect(await axeViolations(page), 'team on a phone').toEqual([]);
    await page.click('#sign-out');
    await page.waitForSelector('main[data-state="signed-out"]');
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    expect(await axeViolations(page), 'sign-in').toEqual([]);
    await screenshot(page, 'phone-sign-in');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('by keyboard alone: sign in, move between screens, add a partner', async () => {
    await page.goto(`${base}/dashboard`);
    await page.waitForSelector('#oidc-button:not([disabled])');
    // The sign-in button has the focus when the page opens.
    await page.keyboard.press('Enter');
    await page.waitForSelector('input[name="login"]:focus');
    await page.keyboard.type(brand.member);
    await page.keyboard.press('Enter');
    await page.waitForSelector('main[data-state="ready"][data-screen="overview"]');
    await page.focus('#tabs a[data-screen="partners"]');
    await page.keyboard.press('Enter');
    await ready('partners');
    await page.focus('#partner-name');
    await page.keyboard.type('Keyboard Kate');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.id')).toBe('partner-email');
    await page.keyboard.type('kate@partners.example');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.id')).toBe('partner-code');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#partner-created:not([hidden])');
    await page.waitForSelector('#partners-table tr:has-text("Keyboard Kate")');
    expect(problems).toEqual([]);
  });
});
