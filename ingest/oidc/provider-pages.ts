/**
 * The embedded OpenID provider's own pages (embedded-provider.ts): its sign-in form and its error
 * page, styled like the console and written for a person, not a protocol log. Static HTML with
 * one nonce'd stylesheet and no script.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const STYLE = `:root{color-scheme:light;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#161a2b;background:#f6f7fb}
body{margin:0;min-height:100vh;display:grid;place-items:center;padding:16px;box-sizing:border-box}
main{width:100%;max-width:420px;background:#fff;border:1px solid #e4e7ef;border-radius:12px;padding:28px;box-shadow:0 8px 24px rgb(16 24 40/.06);box-sizing:border-box}
h1{font-size:21px;margin:0 0 4px}p{margin:0 0 14px}.muted{color:#667085;font-size:14px}
form{display:grid;gap:8px}label{font-weight:600;font-size:14px}
input{font:inherit;padding:10px 12px;border:1px solid #c5cad8;border-radius:8px;width:100%;box-sizing:border-box}
input:focus-visible,button:focus-visible,a:focus-visible{outline:3px solid #a5b4fc;outline-offset:2px}
button{font:inherit;font-weight:600;cursor:pointer;border-radius:8px;border:1px solid #4f46e5;background:#4f46e5;color:#fff;padding:10px 16px;margin-top:6px}
.error{color:#b42318;background:#fef3f2;border:1px solid #fecdca;border-radius:8px;padding:8px 12px;font-size:14px}
a{color:#4338ca}.actions{display:flex;justify-content:space-between;align-items:center;gap:12px;margin-top:12px;font-size:14px}`;

/** A page and the headers it must go with (its style's nonce is in the CSP). */
export interface ProviderPage {
  html: string;
  headers: Record<string, string>;
}

function page(title: string, body: string): ProviderPage {
  const nonce = randomBytes(16).toString('base64');
  return {
    html: `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style nonce="${nonce}">${STYLE}</style></head><body><main>${body}</main></body></html>`,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; base-uri 'none'; frame-ancestors 'none'`,
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
    },
  };
}

export function sendPage(res: ServerResponse, status: number, p: ProviderPage) {
  res.statusCode = status;
  for (const [name, value] of Object.entries(p.headers)) res.setHeader(name, value);
  res.end(p.html);
}

export interface SignInForm {
  /** Where the form posts (the interaction's login URL). */
  action: string;
  /** Where "Cancel" goes (the interaction's abort URL). */
  cancel: string;
  /** What the person typed, shown again with the error. */
  email?: string;
  error?: string;
}

/** The sign-in form: an email only. This provider checks no password: it exists for a local, embedded start. */
export function signInPage(form: SignInForm): ProviderPage {
  const error = form.error ? `<p class="error" id="login-error" role="alert">${escapeHtml(form.error)}</p>` : '';
  const described = form.error ? ' aria-describedby="login-error" aria-invalid="true"' : '';
  return page(
    'Sign in · Affiliate tracking',
    `<h1>Sign in</h1><p class="muted">Affiliate tracking, on this machine. Enter the email of your workspace account, or the one your invite was sent to.</p>
${error}<form method="post" action="${escapeHtml(form.action)}" autocomplete="on">
<label for="login">Email</label>
<input id="login" name="login" type="email" required autofocus autocomplete="email" spellcheck="false" value="${escapeHtml(form.email ?? '')}"${described}>
<button type="submit">Continue</button></form>
<div class="actions"><a href="${escapeHtml(form.cancel)}">Cancel</a><span class="muted">No password: this sign-in is for the service's embedded start.</span></div>`,
  );
}

/** What each protocol error means to the person reading the page. */
const ERROR_WORDS: Record<string, string> = {
  invalid_redirect_uri: 'The sign-in was asked for by a page this service does not know. Open the dashboard from its own address and sign in again.',
  invalid_request: 'The sign-in request is not complete or has expired.',
  invalid_client: 'The sign-in was asked for by an application this service does not know.',
  access_denied: 'The sign-in was cancelled.',
  session_not_found: 'This sign-in page has expired (they last 10 minutes).',
};

/** Any error the provider shows instead of redirecting back: what happened, and what to do. */
export function errorPage(error: string, description?: string): ProviderPage {
  const words = ERROR_WORDS[error] ?? 'The sign-in could not continue.';
  const detail = description && !words.includes(description) ? `<p class="muted">Details: ${escapeHtml(description)}</p>` : '';
  return page(
    'Sign-in problem · Affiliate tracking',
    `<h1>Sign-in could not continue</h1><p class="error" role="alert">${escapeHtml(words)}</p>${detail}
<p>Go back to the dashboard (or the terminal running <code>svc login</code>) and start the sign-in again.</p>`,
  );
}
