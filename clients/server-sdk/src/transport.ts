import type { RetryNotice, RetryOptions, RotationWarning, ServiceError, SvcResult } from './types.js';

/**
 * One call to the service: attempts, waits between them, and the result it resolves to. Nothing
 * in here throws: every failure becomes a result.
 */

export type CallName = RetryNotice['call'];

export interface Transport {
  apiKey: string;
  baseUrl: string;
  fetch: typeof fetch;
  timeoutMs: number;
  retry: Required<RetryOptions>;
  onRetry: ((notice: RetryNotice) => void) | undefined;
}

export const DEFAULT_RETRY: Required<RetryOptions> = { budgetMs: 30_000, maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 8_000 };
export const DEFAULT_TIMEOUT_MS = 10_000;

/** The one 5xx whose repeat is not safe: the sale is stored and its transaction_id consumed. */
const COMMISSION_FAILED = 'Failed to create commission';

interface Attempt<Data> {
  result: SvcResult<Data>;
  /** What the service asked to wait, from Retry-After or error.retry_after_seconds. */
  retryAfterMs: number | undefined;
}

/**
 * Whether a repeat of this call after this answer is safe and may help. A 429 is refused before
 * the endpoint runs, so nothing was recorded. After a 5xx or a lost answer the first attempt may
 * have been recorded; the repeat is still safe: a sale's invoiceId is its idempotency key (the
 * repeat answers 409), a refund answers the first refund again, and a repeated lead is refused
 * with 400 `Customer status cannot be updated to lead` and records nothing new.
 */
export function retryable(call: CallName, status: number, error: ServiceError): boolean {
  if (status === 0) return error.code === 'network_error' || error.code === 'timeout';
  if (status === 429) return true;
  if (status < 500 || status === 501) return false;
  return !(call === 'trackSale' && error.message === COMMISSION_FAILED);
}

/** Retry-After in seconds or as an HTTP-date; else the body's retry_after_seconds. */
function askedWaitMs(header: string | null, error: ServiceError | null, now: number): number | undefined {
  if (header !== null && header.trim() !== '') {
    const seconds = Number(header);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const at = Date.parse(header);
    if (!Number.isNaN(at)) return Math.max(0, at - now);
  }
  const body = error?.retry_after_seconds;
  return typeof body === 'number' && Number.isFinite(body) && body >= 0 ? body * 1000 : undefined;
}

/**
 * The wait before attempt n+1. A wait the service asked for is kept, plus up to 10% (at most a
 * second) so clients limited in the same window do not all return at its first instant. Else
 * exponential backoff with equal jitter: between half and all of base * 2^(n-1), capped.
 */
export function delayMs(attempt: number, retry: Required<RetryOptions>, asked: number | undefined, random = Math.random): number {
  if (asked !== undefined) return Math.ceil(asked + random() * Math.min(1000, asked * 0.1));
  const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
  return Math.ceil(ceiling / 2 + (random() * ceiling) / 2);
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function serviceError(body: unknown, status: number, statusText: string): ServiceError {
  const error = isObject(body) ? body.error : undefined;
  if (isObject(error) && typeof error.message === 'string') {
    const out: ServiceError = { message: error.message };
    if (typeof error.code === 'string') out.code = error.code;
    if (typeof error.retry_after_seconds === 'number') out.retry_after_seconds = error.retry_after_seconds;
    if (isObject(error.details)) out.details = error.details;
    return out;
  }
  const shown = body === undefined ? 'a body that is not JSON' : 'no error object';
  return { message: `HTTP ${status}${statusText ? ` ${statusText}` : ''} with ${shown}` };
}

function warningsOf(body: unknown): RotationWarning[] {
  return isObject(body) && Array.isArray(body.warnings) ? (body.warnings as RotationWarning[]) : [];
}

function noAnswer<Data>(attempts: number, code: string, message: string): SvcResult<Data> {
  return { ok: false, status: 0, data: null, error: { code, message }, requestId: null, warnings: [], attempts };
}

/** A call refused by the SDK itself: no request was sent. */
export const refusedBeforeSending = <Data>(code: string, message: string) => noAnswer<Data>(0, code, message);

async function attemptOnce<Data>(t: Transport, path: string, body: string, attempt: number, timeoutMs: number): Promise<Attempt<Data>> {
  const url = t.baseUrl + path;
  let response: Response;
  let text: string;
  try {
    response = await t.fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', accept: 'application/json' },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await response.text();
  } catch (err) {
    const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    if (e?.name === 'TimeoutError' || e?.name === 'AbortError') {
      return { result: noAnswer(attempt, 'timeout', `No answer from ${url} within ${timeoutMs} ms`), retryAfterMs: undefined };
    }
    const why = e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
    return { result: noAnswer(attempt, 'network_error', `Could not reach ${url}: ${why}`), retryAfterMs: undefined };
  }
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const base = { status: response.status, requestId: response.headers.get('x-request-id'), warnings: warningsOf(parsed), attempts: attempt };
  if (response.ok && isObject(parsed) && isObject(parsed.data)) {
    return { result: { ...base, ok: true, data: parsed.data as Data, error: null }, retryAfterMs: undefined };
  }
  const error = response.ok
    ? { code: 'invalid_response', message: `HTTP ${response.status} without a data object` }
    : serviceError(parsed, response.status, response.statusText);
  return {
    result: { ...base, ok: false, data: null, error },
    retryAfterMs: askedWaitMs(response.headers.get('retry-after'), error, Date.now()),
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Sends one call, repeating it while that is safe and useful and the budget allows. */
export async function send<Data, Body>(t: Transport, call: CallName, path: string, body: Body): Promise<SvcResult<Data>> {
  let json: string;
  try {
    json = JSON.stringify(body);
  } catch (err) {
    return refusedBeforeSending('invalid_request', `The options cannot be sent as JSON: ${(err as Error)?.message ?? String(err)}`);
  }
  const deadline = Date.now() + t.retry.budgetMs;
  for (let attempt = 1; ; attempt += 1) {
    const left = deadline - Date.now();
    const { result, retryAfterMs } = await attemptOnce<Data>(t, path, json, attempt, Math.max(1, Math.min(t.timeoutMs, left)));
    if (result.ok || attempt >= t.retry.maxAttempts || !retryable(call, result.status, result.error)) return result;
    const wait = delayMs(attempt, t.retry, retryAfterMs);
    // A wait that would end past the budget is not started: the answer that asked for it stands.
    if (Date.now() + wait >= deadline) return result;
    try {
      t.onRetry?.({ call, attempt, status: result.status, error: result.error, delayMs: wait });
    } catch {
      // A logging hook that throws must not turn into a thrown call.
    }
    await sleep(wait);
  }
}
