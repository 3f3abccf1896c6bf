/* global URL, document, sessionStorage, fetch, location, history, crypto, TextEncoder, URLSearchParams, btoa */
// Signing in and out. The console signs people in through the service's OpenID provider
// (authorization code with PKCE: the verifier never leaves this tab; the service redeems the code
// and answers a dashboard session token in a response body, never in a URL). An operator's session
// token can be pasted instead. The token lives in sessionStorage: this tab only, never a cookie.
import { api, ApiFailure } from './api.js';
import { say } from './ui.js';
import { $, app, state } from './state.js';

const TOKEN_KEY = 'ats.dashboardToken';
/** The sign-in in flight: its state, the PKCE verifier and the view to come back to. */
const SIGN_IN_KEY = 'ats.signIn';
/** An invite link's token, kept while its person signs in (then accepted, then dropped). */
const INVITE_KEY = 'ats.invite';

export const savedToken = () => sessionStorage.getItem(TOKEN_KEY);
export const pendingInvite = () => sessionStorage.getItem(INVITE_KEY);
export const dropInvite = () => sessionStorage.removeItem(INVITE_KEY);

export function showSignIn(message) {
  app.dataset.state = 'signed-out';
  for (const screen of document.querySelectorAll('main > .screen')) screen.hidden = true;
  $('controls').hidden = true;
  $('tabs').hidden = true;
  $('sign-in').hidden = false;
  say('sign-in-error', message);
  $('invite-note').hidden = !pendingInvite();
  $('token').value = '';
  $('oidc-button').focus();
}

export function signOut(message) {
  state.controller?.abort();
  state.load += 1;
  state.token = null;
  state.me = null;
  state.programs = [];
  sessionStorage.removeItem(TOKEN_KEY);
  showSignIn(message);
}

/** Signs out here and ends the session on the server too; back on the sign-in page. */
export function signOutEverywhere() {
  // The server revokes the session, so a copy of the token (another tab, a screenshot) stops working too.
  const token = state.token;
  signOut();
  if (token) {
    void fetch('/api/tracking/session', { method: 'DELETE', headers: { authorization: `Bearer ${token}` }, cache: 'no-store', credentials: 'omit', keepalive: true }).catch(() => {});
  }
}

/**
 * Tries the token: who it signs in (GET /api/tracking/session) and their programs. True when it
 * was accepted; else the sign-in page is shown again with the reason.
 */
export async function signIn(token) {
  state.token = token;
  state.signingIn = true;
  app.dataset.state = 'signing-in';
  $('sign-in-button').disabled = true;
  try {
    const [me, programs] = await Promise.all([api('/api/tracking/session'), api('/api/tracking/programs')]);
    sessionStorage.setItem(TOKEN_KEY, token);
    state.me = me.data;
    state.programs = programs.data;
    return true;
  } catch (error) {
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    showSignIn(
      error instanceof ApiFailure && error.status === 401
        ? 'That session was not accepted. It may have expired: sign in again.'
        : `Could not sign in: ${error.message}`,
    );
    return false;
  } finally {
    state.signingIn = false;
    $('sign-in-button').disabled = false;
  }
}

/** A 403 may mean "not your program" or "no session" (the performance route answers 403 for both). */
export async function sessionAlive() {
  try {
    await api('/api/tracking/programs');
    return true;
  } catch (error) {
    return !(error instanceof ApiFailure && error.status === 401);
  }
}

const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** Sends the person to the identity provider; they come back to this page with a code. */
export async function startProviderSignIn() {
  if (!crypto.subtle) {
    say('sign-in-error', 'Signing in needs a secure page: open the dashboard over HTTPS, or on localhost.');
    return;
  }
  $('oidc-button').disabled = true;
  try {
    const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
    const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
    const { data } = await api('/api/tracking/session/sign-in', undefined, { method: 'POST', body: { code_challenge: challenge }, anonymous: true });
    // The provider returns to the service's own address: sign in from there, where this tab's storage is.
    if (new URL(data.redirect_uri).origin !== location.origin) return location.assign(data.redirect_uri);
    sessionStorage.setItem(SIGN_IN_KEY, JSON.stringify({ state: data.state, verifier, hash: location.hash }));
    location.assign(data.authorization_url);
  } catch (error) {
    say('sign-in-error', `Could not start the sign-in: ${error.message}`);
    $('oidc-button').disabled = false;
  }
}

/**
 * Back from the provider (?code&state, or ?error): the code is taken out of the address bar at
 * once, then traded for a session by the service with this tab's verifier. Resolves the session
 * token; undefined with the sign-in page showing why; null when the page was not opened by the provider.
 */
export async function finishProviderSignIn() {
  const params = new URLSearchParams(location.search);
  if (!params.has('code') && !params.has('error')) return null;
  const saved = JSON.parse(sessionStorage.getItem(SIGN_IN_KEY) ?? 'null');
  sessionStorage.removeItem(SIGN_IN_KEY);
  history.replaceState(null, '', `${location.pathname}${saved?.hash ?? ''}`);
  if (params.has('error')) {
    const cancelled = params.get('error') === 'access_denied';
    showSignIn(cancelled ? 'The sign-in was cancelled.' : `The identity provider refused the sign-in: ${params.get('error_description') ?? params.get('error')}`);
    return undefined;
  }
  if (!saved || saved.state !== params.get('state')) {
    showSignIn('This sign-in was started in another browser or tab. Sign in again from here.');
    return undefined;
  }
  app.dataset.state = 'signing-in';
  try {
    const { data } = await api('/api/tracking/session', undefined, {
      method: 'POST',
      body: { state: saved.state, code: params.get('code'), code_verifier: saved.verifier },
      anonymous: true,
    });
    return data.token;
  } catch (error) {
    showSignIn(error.message);
    return undefined;
  }
}

/** An invite link (#invite=inv_...) is kept for after the sign-in, and taken out of the address bar. */
export function keepInviteFromUrl() {
  const match = /(?:^#|&)invite=(inv_[A-Za-z0-9_-]+)/.exec(location.hash);
  if (!match) return;
  sessionStorage.setItem(INVITE_KEY, match[1]);
  history.replaceState(null, '', location.pathname + location.search);
}
