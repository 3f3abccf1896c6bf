/**
 * What the console's browser tests share: a brand's world on the real app (PGlite, chDB, the
 * embedded OpenID provider), traffic relayed into the warehouse, signing in through the provider
 * in Chromium, axe-core on the page, screenshots under tests/e2e/screenshots/ (gitignored).
 */
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { addMember, createSession, createWorkspace } from '../../domain/access/workspaces.js';
import { embeddedDelivery } from './oracle.js';

export const SCREENSHOTS = new URL('../e2e/screenshots/', import.meta.url).pathname;

/** The embedded relay and loader (outbox to Avro to chDB) until every committed row is loaded: the oracle's. */
export const relayAll = (db: Database, warehouse: Warehouse) => embeddedDelivery(warehouse)(db);

export interface Brand {
  workspaceId: number;
  owner: string;
  member: string;
  /** Sessions for setting the world up over the API (the tests themselves sign in in the browser). */
  ownerToken: string;
  memberToken: string;
}

export async function createBrand(db: Database, tag: string): Promise<Brand> {
  const workspaceId = await createWorkspace(db, 'Acme');
  const owner = `olga-${tag}@acme.example`;
  const member = `max-${tag}@acme.example`;
  const ownerId = await addMember(db, workspaceId, owner, 'owner', 'Olga Owner');
  const memberId = await addMember(db, workspaceId, member, 'member', 'Max Member');
  return { workspaceId, owner, member, ownerToken: await createSession(db, ownerId), memberToken: await createSession(db, memberId) };
}

/** A JSON answer of the service, as the tests read it (they know its shape per route). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each test reads the fields of the route it called
type Answer = { data: any; [key: string]: any };

/** JSON over HTTP to the service; throws with the answer unless it is 2xx. */
export async function send(base: string, method: string, path: string, body?: unknown, token?: string): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as Answer;
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** In the browser: the console's "Sign in", the provider's page, back signed in. */
export async function signInWithProvider(page: Page, base: string, email: string, shot?: string) {
  await page.goto(`${base}/dashboard`);
  await page.waitForSelector('#oidc-button:not([disabled])');
  await page.click('#oidc-button');
  await page.waitForSelector('input[name="login"]');
  if (shot) await screenshot(page, shot);
  await page.fill('input[name="login"]', email);
  await page.click('button[type="submit"]');
  await page.waitForSelector('main[data-state="ready"]', { timeout: 60_000 });
}

export async function screenshot(page: Page, name: string) {
  await mkdir(SCREENSHOTS, { recursive: true });
  // From the top: a full-page shot taken while scrolled draws the sticky top bar mid-page.
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/**
 * axe-core's WCAG 2 A/AA rules on what is on the page now. Run through the debugging protocol (as
 * page.evaluate does), so the page's CSP and Trusted Types stay as they are for the page itself.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  const source = await axeSource;
  const violations = (await page.evaluate(
    `(async () => { ${source}; const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
      return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })); })()`,
  )) as AxeViolation[];
  return violations.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
}

/** Nothing on the page is wider than the window: no sideways scrolling. */
export async function horizontalOverflow(page: Page): Promise<number> {
  return (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
}
