import { sql, type Database } from '../../core/db.js';

/**
 * A second implementation of GET /api/tracking/performance, straight from the spec's wording over
 * the Postgres tables (the system of record), sharing no code with queries/. The oracle test
 * compares it with what the service computes from the warehouse.
 */

export interface DashboardQuery {
  period?: string;
  dateFrom?: string;
  dateTo?: string;
}

const DAY_MS = 86_400_000;
const utcDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const addDays = (date: string, n: number) => utcDate(Date.parse(`${date}T00:00:00Z`) + n * DAY_MS);
const daysBetween = (from: string, to: string) => Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
/** A date is its own day; a date-time is the UTC day of its instant (no offset: UTC). */
const dayOfParam = (v: string) =>
  /^\d{4}-\d{2}-\d{2}$/.test(v) ? v : utcDate(Date.parse(/(Z|[+-]\d{2}:\d{2})$/.test(v) ? v : `${v}Z`));

const DAY = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD')`;

const q = {
  program: sql('oracle.program', `SELECT ${DAY('created_at')} AS day FROM programs WHERE id = $1`),
  clicks: sql('oracle.clicks', `SELECT ${DAY('created_at')} AS day, test FROM clicks WHERE program_id = $1 AND ($2::bigint IS NULL OR partner_id = $2)`),
  customers: sql(
    'oracle.customers',
    `SELECT status, provisional, test, ${DAY('signup_date')} AS signup_day, ${DAY('first_purchase_date')} AS purchase_day
       FROM customers WHERE program_id = $1 AND ($2::bigint IS NULL OR partner_id = $2)`,
  ),
  sales: sql(
    'oracle.sales',
    `SELECT ${DAY('occurred_at')} AS day, status, test, currency, amount_cents, refunded_cents FROM sale_events WHERE program_id = $1 AND ($2::bigint IS NULL OR partner_id = $2)`,
  ),
  partnerPrograms: sql('oracle.partner_programs', `SELECT ${DAY('created_at')} AS day FROM partner_programs WHERE program_id = $1 AND ($2::bigint IS NULL OR partner_id = $2)`),
  commissions: sql(
    'oracle.commissions',
    `SELECT ${DAY('created_at')} AS day, status, currency, amount_cents FROM commissions WHERE program_id = $1 AND ($2::bigint IS NULL OR partner_id = $2)`,
  ),
};

type Kind = 'click' | 'lead' | 'conversion' | 'sale' | 'partner' | 'commission';
interface Item {
  kind: Kind;
  day: string;
  currency?: string;
  cents?: number;
}

/**
 * Everything the dashboard counts, as the spec words it, from the current Postgres rows; with a
 * partner, only what is that partner's (the partner portal's figures, issue 31).
 */
async function countedItems(db: Database, programId: number, partnerId: number | null): Promise<Item[]> {
  const items: Item[] = [];
  for (const c of await db.many<{ day: string; test: boolean }>(q.clicks, [programId, partnerId])) {
    if (!c.test) items.push({ kind: 'click', day: c.day }); // real clicks only
  }
  type Customer = { status: string; provisional: boolean; test: boolean; signup_day: string | null; purchase_day: string | null };
  for (const c of await db.many<Customer>(q.customers, [programId, partnerId])) {
    if (c.test) continue;
    // A provisional lead is not counted until it is settled.
    if (c.signup_day !== null && (c.status === 'lead' || c.status === 'conversion') && !c.provisional) items.push({ kind: 'lead', day: c.signup_day });
    if (c.purchase_day !== null && c.status === 'conversion') items.push({ kind: 'conversion', day: c.purchase_day });
  }
  type Sale = { day: string; status: string; test: boolean; currency: string; amount_cents: number; refunded_cents: number };
  for (const s of await db.many<Sale>(q.sales, [programId, partnerId])) {
    // A partly refunded sale still counts, for what was not refunded.
    if (s.status === 'paid' && !s.test) items.push({ kind: 'sale', day: s.day, currency: s.currency, cents: Number(s.amount_cents) - Number(s.refunded_cents) });
  }
  for (const p of await db.many<{ day: string }>(q.partnerPrograms, [programId, partnerId])) items.push({ kind: 'partner', day: p.day });
  type Commission = { day: string; status: string; currency: string; amount_cents: number };
  for (const c of await db.many<Commission>(q.commissions, [programId, partnerId])) {
    if (c.status !== 'reversed') items.push({ kind: 'commission', day: c.day, currency: c.currency, cents: Number(c.amount_cents) });
  }
  return items;
}

interface Sums {
  clicks: number;
  leads: number;
  conversions: number;
  revenueCents: number;
  sales: number;
  partners: number;
  commissionCents: number;
}

function sums(items: Item[], from: string, to: string): Sums {
  const s: Sums = { clicks: 0, leads: 0, conversions: 0, revenueCents: 0, sales: 0, partners: 0, commissionCents: 0 };
  for (const i of items) {
    if (i.day < from || i.day > to) continue;
    if (i.kind === 'click') s.clicks++;
    else if (i.kind === 'lead') s.leads++;
    else if (i.kind === 'conversion') s.conversions++;
    else if (i.kind === 'partner') s.partners++;
    else if (i.kind === 'sale') {
      s.sales++;
      if (i.currency === 'USD') s.revenueCents += i.cents!;
    } else if (i.currency === 'USD') s.commissionCents += i.cents!;
  }
  return s;
}

/** a / b to `places` decimals, half up, by integer division with remainder. */
function decimal(a: number, b: number, places: number): number {
  const scale = 10n ** BigInt(places);
  const num = BigInt(a) * scale;
  const den = BigInt(b);
  let quotient = num / den;
  if ((num % den) * 2n >= den) quotient += 1n;
  return Number(quotient) / Number(scale);
}

function trendOf(current: number, previous: number, shown: number) {
  if (previous === 0) {
    return current > 0 ? { trend: null, trendDirection: 'up', previous: shown } : { trend: 0, trendDirection: 'stable', previous: shown };
  }
  const percent = decimal(Math.abs(current - previous) * 100, previous, 1);
  const trendDirection = percent === 0 ? 'stable' : current > previous ? 'up' : 'down';
  return { trend: percent, trendDirection, previous: shown };
}

export async function referencePerformance(db: Database, programId: number, query: DashboardQuery, now: number, partnerId: number | null = null) {
  const items = await countedItems(db, programId, partnerId);
  const today = utcDate(now);
  let period: string;
  let from: string;
  let to: string;
  if (query.dateFrom !== undefined && query.dateTo !== undefined) {
    period = 'custom';
    from = dayOfParam(query.dateFrom);
    to = dayOfParam(query.dateTo);
  } else {
    period = query.period ?? '7d';
    to = today;
    if (period === 'all') {
      const created = (await db.one<{ day: string }>(q.program, [programId]))!.day;
      from = [created, today, ...items.map((i) => i.day).filter((d) => d <= today)].sort()[0]!;
    } else {
      from = addDays(today, -(Number.parseInt(period, 10) - 1));
    }
  }
  const length = daysBetween(from, to) + 1;
  const previousFrom = addDays(from, -length);
  const previousTo = addDays(from, -1);

  const data = [];
  for (let d = from; d <= to; d = addDays(d, 1)) {
    const s = sums(items, d, d);
    data.push({
      date: d,
      period: d,
      clicks: s.clicks,
      leads: s.leads,
      conversions: s.conversions,
      revenue: s.revenueCents / 100,
      partners: s.partners,
      sales: 0,
      commission: s.commissionCents / 100,
    });
  }
  const cur = sums(items, from, to);
  const prev = sums(items, previousFrom, previousTo);
  const others = new Map<string, { revenue: number; commission: number }>();
  for (const i of items) {
    if (i.day < from || i.day > to || i.currency === undefined || i.currency === 'USD') continue;
    const o = others.get(i.currency) ?? { revenue: 0, commission: 0 };
    if (i.kind === 'sale') o.revenue += i.cents!;
    else o.commission += i.cents!;
    others.set(i.currency, o);
  }
  return {
    data,
    metrics: {
      totalClicks: cur.clicks,
      totalLeads: cur.leads,
      totalConversions: cur.conversions,
      totalRevenue: cur.revenueCents / 100,
      conversionRate: cur.clicks === 0 ? 0 : decimal(cur.conversions * 100, cur.clicks, 2),
      averageOrderValue: cur.conversions === 0 ? 0 : decimal(cur.revenueCents, cur.conversions * 100, 2),
      totalPartners: cur.partners,
      totalSales: cur.sales,
      totalPartnersCommission: cur.commissionCents / 100,
      clicksTrend: trendOf(cur.clicks, prev.clicks, prev.clicks),
      leadsTrend: trendOf(cur.leads, prev.leads, prev.leads),
      conversionsTrend: trendOf(cur.conversions, prev.conversions, prev.conversions),
      revenueTrend: trendOf(cur.revenueCents, prev.revenueCents, prev.revenueCents / 100),
      partnersTrend: trendOf(cur.partners, prev.partners, prev.partners),
      salesTrend: trendOf(cur.sales, prev.sales, prev.sales),
      commissionTrend: trendOf(cur.commissionCents, prev.commissionCents, prev.commissionCents / 100),
    },
    meta: {
      period,
      dateFrom: `${from}T00:00:00.000Z`,
      dateTo: `${to}T23:59:59.999Z`,
      previousPeriod: { dateFrom: `${previousFrom}T00:00:00.000Z`, dateTo: `${previousTo}T23:59:59.999Z` },
      currency: 'USD',
      otherCurrencies: [...others.entries()]
        .filter(([, o]) => o.revenue !== 0 || o.commission !== 0)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([currency, o]) => ({ currency, revenue: o.revenue / 100, commission: o.commission / 100 })),
    },
    reporting: referenceReporting(items, from, to),
  };
}

/**
 * The answer's `reporting` (issue 30) as the oracle's programs have it: reporting currency USD and no
 * exchange rate loaded, so USD amounts are the totals as they are and every other currency is listed
 * unconverted (tests/queries/reporting-totals.test.ts covers conversions with rates).
 */
function referenceReporting(items: Item[], from: string, to: string) {
  const byCurrency = new Map<string, { sales: number; revenue: number; commissions: number; commission: number }>();
  for (const i of items) {
    if (i.day < from || i.day > to || (i.kind !== 'sale' && i.kind !== 'commission')) continue;
    const c = byCurrency.get(i.currency!) ?? { sales: 0, revenue: 0, commissions: 0, commission: 0 };
    if (i.kind === 'sale') {
      c.sales++;
      c.revenue += i.cents!;
    } else {
      c.commissions++;
      c.commission += i.cents!;
    }
    byCurrency.set(i.currency!, c);
  }
  const usd = byCurrency.get('USD') ?? { sales: 0, revenue: 0, commissions: 0, commission: 0 };
  return {
    reporting_currency: 'USD',
    from,
    to,
    sales: usd.sales,
    revenue_minor: usd.revenue,
    revenue: usd.revenue / 100,
    commissions: usd.commissions,
    commission_minor: usd.commission,
    commission: usd.commission / 100,
    unconverted: [...byCurrency.entries()]
      .filter(([currency]) => currency !== 'USD')
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([currency, c]) => ({
        currency,
        sales: c.sales,
        revenue_minor: c.revenue,
        revenue: c.revenue / 100,
        commissions: c.commissions,
        commission_minor: c.commission,
        commission: c.commission / 100,
      })),
    fx: { reporting_currency: 'USD', rates: [] },
  };
}
