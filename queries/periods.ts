/**
 * Calendar arithmetic of the dashboard: UTC days, the ranges the `period`, `dateFrom` and `dateTo`
 * parameters select, and the equal-length comparison window before them. Pure functions.
 */

const DAY_MS = 86_400_000;

/** A UTC calendar day, counted in days since 1970-01-01. */
export type Day = number;

/** Inclusive on both ends. */
export interface DayRange {
  first: Day;
  last: Day;
}

export const PERIODS = ['7d', '30d', '90d', 'all'] as const;
export type Period = (typeof PERIODS)[number];
/** The label meta.period carries when dateFrom and dateTo chose the range. */
const CUSTOM_PERIOD = 'custom';
const DEFAULT_PERIOD: Period = '7d';

const PRESET_DAYS: Record<Exclude<Period, 'all'>, number> = { '7d': 7, '30d': 30, '90d': 90 };

/** Dates are accepted from 2000 to 2099: the previous window of the widest range still starts after 1970. */
const FIRST_ALLOWED_DAY: Day = Date.UTC(2000, 0, 1) / DAY_MS;
const LAST_ALLOWED_DAY: Day = Date.UTC(2099, 11, 31) / DAY_MS;
/** About ten years: one data row per day, so the response stays bounded. */
export const MAX_RANGE_DAYS = 3660;

export const dayOf = (ms: number): Day => Math.floor(ms / DAY_MS);
export const dayString = (day: Day): string => new Date(day * DAY_MS).toISOString().slice(0, 10);
export const dayStart = (day: Day): string => new Date(day * DAY_MS).toISOString();
/** The last millisecond of the day: the inclusive upper bound reported in meta. */
export const dayEnd = (day: Day): string => new Date((day + 1) * DAY_MS - 1).toISOString();

const rangeLength = (r: DayRange): number => r.last - r.first + 1;

/** The equal-length window immediately before the range. */
export const previousRange = (r: DayRange): DayRange => ({ first: r.first - rangeLength(r), last: r.first - 1 });

export function daysOf(r: DayRange): Day[] {
  const days: Day[] = [];
  for (let d = r.first; d <= r.last; d++) days.push(d);
  return days;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?$/;

function calendarDay(y: number, m: number, d: number): Day | undefined {
  const ms = Date.UTC(y, m - 1, d);
  const date = new Date(ms);
  // Date.UTC rolls 2026-02-30 over to March: a date that does not exist is refused, not moved.
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d) return undefined;
  return ms / DAY_MS;
}

/**
 * The UTC day a dateFrom/dateTo value names: a date (YYYY-MM-DD) is that day; a date-time is the
 * UTC day of its instant (no offset means UTC). Undefined for anything else, or outside 2000-2099.
 */
export function parseDateParam(value: string): Day | undefined {
  let day: Day | undefined;
  const date = DATE.exec(value);
  if (date) {
    day = calendarDay(Number(date[1]), Number(date[2]), Number(date[3]));
  } else {
    const m = DATE_TIME.exec(value);
    if (!m) return undefined;
    const [h, mi, s] = [Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
    if (calendarDay(Number(m[1]), Number(m[2]), Number(m[3])) === undefined || h > 23 || mi > 59 || s > 59) return undefined;
    if (m[7] !== undefined && m[7] !== 'Z' && (Number(m[7].slice(1, 3)) > 23 || Number(m[7].slice(4)) > 59)) return undefined;
    const ms = Date.parse(m[7] === undefined ? `${value}Z` : value);
    if (Number.isNaN(ms)) return undefined;
    day = dayOf(ms);
  }
  return day !== undefined && day >= FIRST_ALLOWED_DAY && day <= LAST_ALLOWED_DAY ? day : undefined;
}

export interface RangeQuery {
  period?: Period;
  dateFrom?: string;
  dateTo?: string;
}

/** Why a range query is refused; the route maps each to its message. */
export type RangeProblem = 'dateFrom' | 'dateTo' | 'together' | 'order' | 'span';

export function rangeProblem(q: { dateFrom?: string; dateTo?: string }): RangeProblem | undefined {
  const from = q.dateFrom === undefined ? undefined : parseDateParam(q.dateFrom);
  const to = q.dateTo === undefined ? undefined : parseDateParam(q.dateTo);
  if (q.dateFrom !== undefined && from === undefined) return 'dateFrom';
  if (q.dateTo !== undefined && to === undefined) return 'dateTo';
  if ((from === undefined) !== (to === undefined)) return 'together';
  if (from !== undefined && to !== undefined) {
    if (from > to) return 'order';
    if (to - from + 1 > MAX_RANGE_DAYS) return 'span';
  }
  return undefined;
}

/**
 * What a request asks for, before the warehouse is read. A preset or custom range is known now;
 * `all` starts at the program's first activity, which the figures tell (see allTimeRange).
 */
export type RangePlan =
  | { period: string; kind: 'fixed'; current: DayRange; previous: DayRange; fetch: DayRange }
  | { period: 'all'; kind: 'all'; today: Day; fetch: DayRange };

/** The whole history of the warehouse: `all` reads from 1970-01-01 (ClickHouse's first Date) to today. */
const EPOCH: Day = 0;

/** Resolves a validated query (see rangeProblem) against today's UTC day. */
export function planRange(q: RangeQuery, today: Day): RangePlan {
  if (q.dateFrom !== undefined && q.dateTo !== undefined) {
    const current = { first: parseDateParam(q.dateFrom)!, last: parseDateParam(q.dateTo)! };
    const previous = previousRange(current);
    return { period: CUSTOM_PERIOD, kind: 'fixed', current, previous, fetch: { first: previous.first, last: current.last } };
  }
  const period = q.period ?? DEFAULT_PERIOD;
  if (period === 'all') return { period, kind: 'all', today, fetch: { first: EPOCH, last: today } };
  // The last N calendar days, today included.
  const current = { first: today - PRESET_DAYS[period] + 1, last: today };
  const previous = previousRange(current);
  return { period, kind: 'fixed', current, previous, fetch: { first: previous.first, last: current.last } };
}

/**
 * `all` runs from the program's creation day, or from the first day with activity when that is
 * earlier (a sale's occurred_at may be back-dated by up to 30 days), to today. Nothing counted lies
 * before it, so its previous window is all zeros.
 */
export function allTimeRange(programCreatedDay: Day, firstActivityDay: Day | undefined, today: Day): DayRange {
  const first = Math.min(programCreatedDay, firstActivityDay ?? programCreatedDay, today);
  return { first, last: today };
}
