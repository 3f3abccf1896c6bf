import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { createSession } from '../../domain/access/workspaces.js';
import { memoryRateLimitStore } from '../../ingest/http/rate-limit.js';
import { buildTestApp, createTestProgram, type TestProgram } from '../support/app.js';
import { browserTestsRun, launchChromium, openTokenForm } from '../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { account, checkoutSession, event, id, signed, webhookSecret } from '../support/processor.js';

describe.runIf(browserTestsRun())('dashboard page: Payments section of the program settings, in a real Chromium', () => {
  let t: TestDatabase;
  let dir: string;
  let warehouse: Warehouse;
  let app: FastifyInstance;
  let base: string;
  let browser: Browser;
  let page: Page;
  let shop: TestProgram;
  const problems: string[] = [];
  const acct = `acct_${Date.now().toString(36)}Browser`;
  // The signing secret of the account's own webhook endpoint: its events come to its own URL (issue 27).
  const secret = webhookSecret();

  beforeAll(async () => {
    browser = await launchChromium();
    t = await createTestDatabase('pglite');
    dir = await mkdtemp(join(tmpdir(), 'ats-dashboard-payments-'));
    warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    await migrateWarehouse(warehouse);
    app = await buildTestApp(t.db, memoryRateLimitStore(), undefined, warehouse);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    shop = await createTestProgram(app, t.db, { name: 'Acme Shoes', domain: 'shoes.acme.example' });
    page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      // The member's refused connect below is an expected 403.
      if (message.type() === 'error' && !message.text().includes('status of 403')) problems.push(`console: ${message.text()}`);
    });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await warehouse?.close();
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const ownerOf = sql('t.workspace_owner', `SELECT user_id FROM members WHERE workspace_id = $1 AND role = 'owner'`);
  const fact = (name: string) => page.textContent(`#payments-facts dd[data-fact="${name}"]`);
  // The processor connection is on the console's Integrations screen, the checklist on its overview.
  const signIn = async (token: string) => {
    await page.goto(`${base}/dashboard#program=${shop.programId}&screen=integrations`);
    await openTokenForm(page);
    await page.fill('#token', token);
    await page.click('#sign-in-button');
    await page.waitForSelector('main[data-state="ready"][data-screen="integrations"]');
  };
  const paymentsStep = async () => {
    await page.click('#tabs a[data-screen="overview"]');
    await page.waitForSelector('main[data-state="ready"][data-screen="overview"]');
    const status = await page.getAttribute('#checklist li[data-step="payments"]', 'data-status');
    await page.click('#tabs a[data-screen="integrations"]');
    await page.waitForSelector('main[data-state="ready"][data-screen="integrations"]');
    return status;
  };
  const sendEvent = async (evt: object) => {
    const payload = JSON.stringify(evt);
    const res = await fetch(`${base}/api/v1/webhooks/processor/${acct}`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signed(payload, { secret }) }, body: payload,
    });
    expect(res.status).toBe(200);
  };
  const refreshed = async () => {
    await page.click('#tabs a[data-screen="integrations"]');
    await page.waitForSelector('main[data-state="ready"][data-screen="integrations"]');
  };

  it('shows the program as not connected, with where to point the webhook', async () => {
    await signIn(shop.workspace.ownerToken);
    await page.waitForSelector('#payments[data-status="not_connected"]');
    expect(await fact('Status')).toBe('Not connected');
    expect(await fact('Account')).toBe('–');
    expect(await page.textContent('#processor-webhook')).toContain('signing secret');
    expect(await page.isHidden('#processor-disconnect')).toBe(true);
    expect(await paymentsStep()).toBe('pending');
  });

  it('an owner connects an account with its secret: pending, with its own webhook URL, until its first event; then connected', async () => {
    await page.fill('#processor-account', acct);
    await page.fill('#processor-secret', secret);
    await page.click('#processor-connect');
    await page.waitForSelector('#payments[data-status="pending_verification"]');
    expect(await fact('Status')).toBe('Waiting for the first signed event from the account');
    expect(await page.textContent('#processor-webhook')).toContain(`${base}/api/v1/webhooks/processor/${acct}`);
    expect(await page.inputValue('#processor-secret')).toBe('');
    expect(await page.content()).not.toContain(secret);
    expect(await paymentsStep()).toBe('pending');
    await sendEvent(event('customer.created', { id: id('cus'), object: 'customer' }));
    await refreshed();
    await page.waitForSelector('#payments[data-status="connected"]');
    expect(await fact('Status')).toBe('Connected');
    expect(await fact('Account')).toBe(acct);
    expect(await fact('Charges enabled')).toBe('No');
    expect(await paymentsStep()).toBe('complete');

    await sendEvent(event('account.updated', account({ id: acct, charges_enabled: true, payouts_enabled: true, details_submitted: true })));
    const click = await (await fetch(`${base}/api/v1/track/click`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ affiliate_url: `https://shoes.acme.example/?aff=${shop.affCode}` }) })).json();
    const session = checkoutSession({ metadata: { svc_click_id: (click as { click_id: string }).click_id } });
    await sendEvent(event('checkout.session.completed', session));
    await refreshed();
    expect(await fact('Charges enabled')).toBe('Yes');
    expect(await fact('Payouts enabled')).toBe('Yes');
    const rows = await page.$$eval('#processor-events tbody tr', (trs) => trs.map((tr) => tr.textContent));
    expect(rows.some((r) => r?.includes('checkout.session.completed') && r.includes('Recorded'))).toBe(true);
  });

  it('a member who is not an owner is refused with the message shown, and nothing changes', async () => {
    await page.click('#sign-out');
    await page.waitForSelector('main[data-state="signed-out"]');
    await signIn(shop.workspace.memberToken);
    await page.fill('#processor-account', 'acct_SomeoneElse');
    await page.fill('#processor-secret', webhookSecret());
    await page.click('#processor-connect');
    await page.waitForSelector('#processor-error:not([hidden])');
    expect(await page.textContent('#processor-error')).toBe('Only a workspace owner can connect or disconnect the payment processor');
    expect(await fact('Account')).toBe(acct);
  });

  it('an owner disconnects; the payments step is pending again; no page or console error', async () => {
    await page.click('#sign-out');
    await page.waitForSelector('main[data-state="signed-out"]');
    // Signing out revoked the owner's first session on the server: the owner signs in with a new one.
    const owner = await t.db.one<{ user_id: number }>(ownerOf, [shop.workspace.workspaceId]);
    await signIn(await createSession(t.db, owner!.user_id));
    await page.waitForSelector('#payments[data-status="connected"]');
    await page.click('#processor-disconnect');
    await page.waitForSelector('#payments[data-status="not_connected"]');
    expect(await paymentsStep()).toBe('pending');
    expect(problems).toEqual([]);
  });
});
