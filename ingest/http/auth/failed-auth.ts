import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { ApiError } from '../errors.js';
import { M } from '../messages.js';
import { tooManyRequests, type RateLimitStore } from '../rate-limit.js';

/** Failed authentications a client address may make in a minute; past them, 429 (ours). */
export const AUTH_FAILURES_PER_MINUTE = 30;
const WINDOW_MS = 60_000;
/**
 * Addresses remembered as over the limit in one process and window. Past the bound an address over
 * its limit is still refused, by the store's count, only after its lookup.
 */
const MAX_BLOCKED = 100_000;

/**
 * Key guessing is counted per client address (request.clientAddress: an IPv6 client per /64 by
 * default), whatever key is guessed, in the rate-limit store
 * (memory or Redis, so every ingest process shares the count). The failure past the limit is
 * answered 429, and this process then answers that address 429 before any lookup until the
 * window ends: guessing costs neither a database query nor a fresh budget per key.
 */
export interface FailedAuthThrottle {
  /** Before a lookup, at once: the 429 for an address already over its failures. */
  check(request: FastifyRequest): ApiError | undefined;
  /** After a lookup found nothing: counts it; the 429 when this failure is one too many. */
  failed(request: FastifyRequest): Promise<ApiError | undefined>;
}

export interface FailedAuthOptions {
  store: RateLimitStore;
  log: FastifyBaseLogger;
  limit?: number;
  clock?: () => number;
}

export function createFailedAuthThrottle({ store, log, limit = AUTH_FAILURES_PER_MINUTE, clock = Date.now }: FailedAuthOptions): FailedAuthThrottle {
  let blockedWindow = -1;
  let blocked = new Set<string>();
  const window = () => {
    const at = clock();
    const start = Math.floor(at / WINDOW_MS) * WINDOW_MS;
    if (start !== blockedWindow) {
      blockedWindow = start;
      blocked = new Set();
    }
    return { at, start, resetAt: start + WINDOW_MS };
  };
  const refuse = (at: number, resetAt: number) =>
    tooManyRequests(M.authThrottled, at, resetAt, { limit, remaining: 0, reset: Math.ceil(resetAt / 1000) });
  return {
    check(request) {
      const { at, resetAt } = window();
      return blocked.has(request.clientAddress) ? refuse(at, resetAt) : undefined;
    },
    async failed(request) {
      const { at, start, resetAt } = window();
      let count: number;
      try {
        count = await store.hit(`auth_failures:${request.clientAddress}`, start, WINDOW_MS);
      } catch (err) {
        // A store outage must not lock callers out: fail open, loudly (as the rate limits do).
        log.error({ err, bucket: 'auth_failures' }, 'rate limit store unavailable; authentication not throttled');
        return undefined;
      }
      if (count <= limit) return undefined;
      if (blocked.size < MAX_BLOCKED) blocked.add(request.clientAddress);
      return refuse(at, resetAt);
    },
  };
}
