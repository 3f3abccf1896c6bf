/* global fetch, dispatchEvent, CustomEvent */
// The dashboard API, with the session token as a Bearer header (never a cookie, never a URL).
import { state } from './state.js';

export class ApiFailure extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * One call. A 401 means the session ended (expired, revoked, suspended): the page hears of it
 * through the `session-ended` event and goes back to the sign-in page.
 */
export async function api(path, signal, init = {}) {
  const response = await fetch(path, {
    method: init.method ?? 'GET',
    headers: {
      ...(state.token && !init.anonymous ? { authorization: `Bearer ${state.token}` } : {}),
      accept: 'application/json',
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    cache: 'no-store',
    credentials: 'omit',
    signal,
  });
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: the status says enough
  }
  if (!response.ok) {
    const message = body?.error?.message ?? body?.message ?? `The server answered ${response.status}`;
    if (response.status === 401 && state.token && !init.anonymous) dispatchEvent(new CustomEvent('session-ended'));
    throw new ApiFailure(response.status, message);
  }
  return body;
}
