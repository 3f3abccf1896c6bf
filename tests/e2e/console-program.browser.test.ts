/**
 * The console's partner-program screens in Chromium (issue 33, points 3 to 5): settings (terms saved
 * as a new version with the list of versions, applications open with the public form's link, the
 * fraud rules), partners (state and group, approve / reject / ban with a confirmation, a group picked,
 * the portal's one-time link, a link with its own code, a promo code, the groups panel) and
 * commissions (the review queue: approve, reject with a reason; the list with its filters). As an
 * owner, then as a member, whose every refusal is the API's words on the page with nothing changed;
 * axe-core and the 390 px check on each, screenshots under tests/e2e/screenshots/. On the real app
 * (PGlite, chDB, the embedded OpenID provider), no mocked API.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { M } from '../../ingest/http/messages.js';
import { PM } from '../../ingest/partner-portal/messages.js';
import { browserTestsRun } from '../support/browser.js';
import { axeViolations, horizontalOverflow, relayAll, screenshot, send, signInWithProvider, type Brand } from '../support/console-browser.js';
import { openConsoleWorld, type ConsoleWorld } from '../support/console-world.js';

describe.runIf(browserTestsRun())("the console's partner-program screens, as an owner and as a member, in Chromium", () => {
  let world: ConsoleWorld;
  let base: string;
  let brand: Brand;
  let programId: number;
  let ada: number;
  let grace: number;
  let pat: number;
  let context: BrowserContext;
  let page: Page;
  const tag = Date.now().toString(36);
  const problems: string[] = [];

  const api = (method: string, path: string, body?: unknown) => send(base, method, `/api/tracking/programs/${programId}${path}`, body, brand.ownerToken);
  const partnerId = async (name: string) => {
    const list = await api('GET', `/partners?search=${encodeURIComponent(name)}`);
    return list.data[0].partner_id as number;
  };
  /** What the member's refusals must leave as it was: the program, its groups, versions, partners, commissions. */
  const snapshot = async () => {
    const [program, groups, versions, partners, commissions] = await Promise.all([
      api('GET', ''),
      api('GET', '/groups'),
      api('GET', '/commission-rules'),
      api('GET', '/partners'),
      api('GET', '/commissions'),
    ]);
    const strip = (p: Record<string, unknown>) => ({ ...p, clicks: null, sales: null, revenue: null, commission: null });
    return { program: program.data, groups: groups.data, versions: versions.data, partners: partners.data.map(strip), commissions: commissions.data };
  };

  beforeAll(async () => {
    world = await openConsoleWorld('ats-console-program-', tag);
    ({ base, brand } = world);
    // The fraud rules as a new program has them (all on): a sale a moment after its click is held (fast_conversion).
    programId = (await send(base, 'POST', '/api/tracking/programs', { name: 'Acme Shoes', domain: 'shoes.acme.example', commission_type: 'percent', commission_rate: 10 }, brand.ownerToken)).data.id;
    const apiKey = (await api('POST', '/api-key')).data.api_key as string;
    await api('POST', '/partners', { name: 'Ada Lovelace', email: 'ada@partners.example', aff_code: 'ada' });
    await api('POST', '/partners', { name: 'Grace Hopper', aff_code: 'grace' });
    for (let i = 0; i < 2; i++) {
      const click = await send(base, 'POST', '/api/v1/track/click', { affiliate_url: 'https://shoes.acme.example/?aff=ada' });
      await send(base, 'POST', '/api/v1/track/lead', { click_id: click.click_id, customer_key: `c-${i}` }, apiKey);
      await send(base, 'POST', '/api/v1/track/sale', { transaction_id: `inv-${tag}-${i}`, amount_cents: 10_000 * (i + 1), customer_key: `c-${i}` }, apiKey);
    }
    await api('PATCH', '', { applications_open: true });
    await send(base, 'POST', '/api/v1/partners/apply', { program_id: programId, name: 'Pat Applicant', email: `pat-${tag}@partners.example`, website: 'https://pat-runs.example', message: 'I review running shoes.' });
    await api('PATCH', '', { applications_open: false });
    // Loaded first: the partner list's first request computes the warehouse's totals.
    await relayAll(world.db, world.warehouse);
    [ada, grace, pat] = [await partnerId('Ada'), await partnerId('Grace'), await partnerId('Pat')];

    context = await world.browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      // The refusals the test provokes are answered 4xx and shown on the page; anything else is a problem.
      if (message.type() === 'error' && !/status of 4\d\d/.test(message.text())) problems.push(`console: ${message.text()}`);
    });
  }, 120_000);
  afterAll(async () => {
    await context?.close();
    await world?.close();
  });

  const ready = (screen: string) => page.waitForSelector(`main[data-state="ready"][data-screen="${screen}"]`);
  const tab = async (screen: string) => {
    await page.click(`#tabs a[data-screen="${screen}"]`);
    await ready(screen);
  };
  const shown = (selector: string) => page.waitForSelector(`${selector}:not([hidden])`);
  const text = async (selector: string) => (await page.textContent(selector))?.trim();
  const manage = async (name: string) => {
    await page.click(`#partners-table tr:has-text("${name}") button[data-manage]`);
    await page.waitForSelector(`#partner-panel:not([hidden]) #partner-panel-title:has-text("${name}")`);
  };
  const row = (name: string) => page.$$eval(`#partners-table tr:has-text("${name}") td`, (tds) => tds.map((td) => td.textContent?.trim()));

  it('settings, as an owner: the terms saved as a new version and listed; applications open with the link; a fraud rule off', async () => {
    await signInWithProvider(page, base, brand.owner);
    await tab('settings');
    expect(await page.isChecked('#set-applications')).toBe(false);
    expect(await page.isChecked('#rule-fast_conversion')).toBe(true);
    expect(await text('#apply-link')).toBe(`${base}/apply/${programId}`);

    await page.selectOption('#set-commission-type', 'recurring_percent');
    await page.fill('#set-commission-rate', '15');
    await page.fill('#set-recurring-months', '12');
    await page.check('#set-applications');
    await page.uncheck('#rule-partner_ip');
    await page.click('#settings-form button[type="submit"]');
    await shown('#settings-saved');
    const program = (await api('GET', '')).data;
    expect([program.commission_type, program.commission_rate, program.recurring_months, program.applications_open]).toEqual(['recurring_percent', 15, 12, true]);
    expect(program.fraud_rules).toEqual({ self_referral: true, click_flood: true, fast_conversion: true, partner_ip: false });

    await page.click('#terms-versions summary');
    await page.waitForSelector('#terms-versions[data-state="ready"]');
    const versions = await page.$$eval('#versions-table tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim())));
    expect(versions.map((v) => v.slice(0, 3))).toEqual([
      ['2', 'The program', '15 % of each payment, 12 months'],
      ['1', 'The program', '10 % of each sale'],
    ]);
    expect(versions[0]![4]).toBe(brand.owner);
    // The public form is open at the link shown.
    expect((await fetch(`${base}/apply/${programId}`)).status).toBe(200);
    // A time in the past is refused in the API's words, and writes no version.
    await page.fill('#set-commission-rate', '16');
    await page.fill('#set-terms-from', '2020-01-01T00:00');
    await page.click('#settings-form button[type="submit"]');
    await shown('#settings-error');
    expect(await text('#settings-error')).toBe(M.terms.inPast);
    expect((await api('GET', '/commission-rules')).data).toHaveLength(2);
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'program-owner-settings');
  });

  it('partners, as an owner: groups created, renamed, refused deletion; a partner moved, approved, invited, given a link and a promo code, banned after a confirmation', async () => {
    await tab('partners');
    expect(await page.$$eval('#partners-table thead th', (ths) => ths.map((th) => th.textContent?.trim()).slice(0, 3))).toEqual(['Partner', 'State', 'Group']);
    expect((await row('Pat Applicant')).slice(1, 3)).toEqual(['Pending', '–']);

    // Groups: one with terms of its own, then renamed in its row.
    await page.fill('#group-name', 'Gold');
    await page.selectOption('#group-type', 'percent');
    await page.fill('#group-rate', '20');
    await page.click('#group-form button[type="submit"]');
    await page.waitForSelector('#groups-table tr:has-text("Gold")');
    expect(await text('#groups-done')).toBe('Group Gold created.');
    await page.fill('#groups-table tr:has-text("Gold") input[name="name"]', 'Gold VIP');
    await page.click('#groups-table tr:has-text("Gold") button[type="submit"]');
    await page.waitForSelector('#groups-table tr:has-text("Gold VIP")');
    const groups = (await api('GET', '/groups')).data;
    expect(groups.map((g: { name: string; terms: { commission_rate: number } }) => [g.name, g.terms.commission_rate])).toEqual([['Gold VIP', 20]]);

    // Ada into the group, from her panel (opened by keyboard: the focus moves to its heading).
    await page.focus('#partners-table tr:has-text("Ada Lovelace") button[data-manage]');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#partner-panel:not([hidden]) #partner-panel-title:has-text("Ada Lovelace")');
    expect(await page.evaluate('document.activeElement.id')).toBe('partner-panel-title');
    await page.selectOption('#partner-group', String(groups[0].id));
    await page.click('#partner-group-form button[type="submit"]');
    await page.waitForSelector('#partner-action-done:has-text("Moved to Gold VIP.")');
    expect((await row('Ada Lovelace'))[2]).toBe('Gold VIP');
    // A group with partners is not deleted: the API's message.
    await page.click('#groups-table button[data-delete-group]');
    await shown('#groups-error');
    expect(await text('#groups-error')).toBe(M.terms.groupNotEmpty);
    expect((await api('GET', '/groups')).data).toHaveLength(1);

    // The one-time portal link, shown once with a copy button.
    await page.click('#portal-link-button');
    await shown('#portal-once');
    const link = await text('#portal-link');
    expect(link).toMatch(new RegExp(`^${base}/portal/sign-in\\?token=`));
    await page.click('#portal-copy');
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(link);
    // Another link with its own code, and a promo code.
    await page.fill('#link-code', 'ada-spring');
    await page.click('#link-form button[type="submit"]');
    await page.waitForSelector('#partner-action-done:has-text("Link added: https://shoes.acme.example/?aff=ada-spring")');
    await page.waitForSelector('#partners-table tr:has-text("Ada Lovelace") ul.links li:nth-child(2)');
    await page.fill('#promo-code', 'ADA10');
    await page.click('#promo-form button[type="submit"]');
    await page.waitForSelector('#partner-action-done:has-text("Promo code ADA10 added.")');
    expect((await send(base, 'GET', `/api/tracking/programs/${programId}/partners/${ada}/promo-codes`, undefined, brand.ownerToken)).data.map((c: { code: string }) => c.code)).toEqual(['ADA10']);
    // A code already taken: the API's refusal beside the form, nothing added.
    await page.fill('#link-code', 'grace');
    await page.click('#link-form button[type="submit"]');
    await shown('#partner-action-error');
    expect((await send(base, 'GET', `/api/tracking/programs/${programId}/partners/${ada}/links`, undefined, brand.ownerToken)).data).toHaveLength(2);
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'program-owner-partner-panel');

    // The applicant: what they sent, on demand; approved from their panel.
    await page.click('#applications summary');
    await page.waitForSelector('#applications[data-state="ready"]');
    expect(await page.$$eval('#applications-table tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-partner-id')))).toEqual([String(pat)]);
    expect(await text('#applications-table tbody tr')).toContain(`pat-${tag}@partners.example`);
    expect(await text('#applications-table tbody tr')).toContain('https://pat-runs.example');
    expect(await text('#applications-table tbody tr')).toContain('I review running shoes.');
    expect(await axeViolations(page)).toEqual([]);
    await page.click('#applications-table button[data-manage]');
    await page.waitForSelector('#partner-panel:not([hidden]) #partner-panel-title:has-text("Pat Applicant")');
    await page.click('#partner-decisions button[data-decision="approve"]');
    await page.waitForSelector('#partner-action-done:has-text("Approved.")');
    expect((await row('Pat Applicant'))[1]).toBe('Approved');
    await page.waitForSelector('#applications[data-state="ready"] #applications-empty:not([hidden])');

    // Grace banned, after the confirmation (kept once, then banned).
    await manage('Grace Hopper');
    await page.click('#partner-decisions button[data-decision="ban"]');
    await shown('#ban-confirm');
    expect(await text('#ban-confirm-text')).toContain('Ban Grace Hopper?');
    // The keyboard is on the safe answer; keeping the partner returns it to the Ban button.
    expect(await page.evaluate('document.activeElement.id')).toBe('ban-no');
    await page.keyboard.press('Enter');
    expect(await page.isHidden('#ban-confirm')).toBe(true);
    expect(await page.evaluate('document.activeElement.dataset.decision')).toBe('ban');
    expect((await row('Grace Hopper'))[1]).toBe('Approved');
    await page.click('#partner-decisions button[data-decision="ban"]');
    await page.click('#ban-yes');
    await page.waitForSelector('#partner-action-done:has-text("Banned")');
    expect((await row('Grace Hopper'))[1]).toBe('Banned');
    const links = await world.db.many<{ enabled: boolean }>(sql('t.console_program_grace_links', `SELECT enabled FROM referral_links WHERE program_id = $1 AND partner_id = $2`), [programId, grace]);
    expect(links.map((l) => l.enabled)).toEqual([false]);
    // A banned partner cannot be approved again: the API's words.
    await page.click('#partner-decisions button[data-decision="approve"]');
    await shown('#partner-action-error');
    expect(await text('#partner-action-error')).toBe(PM.decision.conflict('banned', 'approve'));
    await screenshot(page, 'program-owner-partners');
  });

  it('commissions, as an owner: the review queue with its reasons; a rejection needs a reason; approve one, reject one; the list filtered', async () => {
    await tab('commissions');
    const held = await page.$$eval('#reviews-table tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-commission-id')));
    expect(held).toHaveLength(2);
    expect(await page.$$eval('#reviews-table li[data-reason]', (lis) => lis.map((li) => li.getAttribute('data-reason')))).toContain('fast_conversion');
    expect(await page.$$eval('#commissions-table tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-status')))).toEqual(['held', 'held']);
    // Each partner by its name (the lists' partner_name), in both tables.
    const partnerCells = (table: string) => page.$$eval(`#${table} tbody tr td:nth-child(2)`, (tds) => tds.map((td) => td.textContent));
    expect(await partnerCells('reviews-table')).toEqual(['Ada Lovelace', 'Ada Lovelace']);
    expect(await partnerCells('commissions-table')).toEqual(['Ada Lovelace', 'Ada Lovelace']);
    expect(await page.getAttribute(`#reviews-table button[data-decide="approve"]`, 'aria-label')).toMatch(/^Approve the commission of \$\d+\.\d{2} for Ada Lovelace$/);
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'program-owner-commissions');

    const [first, second] = held as [string, string];
    await page.click(`#reviews-table tr[data-commission-id="${first}"] button[data-decide="reject"]`);
    await shown('#review-error');
    expect(await text('#review-error')).toBe('Type the reason for rejecting it first.');
    expect((await api('GET', `/commissions/${first}`)).data.status).toBe('held');
    await page.fill(`#reviews-table tr[data-commission-id="${first}"] input[name="reason"]`, 'Same household as the partner');
    await page.click(`#reviews-table tr[data-commission-id="${first}"] button[data-decide="reject"]`);
    await page.waitForSelector('#review-done:has-text("Rejected")');
    await page.click(`#reviews-table tr[data-commission-id="${second}"] button[data-decide="approve"]`);
    await page.waitForSelector('#review-done:has-text("Approved")');
    expect(await page.isVisible('#reviews-empty')).toBe(true);
    const [rejected, approved] = [(await api('GET', `/commissions/${first}`)).data, (await api('GET', `/commissions/${second}`)).data];
    expect([rejected.status, rejected.status_reason, approved.status]).toEqual(['reversed', 'Same household as the partner', 'approved']);

    await page.selectOption('#commission-status', 'reversed');
    await page.click('#commission-filter button[type="submit"]');
    await ready('commissions');
    expect(await page.$$eval('#commissions-table tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-commission-id')))).toEqual([first]);
    await page.selectOption('#commission-status', '');
    await page.fill('#commission-partner', String(grace));
    await page.click('#commission-filter button[type="submit"]');
    await ready('commissions');
    expect(await page.isVisible('#commissions-empty')).toBe(true);
    await page.fill('#commission-partner', '');
    expect(problems).toEqual([]);
  });

  it('as a member: every screen readable; owners\' controls disabled, and the API refuses them anyway (the API\'s words); nothing changed', async () => {
    // A held commission again, for the member to see.
    const apiKey = (await api('POST', '/api-key')).data.api_key as string;
    const click = await send(base, 'POST', '/api/v1/track/click', { affiliate_url: 'https://shoes.acme.example/?aff=ada' });
    await send(base, 'POST', '/api/v1/track/lead', { click_id: click.click_id, customer_key: 'c-member' }, apiKey);
    await send(base, 'POST', '/api/v1/track/sale', { transaction_id: `inv-${tag}-member`, amount_cents: 7_000, customer_key: 'c-member' }, apiKey);
    await context.close();
    context = await world.browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    await signInWithProvider(page, base, brand.member);
    expect(await page.getAttribute('main', 'data-role')).toBe('member');
    const before = await snapshot();
    /** The member's own session sending what a disabled control would: the status and the API's message. */
    const asMember = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}/api/tracking/programs/${programId}${path}`, {
        method,
        headers: { authorization: `Bearer ${brand.memberToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return [res.status, ((await res.json()) as { error: { message: string } }).error.message];
    };

    // Settings: the terms stay editable as before (the refusal beside the form); the fraud rules are disabled.
    await tab('settings');
    await page.fill('#set-recurring-months', '24');
    await page.click('#settings-form button[type="submit"]');
    await shown('#settings-error');
    expect(await text('#settings-error')).toBe(M.management.termsOwnerOnly);
    await page.fill('#set-recurring-months', '12');
    for (const rule of ['self_referral', 'click_flood', 'fast_conversion', 'partner_ip']) expect(await page.isDisabled(`#rule-${rule}`), rule).toBe(true);
    expect(await asMember('PATCH', '', { fraud_rules: { partner_ip: true } })).toEqual([403, M.money.ownerOnly]);
    await page.click('#terms-versions summary');
    await page.waitForSelector('#terms-versions[data-state="ready"]');
    // The program's two versions and the group's first, newest first; the member reads them all.
    expect(await page.$$eval('#versions-table tbody tr td:nth-child(2)', (tds) => tds.map((td) => td.textContent))).toEqual(['Group: Gold VIP', 'The program', 'The program']);
    await screenshot(page, 'program-member-settings-refused');

    // Partners: decisions, the portal link, groups disabled; links and promo codes are a member's too.
    await tab('partners');
    await manage('Ada Lovelace');
    for (const selector of ['#partner-decisions button[data-decision="approve"]', '#partner-decisions button[data-decision="ban"]', '#portal-link-button', '#partner-group', '#partner-group-form button', '#group-form button', '#groups-table button[data-delete-group]']) {
      expect(await page.isDisabled(selector), selector).toBe(true);
    }
    expect(await page.isEnabled('#link-form button')).toBe(true);
    const group = before.groups[0].id as number;
    expect(await asMember('POST', `/partners/${ada}/ban`)).toEqual([403, PM.decision.ownerOnly]);
    expect(await asMember('POST', `/partners/${ada}/portal-link`)).toEqual([403, PM.decision.ownerOnly]);
    expect(await asMember('DELETE', `/groups/${group}/partners/${ada}`)).toEqual([403, M.management.termsOwnerOnly]);
    expect(await asMember('POST', '/groups', { name: 'Silver' })).toEqual([403, M.management.termsOwnerOnly]);
    expect(await asMember('PATCH', `/groups/${group}`, { name: 'Tin' })).toEqual([403, M.management.termsOwnerOnly]);
    expect(await asMember('DELETE', `/groups/${group}`)).toEqual([403, M.management.termsOwnerOnly]);
    await screenshot(page, 'program-member-partners');

    // Commissions: the queue is read, its decisions disabled.
    await tab('commissions');
    const held = await page.$$eval('#reviews-table tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-commission-id')));
    expect(held).toHaveLength(1);
    expect(await page.isDisabled('#reviews-table button[data-decide="approve"]')).toBe(true);
    expect(await page.isDisabled('#reviews-table button[data-decide="reject"]')).toBe(true);
    expect(await asMember('POST', `/commissions/${held[0]}/approve`, { reason: 'Looks fine' })).toEqual([403, M.money.ownerOnly]);
    expect(await asMember('POST', `/commissions/${held[0]}/reject`, { reason: 'Looks wrong' })).toEqual([403, M.money.ownerOnly]);
    await screenshot(page, 'program-member-commissions');

    expect(await snapshot()).toEqual(before);
    expect(problems).toEqual([]);
  });

  it('as a member on a 390 px phone: the three screens fit, pass axe-core; screenshots', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const screen of ['settings', 'partners', 'commissions'] as const) {
      await tab(screen);
      if (screen === 'partners') await manage('Ada Lovelace');
      if (screen === 'settings') await page.click('#terms-versions summary');
      expect(await horizontalOverflow(page), screen).toBeLessThanOrEqual(0);
      expect(await axeViolations(page), screen).toEqual([]);
      await screenshot(page, `program-phone-${screen}`);
    }
  });
});
