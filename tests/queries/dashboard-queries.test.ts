import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  averageOrderValue,
  buildPerformance,
  conversionRate,
  firstActivityDay,
  roundHalfUp,
  trend,
  type DailyFigure,
} from '../../queries/metrics.js';
import {
  allTimeRange,
  dayEnd,
  dayOf,
  dayStart,
  dayString,
  daysOf,
  parseDateParam,
  planRange,
  previousRange,
  rangeProblem,
} from '../../queries/periods.js';

const day = (s: string) => parseDateParam(s)!;

describe('days and ranges', () => {
  it('a UTC day is the same whatever the time of day, and prints back as its date', () => {
    const d = dayOf(Date.parse('2025-03-09T00:00:00Z'));
    expect(dayOf(Date.parse('2025-03-09T23:59:59.999Z'))).toBe(d);
    expect(dayOf(Date.parse('2025-03-10T00:00:00Z'))).toBe(d + 1);
    expect(dayString(d)).toBe('2025-03-09');
    expect(dayStart(d)).toBe('2025-03-09T00:00:00.000Z');
    expect(dayEnd(d)).toBe('2025-03-09T23:59:59.999Z');
  });

  it('reads dates and date-times as UTC days, and refuses what is not a real date in 2000-2099', () => {
    expect(dayString(day('2024-02-29'))).toBe('2024-02-29');
    expect(dayString(day('2024-05-03T23:30:00-02:00'))).toBe('2024-05-04');
    expect(dayString(day('2024-05-03T00:30:00+01:00'))).toBe('2024-05-02');
    expect(dayString(day('2024-05-03T12:00'))).toBe('2024-05-03'); // no offset: UTC
    expect(dayString(day('2024-05-03T12:00:00.123456789Z'))).toBe('2024-05-03');
    for (const bad of ['2023-02-29', '2024-13-01', '2024-1-01', '20240101', 'yesterday', '', '1999-12-31', '2100-01-01',
      '2024-05-03T24:00:00Z', '2024-05-03T12:00:00+25:00', '2024-05-03 12:00:00Z', ' 2024-05-03', '2024-05-03T12:60Z']) {
      expect(parseDateParam(bad), bad).toBeUndefined();
    }
  });

  it('the previous window has the same length and ends the day before', () => {
    const r = { first: day('2025-01-10'), last: day('2025-01-16') };
    expect(previousRange(r)).toEqual({ first: day('2025-01-03'), last: day('2025-01-09') });
    fc.assert(
      fc.property(fc.integer({ min: 11_000, max: 40_000 }), fc.integer({ min: 0, max: 4000 }), (first, span) => {
        const range = { first, last: first + span };
        const previous = previousRange(range);
        expect(daysOf(previous)).toHaveLength(daysOf(range).length);
        expect(previous.last + 1).toBe(range.first);
      }),
    );
  });

  it('presets are the last N days with today; the default is 7d; dates win over the period', () => {
    const today = day('2025-06-30');
    const seven = planRange({}, today);
    expect(seven).toMatchObject({ period: '7d', kind: 'fixed', current: { first: day('2025-06-24'), last: today } });
    expect(planRange({ period: '30d' }, today)).toMatchObject({
      period: '30d',
      current: { first: day('2025-06-01'), last: today },
      previous: { first: day('2025-05-02'), last: day('2025-05-31') },
      fetch: { first: day('2025-05-02'), last: today },
    });
    expect(planRange({ period: '90d' }, today)).toMatchObject({ current: { first: today - 89, last: today } });
    expect(planRange({ period: '90d', dateFrom: '2025-01-01', dateTo: '2025-01-31' }, today)).toMatchObject({
      period: 'custom',
      current: { first: day('2025-01-01'), last: day('2025-01-31') },
      previous: { first: day('2024-12-01'), last: day('2024-12-31') },
    });
    expect(planRange({ period: 'all' }, today)).toEqual({ period: 'all', kind: 'all', today, fetch: { first: 0, last: today } });
  });

  it('all starts at the program creation, or at earlier activity (back-dated sales), never after today', () => {
    const today = day('2025-06-30');
    expect(allTimeRange(day('2025-06-01'), undefined, today)).toEqual({ first: day('2025-06-01'), last: today });
    expect(allTimeRange(day('2025-06-01'), day('2025-05-20'), today)).toEqual({ first: day('2025-05-20'), last: today });
    expect(allTimeRange(day('2025-06-01'), day('2025-06-10'), today)).toEqual({ first: day('2025-06-01'), last: today });
    expect(allTimeRange(day('2025-07-02'), undefined, today)).toEqual({ first: today, last: today });
  });

  it('names what is wrong with a range', () => {
    expect(rangeProblem({})).toBeUndefined();
    expect(rangeProblem({ dateFrom: '2025-01-01', dateTo: '2025-01-01' })).toBeUndefined();
    expect(rangeProblem({ dateFrom: '2025-01-01' })).toBe('together');
    expect(rangeProblem({ dateTo: '2025-01-01' })).toBe('together');
    expect(rangeProblem({ dateFrom: 'x', dateTo: '2025-01-01' })).toBe('dateFrom');
    expect(rangeProblem({ dateFrom: '2025-01-01', dateTo: '2025-02-30' })).toBe('dateTo');
    expect(rangeProblem({ dateFrom: '2025-01-02', dateTo: '2025-01-01' })).toBe('order');
    expect(rangeProblem({ dateFrom: '2000-01-01', dateTo: '2010-01-08' })).toBe('span');
    expect(rangeProblem({ dateFrom: '2000-01-01', dateTo: '2010-01-07' })).toBeUndefined();
  });
});

describe('rounding and trends', () => {
  it('rounds half up exactly, where floating point would not', () => {
    expect(roundHalfUp(5, 2)).toBe(3);
    expect(roundHalfUp(4, 3)).toBe(1);
    expect(roundHalfUp(1005, 1000)).toBe(1);
    expect(roundHalfUp(0, 7)).toBe(0);
    // 1.005 * 100 is 100.49999999999999 in floating point; exact arithmetic sees the tie and goes up.
    expect(roundHalfUp(1005 * 100, 1000)).toBe(101);
    expect(Math.round(1.005 * 100)).toBe(100);
    expect(() => roundHalfUp(1, 0)).toThrow();
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e9 }), fc.integer({ min: 1, max: 1e6 }), (n, d) => {
        const r = roundHalfUp(n, d);
        // r is the nearest integer, ties up: |n/d - r| <= 1/2, and exactly 1/2 only below.
        expect(2 * Math.abs(n - r * d)).toBeLessThanOrEqual(d);
        if (2 * (n - r * d) === d) throw new Error('a tie rounded down');
      }),
    );
  });

  it('conversion rate and average order value: 2 decimals, 0 without a denominator', () => {
    expect(conversionRate(1, 3)).toBe(33.33);
    expect(conversionRate(2, 3)).toBe(66.67);
    expect(conversionRate(5, 0)).toBe(0);
    expect(conversionRate(4, 2)).toBe(200);
    expect(averageOrderValue(1000, 3)).toBe(3.33);
    expect(averageOrderValue(1001, 2)).toBe(5.01); // 500.5 cents rounds up
    expect(averageOrderValue(999, 0)).toBe(0);
  });

  it('follows the spec rules for previous 0, both 0 and a change that rounds to 0.0', () => {
    expect(trend(5, 0)).toEqual({ trend: null, trendDirection: 'up', previous: 0 });
    expect(trend(0, 0)).toEqual({ trend: 0, trendDirection: 'stable', previous: 0 });
    expect(trend(0, 4)).toEqual({ trend: 100, trendDirection: 'down', previous: 4 });
    expect(trend(15, 10)).toEqual({ trend: 50, trendDirection: 'up', previous: 10 });
    expect(trend(2, 3)).toEqual({ trend: 33.3, trendDirection: 'down', previous: 3 });
    expect(trend(10_001, 10_000)).toEqual({ trend: 0, trendDirection: 'stable', previous: 10_000 });
    expect(trend(10_005, 10_000)).toEqual({ trend: 0.1, trendDirection: 'up', previous: 10_000 }); // 0.05 rounds up
    expect(trend(12_345, 10_000, (c) => c / 100)).toEqual({ trend: 23.5, trendDirection: 'up', previous: 100 });
    fc.assert(
      fc.property(fc.nat(1e7), fc.nat(1e7), (current, previous) => {
        const t = trend(current, previous);
        expect(t.previous).toBe(previous);
        if (t.trend === null) expect(previous === 0 && current > 0).toBe(true);
        else {
          expect(t.trend).toBeGreaterThanOrEqual(0);
          expect(Math.round(t.trend * 10) / 10).toBe(t.trend);
          expect(t.trendDirection).toBe(t.trend === 0 ? 'stable' : current > previous ? 'up' : 'down');
        }
      }),
    );
  });
});

describe('the response from daily figures', () => {
  const f = (metric: DailyFigure['metric'], date: string, n: number, cents = 0, currency = ''): DailyFigure => ({
    metric,
    day: day(date),
    currency,
    n,
    cents,
  });
  const current = { first: day('2025-03-08'), last: day('2025-03-10') };

  it('one row per day with zeros, USD money in dollars, other currencies beside, previous window in the trends', () => {
    const figures = [
      f('clicks', '2025-03-08', 3),
      f('clicks', '2025-03-10', 1),
      f('leads', '2025-03-10', 2),
      f('conversions', '2025-03-10', 2),
      f('sales', '2025-03-10', 2, 3_001, 'USD'),
      f('sales', '2025-03-10', 1, 5_000, 'EUR'),
      f('commissions', '2025-03-10', 2, 300, 'USD'),
      f('commissions', '2025-03-10', 1, 500, 'EUR'),
      f('partners', '2025-03-08', 1),
      // the previous window: 2025-03-05 to 2025-03-07
      f('clicks', '2025-03-05', 2),
      f('sales', '2025-03-07', 1, 2_000, 'USD'),
      f('commissions', '2025-03-07', 1, 200, 'USD'),
      // outside both: ignored
      f('clicks', '2025-03-04', 50),
      f('clicks', '2025-03-11', 50),
    ];
    const body = buildPerformance(figures, current, '30d');
    expect(body.data).toEqual([
      { date: '2025-03-08', period: '2025-03-08', clicks: 3, leads: 0, conversions: 0, revenue: 0, partners: 1, sales: 0, commission: 0 },
      { date: '2025-03-09', period: '2025-03-09', clicks: 0, leads: 0, conversions: 0, revenue: 0, partners: 0, sales: 0, commission: 0 },
      { date: '2025-03-10', period: '2025-03-10', clicks: 1, leads: 2, conversions: 2, revenue: 30.01, partners: 0, sales: 0, commission: 3 },
    ]);
    expect(body.metrics).toEqual({
      totalClicks: 4,
      totalLeads: 2,
      totalConversions: 2,
      totalRevenue: 30.01,
      conversionRate: 50,
      averageOrderValue: 15.01, // 1500.5 cents, half up
      totalPartners: 1,
      totalSales: 3,
      totalPartnersCommission: 3,
      clicksTrend: { trend: 100, trendDirection: 'up', previous: 2 },
      leadsTrend: { trend: null, trendDirection: 'up', previous: 0 },
      conversionsTrend: { trend: null, trendDirection: 'up', previous: 0 },
      revenueTrend: { trend: 50.1, trendDirection: 'up', previous: 20 },
      partnersTrend: { trend: null, trendDirection: 'up', previous: 0 },
      salesTrend: { trend: 200, trendDirection: 'up', previous: 1 },
      commissionTrend: { trend: 50, trendDirection: 'up', previous: 2 },
    });
    expect(body.meta).toEqual({
      period: '30d',
      dateFrom: '2025-03-08T00:00:00.000Z',
      dateTo: '2025-03-10T23:59:59.999Z',
      previousPeriod: { dateFrom: '2025-03-05T00:00:00.000Z', dateTo: '2025-03-07T23:59:59.999Z' },
      currency: 'USD',
      otherCurrencies: [{ currency: 'EUR', revenue: 50, commission: 5 }],
    });
  });

  it('the totals are the sums of the rows, whatever the figures', () => {
    const metric = fc.constantFrom<DailyFigure['metric']>('clicks', 'leads', 'conversions', 'sales', 'partners', 'commissions');
    const figure = fc.record({
      metric,
      day: fc.integer({ min: current.first - 5, max: current.last + 2 }),
      currency: fc.constantFrom('USD', 'EUR'),
      n: fc.integer({ min: 1, max: 50 }),
      cents: fc.integer({ min: 0, max: 1e7 }),
    });
    fc.assert(
      fc.property(fc.array(figure, { maxLength: 40 }), (figures) => {
        const body = buildPerformance(figures, current, '7d');
        const sum = (k: 'clicks' | 'leads' | 'conversions' | 'partners') => body.data.reduce((s, r) => s + r[k], 0);
        const cents = (k: 'revenue' | 'commission') => body.data.reduce((s, r) => s + Math.round(r[k] * 100), 0);
        expect(body.data).toHaveLength(3);
        expect(body.metrics.totalClicks).toBe(sum('clicks'));
        expect(body.metrics.totalLeads).toBe(sum('leads'));
        expect(body.metrics.totalConversions).toBe(sum('conversions'));
        expect(body.metrics.totalPartners).toBe(sum('partners'));
        expect(Math.round(body.metrics.totalRevenue * 100)).toBe(cents('revenue'));
        expect(Math.round(body.metrics.totalPartnersCommission * 100)).toBe(cents('commission'));
        expect(body.data.every((r) => r.sales === 0)).toBe(true);
      }),
    );
  });

  it('the first activity is the earliest figure', () => {
    expect(firstActivityDay([])).toBeUndefined();
    expect(firstActivityDay([f('clicks', '2025-03-08', 1), f('sales', '2025-02-01', 1, 5, 'USD')])).toBe(day('2025-02-01'));
  });
});
