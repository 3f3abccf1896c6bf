import type { FastifyBaseLogger, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { Redis } from 'ioredis';
import { ApiError } from './errors.js';
import { M } from './messages.js';

/**
 * Fixed one-minute windows aligned to the clock, so X-RateLimit-Reset is the same unix second for
 * every caller and every ingest process. (@fastify/rate-limit reports the reset as seconds *until*
 * the reset; the spec wants unix seconds, and sale and refund share one budget.)
 */
export interface RateLimitStore {
  /**
   * Counts one hit for key in the window starting at windowStart and returns the window's count:
   * at once from memory, as a promise from Redis.
   */
  hit(key: string, windowStart: number, windowMs: number): number | Promise<number>;
  close(): Promise<void>;
}

export interface MemoryStoreOptions {
  /**
   * The most keys counted in one window. Spoofed addresses or random keys could otherwise grow the
   * map without end; past the bound a new key is let through uncounted (the keys already counted
   * keep their counts), as a Redis outage is: tracking availability over limit precision.
   */
  maxKeys?: number;
  /** Called once per window when the bound is first reached. */
  onFull?: (maxKeys: number) => void;
}

export const MEMORY_STORE_MAX_KEYS = 100_000;

export function memoryRateLimitStore({ maxKeys = MEMORY_STORE_MAX_KEYS, onFull }: MemoryStoreOptions = {}): RateLimitStore {
  let currentWindow = -1;
  let counts = new Map<string, number>();
  let full = false;
  return {
    hit(key, windowStart) {
      // Only the current window matters: dropping the old map bounds memory to one window's keys.
      if (windowStart !== currentWindow) {
        currentWindow = windowStart;
        counts = new Map();
        full = false;
      }
      const count = (counts.get(key) ?? 0) + 1;
      if (count === 1 && counts.size >= maxKeys) {
        if (!full) onFull?.(maxKeys);
        full = true;
        return 1;
      }
      counts.set(key, count);
      return count;
    },
    async close() {},
  };
}

const INCREMENT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`;

/** Connected before it is returned: a configured Redis that cannot be reached fails the start. */
export async function redisRateLimitStore(url: string): Promise<RateLimitStore> {
  // Without an offline queue a lost connection fails each hit at once (and the hook fails open)
  // instead of holding requests until Redis returns.
  const redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true });
  redis.on('error', () => {}); // reported per request by the hook
  await redis.connect();
  return {
    async hit(key, windowStart, windowMs) {
      const count = await redis.eval(INCREMENT_SCRIPT, 1, `rl:${windowStart}:${key}`, String(windowMs + 5_000));
      return Number(count);
    },
    async close() {
      redis.disconnect();
    },
  };
}

/**
 * The spec's 429: typed envelope, Retry-After in seconds until the window's end; `budget` sets the
 * X-RateLimit headers of the budget that ran out when the route's own are not the ones.
 */
export function tooManyRequests(message: string, at: number, resetAt: number, budget?: { limit: number; remaining: number; reset: number }): ApiError {
  const retryAfter = Math.max(1, Math.ceil((resetAt - at) / 1000));
  const limitHeaders: Record<string, string> = budget
    ? { 'X-RateLimit-Limit': String(budget.limit), 'X-RateLimit-Remaining': String(budget.remaining), 'X-RateLimit-Reset': String(budget.reset) }
    : {};
  return new ApiError(429, message, {
    envelope: 'typed',
    code: 'rate_limited',
    extra: { status: 429, retry_after_seconds: retryAfter },
    headers: { ...limitHeaders, 'Retry-After': String(retryAfter) },
  });
}

export interface RateRule {
  /** Routes that share a budget share a bucket (sale and refund). */
  bucket: string;
  limit: number;
  windowMs?: number;
  /** Who is counted: client IP, or the presented API key (hashed, never kept in clear). */
  keyOf(request: FastifyRequest): string;
}

export function rateLimitHook(store: RateLimitStore, rule: RateRule, log: FastifyBaseLogger, now: () => number = Date.now) {
  const windowMs = rule.windowMs ?? 60_000;
  const limitHeader = String(rule.limit);
  const prefix = `${rule.bucket}:`;
  // The reset header is the same for every request of a window: built once per window.
  let resetWindow = -1;
  let resetHeader = '';

  function verdict(reply: FastifyReply, count: number, at: number, resetAt: number): ApiError | undefined {
    reply.header('X-RateLimit-Limit', limitHeader);
    reply.header('X-RateLimit-Remaining', String(Math.max(0, rule.limit - count)));
    reply.header('X-RateLimit-Reset', resetHeader);
    if (count <= rule.limit) return undefined;
    return tooManyRequests(M.rateLimited, at, resetAt);
  }

  // A limiter outage must not stop tracking: fail open, loudly.
  const failOpen = (err: unknown) => log.error({ err, bucket: rule.bucket }, 'rate limit store unavailable; request allowed');

  // Callback style: with the memory store a request is counted without a promise.
  return function rateLimit(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    const at = now();
    const windowStart = Math.floor(at / windowMs) * windowMs;
    const resetAt = windowStart + windowMs;
    if (windowStart !== resetWindow) {
      resetWindow = windowStart;
      resetHeader = String(Math.ceil(resetAt / 1000));
    }
    let counted: number | Promise<number>;
    try {
      counted = store.hit(prefix + rule.keyOf(request), windowStart, windowMs);
    } catch (err) {
      failOpen(err);
      return done();
    }
    if (typeof counted === 'number') return done(verdict(reply, counted, at, resetAt));
    counted.then(
      (count) => done(verdict(reply, count, at, resetAt)),
      (err: unknown) => {
        failOpen(err);
        done();
      },
    );
  };
}
