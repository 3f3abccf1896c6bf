import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Database } from '../../core/db.js';
import { sessionAwaitingSignIn } from '../../domain/access/cli-login.js';
import { M } from '../http/messages.js';
import { publicBase, type CliIdentity } from './context.js';

/** The page `svc login` opens (the link /auth/start hands out), outside the API. */
export const LOGIN_PAGE_PATH = '/cli/login';

export interface CliLoginPageDeps {
  db: Database;
  identity: CliIdentity | undefined;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** JSON inside a <script>: no sequence can close the element. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:4rem auto;padding:0 1rem;color:#1a1a1a}
button{font:inherit;padding:.4rem 1rem}
code{font-size:1.4rem;letter-spacing:.15em;background:#f3f3f3;padding:.2rem .5rem;border-radius:4px}
.error{color:#a40000}`;

function page(title: string, bodyHtml: string, script = '', nonce = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${bodyHtml}${script ? `<script nonce="${nonce}">${script}</script>` : ''}</body></html>`;
}

/**
 * The browser half of the login, as one script: without `code` it sends the person to the
 * provider (authorization code flow with PKCE, state = the login session, nonce bound to it);
 * back with `code` it redeems the code at the provider's token endpoint (a public client) and
 * posts the id_token to /api/v1/cli/auth/callback. The CLI then collects its token by polling.
 */
const FLOW = `(async () => {
  const cfg = JSON.parse(document.getElementById('cfg').textContent);
  const status = document.getElementById('status');
  const fail = (text) => { status.textContent = text; status.className = 'error'; };
  const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  const params = new URLSearchParams(location.search);
  const key = 'svc-login-verifier:' + cfg.state;
  if (params.get('error')) return fail('Sign-in was refused: ' + (params.get('error_description') || params.get('error')));
  const code = params.get('code');
  if (!code) {
    // The person compares the code with their terminal first, then chooses to continue.
    status.textContent = '';
    const button = document.getElementById('continue');
    button.hidden = false;
    await new Promise((resolve) => button.addEventListener('click', resolve, { once: true }));
    button.disabled = true;
    const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
    sessionStorage.setItem(key, verifier);
    const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
    const url = new URL(cfg.authorizationEndpoint);
    for (const [k, v] of Object.entries({ response_type: 'code', client_id: cfg.clientId, redirect_uri: cfg.redirectUri,
      scope: 'openid email profile', state: cfg.state, nonce: cfg.nonce, code_challenge: challenge, code_challenge_method: 'S256' })) url.searchParams.set(k, v);
    status.textContent = 'Redirecting to sign in...';
    return location.assign(url.toString());
  }
  const verifier = sessionStorage.getItem(key);
  if (!verifier) return fail('This browser did not start the sign-in. Open the link printed by svc login again.');
  status.textContent = 'Finishing sign-in...';
  const token = await fetch(cfg.tokenEndpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: cfg.redirectUri, client_id: cfg.clientId, code_verifier: verifier }) });
  const tokens = await token.json().catch(() => ({}));
  if (!token.ok || !tokens.id_token) return fail('The identity provider refused the sign-in: ' + (tokens.error_description || tokens.error || token.status));
  const done = await fetch(cfg.callbackUrl, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ state: cfg.state, id_token: tokens.id_token }) });
  const answer = await done.json().catch(() => ({}));
  sessionStorage.removeItem(key);
  if (!done.ok) return fail((answer.error && answer.error.message) || 'Sign-in failed (' + done.status + ')');
  history.replaceState(null, '', location.pathname);
  status.textContent = 'Signed in as ' + answer.data.email + '. You can close this tab and return to your terminal.';
  status.id = 'signed-in';
})().catch((e) => { const s = document.getElementById('status'); s.textContent = 'Sign-in failed: ' + e.message; s.className = 'error'; });`;

/** GET /cli/login?state=: the page `svc login` opens. Served by the service, outside the API. */
export const cliLoginPageRoutes: FastifyPluginAsync<CliLoginPageDeps> = async (app, { db, identity }) => {
  app.get(LOGIN_PAGE_PATH, { config: { surface: 'other' }, schema: { hide: true } }, async (request, reply) => {
    const state = (request.query as { state?: unknown }).state;
    const session = typeof state === 'string' && state.length <= 256 ? await sessionAwaitingSignIn(db, state) : undefined;
    // X-Frame-Options: the CSP's frame-ancestors for browsers that read only the older header.
    reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').header('x-frame-options', 'DENY').type('text/html; charset=utf-8');
    if (!identity || !session || typeof state !== 'string') {
      return reply.status(404).send(page('svc login', `<h1>svc login</h1><p class="error">${escapeHtml(M.cli.loginPageGone)}</p>`));
    }
    let endpoints;
    try {
      endpoints = await identity.verifier.endpoints();
    } catch (error) {
      request.log.error({ err: error }, 'CLI login page: the OpenID provider cannot be reached');
      return reply.status(503).send(page('svc login', `<h1>svc login</h1><p class="error">${escapeHtml(M.cli.providerUnreachable)}</p>`));
    }
    const base = publicBase(request, identity);
    const config = {
      state,
      nonce: session.nonce,
      clientId: identity.verifier.settings.clientId,
      authorizationEndpoint: endpoints.authorizationEndpoint,
      tokenEndpoint: endpoints.tokenEndpoint,
      redirectUri: new URL(LOGIN_PAGE_PATH, base).toString(),
      callbackUrl: new URL('/api/v1/cli/auth/callback', base).toString(),
    };
    const nonce = randomBytes(16).toString('base64');
    reply.header(
      'content-security-policy',
      `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'; connect-src 'self' ${new URL(endpoints.tokenEndpoint).origin}; base-uri 'none'; frame-ancestors 'none'`,
    );
    // Someone else's link would hand them your account: the code ties the page to your terminal.
    const html = `<h1>svc login</h1><p>Continue only if you ran <code>svc login</code> yourself and your terminal shows this code:</p><p><code id="user-code">${escapeHtml(session.userCode)}</code></p>
<p><button id="continue" type="button" hidden>Continue to sign in</button></p><p id="status">Starting sign-in...</p><script type="application/json" id="cfg">${scriptJson(config)}</script>`;
    return reply.send(page('svc login', html, FLOW, nonce));
  });
};
