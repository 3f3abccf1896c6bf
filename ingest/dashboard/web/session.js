/* global sessionStorage, fetch */
// Signing in and out with a dashboard session token.
import { api, ApiFailure } from './api.js';
import { $, app, state } from './state.js';

/** sessionStorage: the token lives as long as this tab, never in a cookie, a URL or localStorage. */
const TOKEN_KEY = 'ats.dashboardToken';

export const savedToken = () => sessionStorage.getItem(TOKEN_KEY);

export function showSignIn(message) {
  app.dataset.state = 'signed-out';
  $('dashboard').hidden = true;
  $('controls').hidden = true;
  $('sign-in').hidden = false;
  const error = $('sign-in-error');
  error.textContent = message ?? '';
  error.hidden = !message;
  $('token').value = '';
  $('token').focus();
}

export function signOut(message) {
  state.controller?.abort();
  state.load += 1;
  state.token = null;
  state.programs = [];
  sessionStorage.removeItem(TOKEN_KEY);
  showSignIn(message);
}

/** Signs out here and ends the session on the server too. */
export function signOutEverywhere() {
  // The server revokes the session, so a copy of the token (another tab, a screenshot) stops working too.
  const token = state.token;
  signOut();
  if (token) {
    void fetch('/api/tracking/session', { method: 'DELETE', headers: { authorization: `Bearer ${token}` }, cache: 'no-store', credentials: 'omit', keepalive: true }).catch(() => {});
  }
}

/**
 * Tries the token by listing its programs (into state.programs). True when it was accepted; else
 * the sign-in form is shown again with the reason.
 */
export async function signIn(token) {
  state.token = token;
  app.dataset.state = 'signing-in';
  $('sign-in-button').disabled = true;
  try {
    const { data } = await api('/api/tracking/programs');
    sessionStorage.setItem(TOKEN_KEY, token);
    state.programs = data;
    return true;
  } catch (error) {
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    showSignIn(
      error instanceof ApiFailure && error.status === 401
        ? 'That token was not accepted. It may have expired: ask for a new one.'
        : `Could not sign in: ${error.message}`,
    );
    return false;
  } finally {
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
