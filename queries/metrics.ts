/**
 * The performance response from daily figures: per-day rows, totals, rates, trends and rounding.
 * Pure functions. Money is counted in integer minor units and divided by 100 only for display, so
 * every rate and trend is computed exactly and rounded once.
 */
import { dayEnd, dayStart, dayString, daysOf, previousRange, type Day, type DayRange } from './periods.js';

/** The currency the dashboard's dollar figures are in; other currencies are reported beside them, never summed in. */
const DASHBOARD_CURRENCY = 'USD';

export type Metric = 'clicks' | 'leads' | 'conversions' | 'sales' | 'partners' | 'commissions';

/** One figure of one day as the warehouse query returns it: a count and, for money, a sum of minor units. */
export interface DailyFigure {
  metric: Metric;
  day: Day;
  /** '' for the metrics without money. */
  currency: string;
  n: number;
  cents: number;
}

export type TrendDirection = 'up' | 'down' | 'stable';

export interface Trend {
  trend: number | null;
  trendDirection: TrendDirection;
  previous: number;
}

export interface DayRow {
  date: string;
  period: string;
  clicks: number;
  leads: number;
  conversions: number;
  revenue: number;
  partners: number;
  sales: number;
  commission: number;
}

export interface PerformanceMetrics {
  totalClicks: number;
  totalLeads: number;
  totalConversions: number;
  totalRevenue: number;
  conversionRate: number;
  averageOrderValue: number;
  totalPartners: number;
  totalSales: number;
  totalPartnersCommission: number;
  clicksTrend: Trend;
  leadsTrend: Trend;
  conversionsTrend: Trend;
  revenueTrend: Trend;
  partnersTrend: Trend;
  salesTrend: Trend;
  commissionTrend: Trend;
}

export interface OtherCurrency {
  currency: string;
  revenue: number;
  commission: number;
}

export interface PerformanceMeta {
  period: string;
  dateFrom: string;
  dateTo: string;
  previousPeriod: { dateFrom: string; dateTo: string };
  currency: string;
  otherCurrencies: OtherCurrency[];
}

export interface PerformanceBody {
  data: DayRow[];
  metrics: PerformanceMetrics;
  meta: PerformanceMeta;
}

/** numerator / denominator rounded half up, for non-negative integers (exact, no floating point). */
export function roundHalfUp(numerator: number, denominator: number): number {
  if (denominator <= 0) throw new RangeError('denominator must be positive');
  const n = BigInt(numerator);
  const d = BigInt(denominator);
  return Number((2n * n + d) / (2n * d));
}

/** Minor units to dollars: exact to the cent. */
const dollars = (cents: number): number => cents / 100;

/** totalConversions / totalClicks * 100 with 2 decimals; 0 without clicks. */
export const conversionRate = (conversions: number, clicks: number): number =>
  clicks === 0 ? 0 : roundHalfUp(conversions * 10_000, clicks) / 100;

/** totalRevenue / totalConversions with 2 decimals; 0 without conversions. */
export const averageOrderValue = (revenueCents: number, conversions: number): number =>
  conversions === 0 ? 0 : dollars(roundHalfUp(revenueCents, conversions));

/**
 * The change from previous to current as an absolute percentage with 1 decimal. Previous 0:
 * null and up when current is above 0, 0 and stable when both are 0. A change that rounds to 0.0
 * is stable. Values are integers (counts or minor units); `display` turns previous into the unit shown.
 */
export function trend(current: number, previous: number, display: (v: number) => number = (v) => v): Trend {
  if (previous === 0) {
    return current === 0
      ? { trend: 0, trendDirection: 'stable', previous: display(0) }
      : { trend: null, trendDirection: 'up', previous: display(0) };
  }
  const tenths = roundHalfUp(Math.abs(current - previous) * 1000, previous);
  if (tenths === 0) return { trend: 0, trendDirection: 'stable', previous: display(previous) };
  return { trend: tenths / 10, trendDirection: current > previous ? 'up' : 'down', previous: display(previous) };
}

interface Totals {
  clicks: number;
  leads: number;
  conversions: number;
  revenueCents: number;
  sales: number;
  partners: number;
  commissionCents: number;
}

const zero = (): Totals => ({ clicks: 0, leads: 0, conversions: 0, revenueCents: 0, sales: 0, partners: 0, commissionCents: 0 });

function add(t: Totals, f: DailyFigure) {
  const inCurrency = f.currency === DASHBOARD_CURRENCY;
  switch (f.metric) {
    case 'clicks':
      t.clicks += f.n;
      break;
    case 'leads':
      t.leads += f.n;
      break;
    case 'conversions':
      t.conversions += f.n;
      break;
    case 'partners':
      t.partners += f.n;
      break;
    case 'sales':
      // Every paid sale counts as a sale; only the dashboard currency's amounts are revenue.
      t.sales += f.n;
      if (inCurrency) t.revenueCents += f.cents;
      break;
    case 'commissions':
      if (inCurrency) t.commissionCents += f.cents;
      break;
  }
}

const inRange = (day: Day, r: DayRange) => day >= r.first && day <= r.last;

/** The first day with any figure: where `all` starts when it is before the program's creation. */
export const firstActivityDay = (figures: readonly DailyFigure[]): Day | undefined =>
  figures.reduce<Day | undefined>((first, f) => (first === undefined || f.day < first ? f.day : first), undefined);

/** The response for a range and its previous window from the figures of both. */
export function buildPerformance(figures: readonly DailyFigure[], current: DayRange, period: string): PerformanceBody {
  const previous = previousRange(current);
  const byDay = new Map<Day, Totals>(daysOf(current).map((d) => [d, zero()]));
  const now = zero();
  const before = zero();
  const others = new Map<string, { revenueCents: number; commissionCents: number }>();
  for (const f of figures) {
    if (inRange(f.day, current)) {
      add(byDay.get(f.day)!, f);
      add(now, f);
      if ((f.metric === 'sales' || f.metric === 'commissions') && f.currency !== DASHBOARD_CURRENCY) {
        const o = others.get(f.currency) ?? { revenueCents: 0, commissionCents: 0 };
        if (f.metric === 'sales') o.revenueCents += f.cents;
        else o.commissionCents += f.cents;
        others.set(f.currency, o);
      }
    } else if (inRange(f.day, previous)) {
      add(before, f);
    }
  }
  const data: DayRow[] = [...byDay].map(([day, t]) => ({
    date: dayString(day),
    period: dayString(day),
    clicks: t.clicks,
    leads: t.leads,
    conversions: t.conversions,
    revenue: dollars(t.revenueCents),
    partners: t.partners,
    sales: 0,
    commission: dollars(t.commissionCents),
  }));
  const metrics: PerformanceMetrics = {
    totalClicks: now.clicks,
    totalLeads: now.leads,
    totalConversions: now.conversions,
    totalRevenue: dollars(now.revenueCents),
    conversionRate: conversionRate(now.conversions, now.clicks),
    averageOrderValue: averageOrderValue(now.revenueCents, now.conversions),
    totalPartners: now.partners,
    totalSales: now.sales,
    totalPartnersCommission: dollars(now.commissionCents),
    clicksTrend: trend(now.clicks, before.clicks),
    leadsTrend: trend(now.leads, before.leads),
    conversionsTrend: trend(now.conversions, before.conversions),
    revenueTrend: trend(now.revenueCents, before.revenueCents, dollars),
    partnersTrend: trend(now.partners, before.partners),
    salesTrend: trend(now.sales, before.sales),
    commissionTrend: trend(now.commissionCents, before.commissionCents, dollars),
  };
  const otherCurrencies = [...others]
    .filter(([, o]) => o.revenueCents !== 0 || o.commissionCents !== 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([currency, o]) => ({ currency, revenue: dollars(o.revenueCents), commission: dollars(o.commissionCents) }));
  return {
    data,
    metrics,
    meta: {
      period,
      dateFrom: dayStart(current.first),
      dateTo: dayEnd(current.last),
      previousPeriod: { dateFrom: dayStart(previous.first), dateTo: dayEnd(previous.last) },
      currency: DASHBOARD_CURRENCY,
      otherCurrencies,
    },
  };
}
