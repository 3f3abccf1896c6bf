import { describe, expect, it } from 'vitest';
import { RETRY_WINDOW_MS, nextAttemptAt } from '../../../processors/webhooks/schedule.js';

/** The whole schedule of one delivery that never succeeds, with the jitter drawn at `draw`. */
function schedule(draw: number): number[] {
  const start = new Date('2026-01-01T00:00:00Z');
  const times = [0];
  let now = start;
  for (let failed = 1; ; failed += 1) {
    const next = nextAttemptAt(failed, start, now, () => draw);
    if (!next) return times;
    times.push(next.getTime() - start.getTime());
    now = next;
  }
}

describe('retry schedule', () => {
  it('backs off exponentially from 5 seconds to 12 hours and stops within 3 days', () => {
    for (const draw of [0, 0.5, 0.999]) {
      const times = schedule(draw);
      // 13 attempts; 12 when the jitter drawn late pushes the last one past the window.
      expect(times.length).toBe(draw > 0.9 ? 12 : 13);
      const gaps = times.slice(1).map((t, i) => t - times[i]!);
      for (let i = 1; i < gaps.length; i += 1) expect(gaps[i]).toBeGreaterThanOrEqual(gaps[i - 1]! * 0.8);
      expect(Math.max(...gaps)).toBeLessThanOrEqual(12 * 3_600_000 * 1.1);
      expect(times.at(-1)!).toBeLessThanOrEqual(RETRY_WINDOW_MS);
    }
    // At the middle of the jitter: 5 s, 1 min, 5 min, 30 min, 1 h, 3 h, 6 h, then 12 h, last about 70.6 h after the first.
    const middle = schedule(0.5);
    expect(middle.slice(1, 4)).toEqual([5_000, 65_000, 365_000]);
    expect(middle.at(-1)! / 3_600_000).toBeCloseTo(70.6, 1);
  });

  it('spreads retries by ±10 %', () => {
    const start = new Date(0);
    expect(nextAttemptAt(1, start, start, () => 0)!.getTime()).toBe(4_500);
    expect(nextAttemptAt(1, start, start, () => 1)!.getTime()).toBe(5_500);
  });

  it('gives up when the next attempt would fall past the window (a redelivery starts a new one)', () => {
    const start = new Date(0);
    const late = new Date(RETRY_WINDOW_MS - 1_000);
    expect(nextAttemptAt(3, start, late, () => 0.5)).toBeUndefined();
    expect(nextAttemptAt(3, late, late, () => 0.5)).toBeDefined();
  });
});
