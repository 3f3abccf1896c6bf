import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium: downloading a browser build is not possible on our machines. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Whether the browser tests run. Locally without Chromium they are skipped (with a reason printed);
 * in CI (.ci/run installs it) they run, and a missing browser fails them instead.
 */
export function browserTestsRun(): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.CI) return true;
  console.warn(`${CHROMIUM} is missing: browser tests skipped (apt-get install chromium to run them)`);
  return false;
}

/** `args`: further Chromium switches, such as --host-resolver-rules. */
export async function launchChromium(args: string[] = []): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium); CI must run the browser tests`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', ...args],
  });
}

/** The console's "Use a session token instead": the form an operator's token is pasted into. */
export async function openTokenForm(page: import('playwright-core').Page): Promise<void> {
  await page.waitForSelector('#sign-in-button:not([disabled])', { state: 'attached' });
  if ((await page.getAttribute('#token-details', 'open')) === null) await page.click('#token-details summary');
}
