import type { FastifyBaseLogger, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { Redis } from 'ioredis';
import { countMinSketch, type CountMinSketch } from './count-min.js';
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
   * The most keys counted exactly in one window. Spoofed addresses or random keys could otherwise
   * grow the map without end; past the bound a new key is counted in a count-min sketch of fixed
   * size, which can only over-count: a flood of new keys neither grows memory, nor lets a caller
   * through uncounted, nor resets a count (the keys already counted keep counting exactly).
   */
  maxKeys?: number;
  /** Counters in each of the sketch's four rows (2^17: 2 MiB, allocated when first needed). */
  sketchWidth?: number;
  /** Called once per window when the bound is first reached. */
  onFull?: (maxKeys: number) => void;
}

export const MEMORY_STORE_MAX_KEYS = 100_000;
const SKETCH_WIDTH = 2 ** 17;

export function memoryRateLimitStore({ maxKeys = MEMORY_STORE_MAX_KEYS, sketchWidth = SKETCH_WIDTH, onFull }: MemoryStoreOptions = {}): RateLimitStore {
  let currentWindow = -1;
  let counts = new Map<string, number>();
  let overflow: CountMinSketch | undefined;
  let full = false;
  return {
    hit(key, windowStart) {
      // Only the current window matters: dropping the old counts bounds memory to one window's keys.
      if (windowStart !== currentWindow) {
        currentWindow = windowStart;
        counts = new Map();
        overflow?.clear();
        full = false;
      }
      const count = (counts.get(key) ?? 0) + 1;
      if (count > 1 || counts.size < maxKeys) {
        counts.set(key, count);
        return count;
      }
      if (!full) onFull?.(maxKeys);
      full = true;
      return (overflow ??= countMinSketch(sketchWidth)).add(key);
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

export interface RateBudget {
  /** Routes that share a budget share a bucket (sale and refund). */
  bucket: string;
  limit: number;
  windowMs?: number;
}

export interface RateRule extends RateBudget {
  /** Who is counted: the client address, never a credential nobody checked (see credential-rate-limit.ts). */
  keyOf(request: FastifyRequest): string;
}

/**
 * Counts one request for a key of the budget: sets the X-RateLimit headers and calls done with the
 * 429 when the key is over the limit. Callback style: with the memory store no promise is made.
 */
export type RateCounter = (reply: FastifyReply, key: string, done: (err?: ApiError) => void) => void;

export function rateCounter(store: RateLimitStore, budget: RateBudget, log: FastifyBaseLogger, now: () => number = Date.now): RateCounter {
  const windowMs = budget.windowMs ?? 60_000;
  const limitHeader = String(budget.limit);
  const prefix = `${budget.bucket}:`;
  // The reset header is the same for every request of a window: built once per window.
  let resetWindow = -1;
  let resetHeader = '';

  function verdict(reply: FastifyReply, count: number, at: number, resetAt: number): ApiError | undefined {
    reply.header('X-RateLimit-Limit', limitHeader);
    reply.header('X-RateLimit-Remaining', String(Math.max(0, budget.limit - count)));
    reply.header('X-RateLimit-Reset', resetHeader);
    if (count <= budget.limit) return undefined;
    return tooManyRequests(M.rateLimited, at, resetAt);
  }

  // A limiter outage must not stop tracking: fail open, loudly.
  const failOpen = (err: unknown) => log.error({ err, bucket: budget.bucket }, 'rate limit store unavailable; request allowed');

  return function count(reply, key, done) {
    const at = now();
    const windowStart = Math.floor(at / windowMs) * windowMs;
    const resetAt = windowStart + windowMs;
    if (windowStart !== resetWindow) {
      resetWindow = windowStart;
      resetHeader = String(Math.ceil(resetAt / 1000));
    }
    let counted: number | Promise<number>;
    try {
      counted = store.hit(prefix + key, windowStart, windowMs);
    } catch (err) {
      failOpen(err);
      return done();
    }
    if (typeof counted === 'number') return done(verdict(reply, counted, at, resetAt));
    counted.then(
      (n) => done(verdict(reply, n, at, resetAt)),
      (err: unknown) => {
        failOpen(err);
        done();
      },
    );
  };
}

/** An onRequest hook counting every request of the route under rule.keyOf. */
export function rateLimitHook(store: RateLimitStore, rule: RateRule, log: FastifyBaseLogger, now: () => number = Date.now) {
  const count = rateCounter(store, rule, log, now);
  return function rateLimit(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    count(reply, rule.keyOf(request), done);
  };
}
