/**
 * The browser SDK (beta): the spec's `init`, `getClickId`, `signup`, `getData`, and the loader
 * `loadSvc({ debug: true })`. The same implementation as the tracker script (core.ts). Outside a
 * browser (server rendering) `init` and `loadSvc` answer null and nothing touches `document`.
 */
import { createSvc, readClickId, type SignupResult, type Svc, type SvcData, type SvcOptions } from './core.js';

export type { SignupResult, Svc, SvcData, SvcOptions } from './core.js';
/** The service's `data` of a recorded lead, generated from its schemas. */
export type { LeadData } from './wire.js';

let current: { key: string; svc: Svc } | null = null;

const inBrowser = () => typeof window !== 'undefined' && typeof document !== 'undefined';

/**
 * Starts the SDK on this page: records the click when the URL carries `?aff=` (first click wins:
 * an unexpired `svc_click_id` is kept) and sets the cookie. Calling it again with the same options
 * answers the same instance (a React effect may run twice), so a click is never sent twice.
 */
export function init(options: SvcOptions): Svc | null {
  if (!inBrowser()) return null;
  const key = [options.apiUrl, options.programId, options.cookieDomain ?? '', options.debug ? 1 : 0].join('\n');
  try {
    if (current?.key !== key) current = { key, svc: createSvc(options) };
    return current.svc;
  } catch (error) {
    console.error('[svc]', error);
    return null;
  }
}

/** The loader: `init` that waits until this page's click is recorded. Null outside a browser. */
export async function loadSvc(options: SvcOptions): Promise<Svc | null> {
  const svc = init(options);
  if (svc) await svc.ready;
  return svc;
}

/** The click id in the `svc_click_id` cookie, or null (also outside a browser). */
export function getClickId(): string | null {
  return inBrowser() ? readClickId() : null;
}

/** Records a browser-mode lead for the click in the cookie. Call `init` first. Never rejects. */
export async function signup(userId: string, email?: string): Promise<SignupResult> {
  if (current) return current.svc.signup(userId, email);
  return { ok: false, status: 0, provisional: false, data: null, error: { message: 'Call init({ programId, apiUrl }) before signup()' } };
}

export function getData(): SvcData {
  if (current) return current.svc.getData();
  const clickId = getClickId();
  return { clickId, programId: '', hasAttribution: clickId !== null, affiliateUrl: null };
}
