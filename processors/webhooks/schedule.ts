/**
 * When a failed delivery is tried again (issue 32, point 3; decisions/outgoing-webhooks.md, "Retry
 * schedule"). Exponential from 5 seconds, capped at 12 hours, each delay drawn within ±10 % so the
 * deliveries of a receiver that came back do not all return at once; no attempt later than 3 days
 * after the window began (the first attempt, or a redelivery): 13 attempts, the last about 70.6
 * hours after the first.
 */

/** Seconds to wait after the n-th failed attempt of a window (index n - 1). */
export const RETRY_DELAYS_SECONDS = [5, 60, 300, 1_800, 3_600, 3 * 3_600, 6 * 3_600, 12 * 3_600, 12 * 3_600, 12 * 3_600, 12 * 3_600, 12 * 3_600] as const;

/** How long a delivery is retried, from the start of its window. */
export const RETRY_WINDOW_MS = 3 * 24 * 3_600_000;

/** An endpoint whose attempts have all failed for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 3_600_000;

const JITTER = 0.1;

/**
 * When to try again after a failed attempt, or undefined to give up (the schedule is used up, or
 * the next attempt would fall past the window). `failedInWindow` counts this failure.
 */
export function nextAttemptAt(failedInWindow: number, windowStart: Date, now: Date, random: () => number = Math.random): Date | undefined {
  const base = RETRY_DELAYS_SECONDS[failedInWindow - 1];
  if (base === undefined) return undefined;
  const delayMs = base * 1_000 * (1 - JITTER + 2 * JITTER * random());
  const at = new Date(now.getTime() + delayMs);
  return at.getTime() - windowStart.getTime() > RETRY_WINDOW_MS ? undefined : at;
}
