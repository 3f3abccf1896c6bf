/**
 * The one implementation behind the tracker script (tracker.ts, served as /js/svc-tracker.js) and
 * the browser SDK (index.ts). It runs inside brands' pages, so nothing here throws into the page
 * or holds it up, and every byte counts against the tracker's 1,024-byte gzipped budget.
 */
import type { ClickRequest, ClickResponse, LeadData, LeadRequest, LeadResponse } from './wire.js';

export interface SvcOptions {
  /** The program whose clicks and signups this site records (`data-svc-program-id`). */
  programId: string | number;
  /** Where the service answers, such as `https://track.example.com`; the tracker script uses its own origin. */
  apiUrl: string;
  /** A root domain such as `.brand.co.uk`; when omitted, the site's root domain is found by asking the browser. */
  cookieDomain?: string;
  /** Log info and warnings with the `[svc]` prefix; errors are always logged. */
  debug?: boolean;
}

/** What `getData()` answers. */
export interface SvcData {
  clickId: string | null;
  programId: string;
  hasAttribution: boolean;
  /** This page's URL when it carries `?aff=` (the partner link the visitor arrived by), else null. */
  affiliateUrl: string | null;
}

/** What `signup()` resolves to; it never rejects. `status` is 0 when no answer came (no click id, network). */
export interface SignupResult {
  ok: boolean;
  status: number;
  /** True for a browser-mode lead on a `server_required` program: the brand's server must confirm it. */
  provisional: boolean;
  data: LeadData | null;
  error: { code?: string; message: string } | null;
}

export interface Svc {
  getClickId(): string | null;
  signup(userId: string, email?: string): Promise<SignupResult>;
  getData(): SvcData;
  /** Settles once this page's click (if any) is recorded, with the click id then in effect. Never rejects. */
  ready: Promise<string | null>;
}

type Level = 'info' | 'warn' | 'error';
/** The service's JSON: click { click_id, cookie_window_days }, lead { data }, errors { error }. */
type Body = (Partial<ClickResponse> & Partial<LeadResponse> & { error?: { code?: string; message: string } }) | null;
/** Status and body of an answer. */
type Answer = [number, Body];

/** The click id in the `svc_click_id` cookie, or null. (Click ids are UUIDs: nothing to decode.) */
export function readClickId(): string | null {
  try {
    return /(?:^|; )svc_click_id=([^;]+)/.exec(document.cookie)?.[1] ?? null;
  } catch {
    return null;
  }
}

/**
 * Sets the cookie on `domain`, or else on the site's root domain: the shortest suffix of the
 * hostname the browser accepts. Browsers refuse a public suffix such as `co.uk` (they carry the
 * public suffix list), so on `shop.brand.co.uk` the first domain accepted is `brand.co.uk`,
 * without a list of our own. A single-label host or an address gets a host-only cookie.
 */
function writeClickId(clickId: string, days: number, domain: string | undefined): void {
  const cookie = `svc_click_id=${clickId}; Path=/; Max-Age=${days * 86400}; SameSite=Lax${location.protocol === 'https:' ? '; Secure' : ''}`;
  const labels = location.hostname.split('.');
  for (let i = 2; readClickId() !== clickId && i <= labels.length; i++) {
    document.cookie = `${cookie}; Domain=${domain || labels.slice(-i).join('.')}`;
  }
  if (readClickId() !== clickId) document.cookie = cookie;
}

export function createSvc(options: SvcOptions): Svc {
  const programId = String(options.programId);
  // Without a program id (or with one that is not a number) no click is sent.
  const numericProgramId = +programId || 0;

  const log = (level: Level, ...args: unknown[]) => {
    if (options.debug || level === 'error') console[level]('[svc]', ...args);
  };

  // A string body goes as text/plain, which the service reads as JSON: no CORS preflight.
  // keepalive lets the request finish when the visitor navigates away at once.
  const post = (path: 'click' | 'lead', body: ClickRequest | LeadRequest): Promise<Answer> =>
    fetch(`${options.apiUrl}/api/v1/track/${path}`, { method: 'POST', body: JSON.stringify(body), keepalive: true }).then(async (response) => [response.status, await response.json()]);

  const query = new URLSearchParams(location.search);
  // This page's URL when it is a partner link.
  const affiliateUrl = query.get('aff') ? location.href : null;

  async function trackClick(): Promise<string | null> {
    const existing = readClickId();
    if (!affiliateUrl || existing || !numericProgramId) {
      // No partner link, or first click wins: an unexpired cookie is never replaced.
      log(numericProgramId ? 'info' : 'error', 'no click', programId, existing);
      return existing;
    }
    const [status, body] = await post('click', {
      affiliate_url: affiliateUrl,
      additional_data: { program_id: numericProgramId, test_mode: query.has('svc_test') },
    });
    const clickId = body?.click_id;
    if (!clickId) throw [status, body?.error?.message];
    writeClickId(clickId, body.cookie_window_days!, options.cookieDomain);
    log('info', 'click', clickId);
    return clickId;
  }

  const ready = trackClick().catch((error: unknown) => {
    log('error', 'click', error);
    return readClickId();
  });

  async function signup(_userId: string, _email?: string): Promise<SignupResult> {
    let status = 0;
    let body: Body = null;
    try {
      const clickId = (await ready) ?? readClickId();
      // Without a click id the service answers 400: expected for visitors not sent by a partner.
      if (clickId) {
        // userId and email stay in the page: the service keeps nothing an unauthenticated browser
        // says about a customer. The brand's server sends them (trackLead) to settle the lead.
        // The click names the program; additional_data.program_id adds nothing in browser mode.
        [status, body] = await post('lead', { click_id: clickId });
      }
    } catch (thrown) {
      body = { error: { message: String(thrown) } };
    }
    const data = (status < 300 && body?.data) || null;
    const error = data ? null : (body?.error ?? { message: status ? `HTTP ${status}` : 'No click id' });
    // No click id (nothing sent) is a warning: most signups come from visitors no partner sent.
    log(data ? 'info' : body ? 'error' : 'warn', 'signup', status, data || error);
    return { ok: !!data, status, provisional: !!data?.provisional, data, error };
  }

  function getData(): SvcData {
    const clickId = readClickId();
    return { clickId, programId, hasAttribution: !!clickId, affiliateUrl };
  }

  return { getClickId: readClickId, signup, getData, ready };
}
