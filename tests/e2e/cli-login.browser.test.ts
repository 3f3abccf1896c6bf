import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { hashSecret } from '../../domain/access/secrets.js';
import { addMember, createWorkspace } from '../../domain/access/workspaces.js';
import { DEMO_ACCOUNT } from '../../ingest/oidc/embedded-provider.js';
import { browserTestsRun, launchChromium } from '../support/browser.js';
import { startCliService, type CliService } from '../support/cli-service.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';

const SVC = fileURLToPath(new URL('../../clients/cli/bin/svc.js', import.meta.url));

/**
 * The whole login as a person does it: `svc login` (a child process) prints the link; headless
 * Chromium opens it, the login page sends it to the in-process OpenID provider (oidc-provider),
 * the person signs in as the demo account, the page redeems the code with PKCE and posts the
 * id_token to the callback, and the waiting CLI collects and stores its token.
 */
describe.runIf(browserTestsRun())('CLI browser login through the in-process OpenID provider', () => {
  let t: TestDatabase;
  let service: CliService;
  let browser: Browser;
  let configHome: string;

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    service = await startCliService(t.db);
    const workspaceId = await createWorkspace(t.db, 'Demo workspace');
    await addMember(t.db, workspaceId, DEMO_ACCOUNT.email, 'owner');
    configHome = await mkdtemp(join(tmpdir(), 'svc-browser-'));
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await service?.close();
    await t?.drop();
    if (configHome) await rm(configHome, { recursive: true, force: true });
  });

  it('svc login completes after the sign-in in the browser; the link is then spent', async () => {
    const env = { PATH: process.env.PATH ?? '', HOME: configHome, XDG_CONFIG_HOME: configHome, SVC_BASE_URL: service.url };
    const child = spawn(process.execPath, [SVC, 'login', '--no-browser'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const printed = new Promise<{ url: string; code: string }>((resolve, reject) => {
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        const url = /^\s+(http\S+\/cli\/login\?state=\S+)$/m.exec(stderr)?.[1];
        const code = /shows the code ([A-Z2-9]{4}-[A-Z2-9]{4})/.exec(stderr)?.[1];
        if (url && code) resolve({ url, code });
      });
      child.on('close', () => reject(new Error(`svc login ended before printing the link:\n${stderr}`)));
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const { url, code } = await printed;

    const page = await browser.newPage();
    try {
      await page.goto(url);
      // The page shows the terminal's code and waits for the person to continue.
      expect(await page.textContent('#user-code')).toBe(code);
      await page.click('#continue');
      // The provider's sign-in page (ingest/oidc/provider-pages.ts): an email, no password.
      await page.waitForURL((u) => u.href.startsWith(service.provider.issuer), { timeout: 60_000 });
      await page.fill('input[name="login"]', DEMO_ACCOUNT.email);
      await page.click('button[type="submit"]');
      // Back on the service's login page, which finishes the sign-in.
      await page.waitForSelector('#signed-in', { timeout: 60_000 });
      expect(await page.textContent('#signed-in')).toContain(`Signed in as ${DEMO_ACCOUNT.email}`);
      expect(await page.textContent('#user-code')).toBe(code);
      expect(new URL(page.url()).origin).toBe(service.url);
      expect(page.url()).not.toContain('code=');
    } finally {
      await page.close();
    }

    expect(await exited, stderr).toBe(0);
    expect(stdout).toContain('Token saved to');
    expect(stderr).toContain(`Logged in as ${DEMO_ACCOUNT.email}`);
    const file = join(configHome, 'svc', 'credentials.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(file, 'utf8'));
    expect(stored).toMatchObject({ baseUrl: service.url, email: DEMO_ACCOUNT.email });
    const hashes = await t.db.many<{ token_hash: string }>(sql('t.browser_tokens', 'SELECT token_hash FROM cli_login_tokens'));
    expect(hashes.map((h) => h.token_hash)).toEqual([hashSecret(stored.token)]);

    // The token works; the link does not work twice.
    const programs = await fetch(new URL('/api/v1/cli/programs', service.url), { headers: { authorization: `Bearer ${stored.token}` } });
    expect(programs.status).toBe(200);
    const again = await browser.newPage();
    try {
      const response = await again.goto(url);
      expect(response?.status()).toBe(404);
      expect(await again.textContent('body')).toContain('This login link has expired or was already used.');
    } finally {
      await again.close();
    }
  }, 240_000);
});
