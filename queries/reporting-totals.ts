/**
 * Totals in a program's reporting currency (issue 30, point 5; docs/decisions/currencies.md): paid
 * sales and commissions not reversed over a range of UTC days, each day's amount of each currency
 * converted with the latest rate on or before that day. An amount with no such rate is listed per
 * currency as unconverted, never summed in. The answer says which rates it used. The dashboard
 * and the agent call it for a program; the portal for one partner (`partnerId`).
 *
 * Read at query time from the warehouse: the dashboard's daily figures (the hourly rollup, or one
 * partner's facts) and the stored rates of the currencies they hold (fx_rate_recorded), the ones
 * inside the range and the latest before it. The as-of match (the latest rate on or before each
 * day) is made here over those few rows: an ASOF JOIN in the statement gave the same answer for
 * about five times the warehouse's CPU (decisions/currencies.md, "Speed"). Nothing is stored per
 * sale, so a rate loaded later converts the earlier days it covers on the next read.
 *
 * A rate is stored EUR-based (per_eur units of a currency buy one euro); one unit of C is
 * per_eur(R) / per_eur(C) units of R. The workspace's own rates win over the operator's
 * (workspace_id 0) on the same day. Amounts are minor units with the project's convention (two
 * decimals for every currency, VND included): converting keeps it. Each (day, currency, figure)
 * sum is converted and rounded half away from zero to a minor unit once, then the days are added.
 */
import { sql } from '../core/sql.js';
import type { Warehouse } from '../core/warehouse.js';
import type { DailyFigure, PerformanceBody } from './metrics.js';
import { dailyFigures, performanceAndFigures, type PerformanceRequest } from './performance.js';
import { dayOf, dayString, type Day } from './periods.js';

/** The base of the stored rates (domain/fx/currencies.ts; queries/ keep to core/). */
const BASE = 'EUR';

/**
 * The rates of some currencies inside [from, to], and the latest of each before from: every rate
 * the as-of match of a day in the range can pick. Both read the sort key's prefix (workspace, currency).
 */
export const ratesSql = sql(
  'reporting.fx_rates',
  `SELECT workspace_id, toString(currency) AS rate_currency, toString(day) AS rate_day, toString(per_eur) AS per_eur
     FROM fx_rate_recorded
    WHERE workspace_id IN (0, {workspaceId:Int64}) AND currency IN {currencies:Array(String)} AND day BETWEEN {from:Date} AND {to:Date}
   UNION ALL
   SELECT workspace_id, toString(currency), toString(latest.1), toString(latest.2)
     FROM (SELECT workspace_id, currency, argMax((day, per_eur), day) AS latest
             FROM fx_rate_recorded
            WHERE workspace_id IN (0, {workspaceId:Int64}) AND currency IN {currencies:Array(String)} AND day < {from:Date}
            GROUP BY workspace_id, currency)`,
);

export interface ReportingTotalsRequest {
  programId: number;
  /** The program's workspace: its own rates win over the operator's. */
  workspaceId: number;
  /** The program's reporting_currency. */
  reportingCurrency: string;
  /** UTC days, inclusive. */
  first: Day;
  last: Day;
  /** One partner's totals (the portal); the program's when absent. */
  partnerId?: number;
}

/** A rate the totals used: one unit of `currency` was `rate` units of the reporting currency for the figures of `day`. */
export interface UsedRate {
  currency: string;
  /** The UTC day of the figures it converted. */
  day: string;
  rate: number;
  /** The day of the published rate (the older of the two euro rates of a cross rate): the latest on or before `day`. */
  rate_date: string;
}

export interface Unconverted {
  currency: string;
  /** Paid sales of the currency with no rate on or before their day. */
  sales: number;
  revenue_minor: number;
  revenue: number;
  commissions: number;
  commission_minor: number;
  commission: number;
}

export interface ReportingTotals {
  reporting_currency: string;
  from: string;
  to: string;
  /** Paid sales converted (the unconverted ones are in `unconverted`). */
  sales: number;
  revenue_minor: number;
  /** revenue_minor / 100. */
  revenue: number;
  commissions: number;
  commission_minor: number;
  commission: number;
  /** Amounts with no rate, per currency: listed, never in the totals above. */
  unconverted: Unconverted[];
  fx: { reporting_currency: string; rates: UsedRate[] };
}

export interface RateRow {
  workspace_id: number | string;
  rate_currency: string;
  rate_day: string;
  per_eur: string;
}

/** Decimal text to an integer of 10^-10 units (rates have at most 10 decimals). */
const SCALE = 10;
function scaled(text: string): bigint {
  const [whole = '0', fraction = ''] = text.split('.');
  return BigInt(whole) * 10n ** BigInt(SCALE) + BigInt((fraction + '0'.repeat(SCALE)).slice(0, SCALE) || '0');
}

/** amount * numerator / denominator, rounded half away from zero, exact. */
function convert(amount: number, numerator: bigint, denominator: bigint): number {
  const a = BigInt(amount);
  const product = (a < 0n ? -a : a) * numerator;
  const rounded = (2n * product + denominator) / (2n * denominator);
  return Number(a < 0n ? -rounded : rounded);
}

interface EuroRate {
  day: Day;
  date: string;
  perEur: bigint;
  own: boolean;
}

/** Each currency's rates by day, the workspace's own winning over the operator's on a day; sorted by day. */
function ratesByCurrency(rows: readonly RateRow[]): Map<string, EuroRate[]> {
  const byDay = new Map<string, EuroRate>();
  for (const r of rows) {
    const perEur = scaled(r.per_eur);
    if (perEur <= 0n) continue;
    const rate: EuroRate = { day: dayOf(Date.parse(`${r.rate_day}T00:00:00Z`)), date: r.rate_day, perEur, own: Number(r.workspace_id) !== 0 };
    const key = `${r.rate_currency} ${r.rate_day}`;
    const earlier = byDay.get(key);
    if (!earlier || (rate.own && !earlier.own)) byDay.set(key, rate);
  }
  const out = new Map<string, EuroRate[]>();
  for (const [key, rate] of byDay) {
    const currency = key.slice(0, key.indexOf(' '));
    const list = out.get(currency) ?? out.set(currency, []).get(currency)!;
    list.push(rate);
  }
  for (const list of out.values()) list.sort((a, b) => a.day - b.day);
  return out;
}

/** The latest rate on or before the day (binary search over the sorted rates); the base is 1 every day. */
function euroRateOn(rates: ReadonlyMap<string, EuroRate[]>, currency: string, day: Day): EuroRate | null | undefined {
  if (currency === BASE) return null;
  const list = rates.get(currency);
  if (!list) return undefined;
  let lo = 0;
  let hi = list.length - 1;
  let found: EuroRate | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.day <= day) {
      found = list[mid];
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found;
}

const ONE = 10n ** BigInt(SCALE);
const major = (minor: number) => minor / 100;

/** Pure: the figures of [first, last] converted with the rates (as ratesSql returns them). */
export function totalsOf(figures: readonly DailyFigure[], rateRows: readonly RateRow[], r: ReportingTotalsRequest): ReportingTotals {
  const R = r.reportingCurrency;
  const rates = ratesByCurrency(rateRows);
  const t: ReportingTotals = {
    reporting_currency: R, from: dayString(r.first), to: dayString(r.last), sales: 0, revenue_minor: 0, revenue: 0, commissions: 0,
    commission_minor: 0, commission: 0, unconverted: [], fx: { reporting_currency: R, rates: [] },
  };
  const unconverted = new Map<string, Unconverted>();
  const used = new Map<string, UsedRate>();
  for (const f of figures) {
    if ((f.metric !== 'sales' && f.metric !== 'commissions') || f.n === 0 || f.day < r.first || f.day > r.last) continue;
    let minor: number | undefined;
    if (f.currency === R) {
      minor = f.cents;
    } else {
      const from = euroRateOn(rates, f.currency, f.day);
      const to = euroRateOn(rates, R, f.day);
      if (from !== undefined && to !== undefined) {
        const fromPerEur = from?.perEur ?? ONE;
        const toPerEur = to?.perEur ?? ONE;
        minor = convert(f.cents, toPerEur, fromPerEur);
        const dates = [from?.date, to?.date].filter((d): d is string => d !== undefined).sort();
        used.set(`${f.currency} ${f.day}`, {
          currency: f.currency,
          day: dayString(f.day),
          rate: Number((Number(toPerEur) / Number(fromPerEur)).toPrecision(10)),
          rate_date: dates[0]!,
        });
      }
    }
    if (minor === undefined) {
      const u = unconverted.get(f.currency) ?? { currency: f.currency, sales: 0, revenue_minor: 0, revenue: 0, commissions: 0, commission_minor: 0, commission: 0 };
      if (f.metric === 'sales') {
        u.sales += f.n;
        u.revenue_minor += f.cents;
      } else {
        u.commissions += f.n;
        u.commission_minor += f.cents;
      }
      unconverted.set(f.currency, u);
    } else if (f.metric === 'sales') {
      t.sales += f.n;
      t.revenue_minor += minor;
    } else {
      t.commissions += f.n;
      t.commission_minor += minor;
    }
  }
  t.revenue = major(t.revenue_minor);
  t.commission = major(t.commission_minor);
  t.unconverted = [...unconverted.values()]
    .sort((a, b) => (a.currency < b.currency ? -1 : 1))
    .map((u) => ({ ...u, revenue: major(u.revenue_minor), commission: major(u.commission_minor) }));
  t.fx.rates = [...used.values()].sort((a, b) => (a.day === b.day ? (a.currency < b.currency ? -1 : 1) : a.day < b.day ? -1 : 1));
  return t;
}

/** The figures converted: one small read of the rates their currencies need (none when every amount is in R). */
export async function convertFigures(warehouse: Warehouse, figures: readonly DailyFigure[], r: ReportingTotalsRequest): Promise<ReportingTotals> {
  const currencies = new Set<string>();
  for (const f of figures) {
    if ((f.metric === 'sales' || f.metric === 'commissions') && f.day >= r.first && f.day <= r.last && f.currency !== r.reportingCurrency) currencies.add(f.currency);
  }
  if (currencies.size > 0) currencies.add(r.reportingCurrency);
  currencies.delete(BASE);
  const rateRows =
    currencies.size === 0
      ? []
      : await warehouse.query<RateRow>(ratesSql, {
          workspaceId: r.workspaceId, currencies: [...currencies].sort(), from: dayString(r.first), to: dayString(r.last),
        });
  return totalsOf(figures, rateRows, r);
}

/** The totals of a program (or one of its partners) in its reporting currency over [first, last]. */
export async function reportingTotals(warehouse: Warehouse, r: ReportingTotalsRequest): Promise<ReportingTotals> {
  return convertFigures(warehouse, await dailyFigures(warehouse, r.programId, r.first, r.last, r.partnerId), r);
}

/** The program's reporting settings, read from Postgres by the caller (domain/fx/reporting.ts). */
export interface Reporting {
  workspaceId: number;
  reportingCurrency: string;
}

/** The UTC day of an ISO time (the bounds a performance answer reports). */
const dayOfIso = (iso: string): Day => dayOf(Date.parse(iso));

/**
 * The dashboard's performance answer with its totals in the reporting currency beside it (`reporting`),
 * over the same days and from the same figures: the contract's own fields keep their meaning (USD
 * figures, otherCurrencies).
 */
export async function performanceWithReporting(
  warehouse: Warehouse,
  request: PerformanceRequest,
  reporting: Reporting,
): Promise<PerformanceBody & { reporting: ReportingTotals }> {
  const { body, figures } = await performanceAndFigures(warehouse, request);
  const totals = await convertFigures(warehouse, figures, {
    programId: request.programId,
    workspaceId: reporting.workspaceId,
    reportingCurrency: reporting.reportingCurrency,
    first: dayOfIso(body.meta.dateFrom),
    last: dayOfIso(body.meta.dateTo),
    partnerId: request.partnerId,
  });
  return Object.assign(body, { reporting: totals });
}
