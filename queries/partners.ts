/**
 * Each partner's all-time totals in a program, for the console's partner list: real clicks, paid
 * sales and commissions not reversed, money per currency. Read from the warehouse (Postgres keeps
 * no per-program index on clicks, schemas/postgres/0003), always with FINAL, so a redelivered
 * event never counts twice.
 */
import { sql } from '../core/sql.js';
import type { Warehouse } from '../core/warehouse.js';

export interface PartnerTotals {
  clicks: number;
  sales: number;
  /** Paid sales' amounts, per currency (minor units). */
  revenue: { currency: string; amount_minor: number }[];
  /** Commissions not reversed, per currency (minor units). */
  commission: { currency: string; amount_minor: number }[];
}

/** Real clicks per UTC day and partner; `days` empty: every day. The day is in the sort key, so a few days read only their rows. */
export const clicksByDaySql = sql(
  'console.partner_clicks_by_day',
  `SELECT toString(toDate(occurred_at)) AS day, assumeNotNull(partner_id) AS partner_id, count() AS n
     FROM click_recorded FINAL
    WHERE program_id = {programId:Int64} AND NOT test AND partner_id IS NOT NULL
      AND (empty({days:Array(Date)}) OR toDate(occurred_at) IN {days:Array(Date)})
    GROUP BY day, partner_id`,
);

/** The days of the clicks loaded since a time: the ones whose counts may have changed. */
const touchedDaysSql = sql(
  'console.partner_clicks_touched_days',
  `SELECT DISTINCT toString(toDate(occurred_at)) AS day FROM click_recorded
    WHERE program_id = {programId:Int64} AND loaded_at > toDateTime64({since:String}, 3, 'UTC')`,
);

const nowSql = sql('console.warehouse_now', `SELECT toString(now64(3)) AS now`);

export const moneyTotalsSql = sql(
  'console.partner_money_totals',
  `SELECT assumeNotNull(partner_id) AS partner_id, 'sales' AS metric, toString(currency) AS currency, count() AS n, toInt64(sum(amount_cents)) AS amount
     FROM sales_current FINAL
    WHERE program_id = {programId:Int64} AND NOT test AND status = 'paid' AND partner_id IS NOT NULL
    GROUP BY partner_id, currency
   UNION ALL
   SELECT partner_id, 'commission', toString(currency), count(), toInt64(sum(amount_cents))
     FROM commissions_current FINAL
    WHERE program_id = {programId:Int64} AND status <> 'reversed'
    GROUP BY partner_id, currency`,
);

type Row = Record<string, string | number>;
export const noActivity = (): PartnerTotals => ({ clicks: 0, sales: 0, revenue: [], commission: [] });
const byCurrency = (a: { currency: string }, b: { currency: string }) => (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0);

/** Clicks per day per partner, the money per partner: the totals by partner id (a partner with no activity is absent). */
function combine(days: ReadonlyMap<string, ReadonlyMap<number, number>>, money: readonly Row[]): Map<number, PartnerTotals> {
  const totals = new Map<number, PartnerTotals>();
  const of = (id: number) => totals.get(id) ?? totals.set(id, noActivity()).get(id)!;
  for (const partners of days.values()) for (const [id, n] of partners) of(id).clicks += n;
  for (const row of money) {
    const t = of(Number(row.partner_id));
    const amount = { currency: String(row.currency), amount_minor: Number(row.amount) };
    if (row.metric === 'sales') {
      t.sales += Number(row.n);
      t.revenue.push(amount);
    } else t.commission.push(amount);
  }
  for (const t of totals.values()) {
    t.revenue.sort(byCurrency);
    t.commission.sort(byCurrency);
  }
  return totals;
}

function clickDays(rows: readonly Row[], into = new Map<string, Map<number, number>>()) {
  for (const row of rows) {
    const day = String(row.day);
    const partners = into.get(day) ?? into.set(day, new Map()).get(day)!;
    partners.set(Number(row.partner_id), Number(row.n));
  }
  return into;
}

/** The totals computed whole, now (what the cache below keeps up to date without reading every click again). */
export async function partnerTotals(warehouse: Warehouse, programId: number): Promise<Map<number, PartnerTotals>> {
  const [clicks, money] = await Promise.all([warehouse.query<Row>(clicksByDaySql, { programId, days: [] }), warehouse.query<Row>(moneyTotalsSql, { programId })]);
  return combine(clickDays(clicks), money);
}

/** Clicks loaded this long before the last look are looked at again: an insert becomes visible after its loaded_at. */
const LOAD_MARGIN_MS = 60_000;

export interface PartnerTotalsCacheOptions {
  /** Totals older than this are brought up to date (in the background; the older ones are answered meanwhile). */
  maxAgeMs?: number;
  /** How long a request waits for a computation before answering with what there is. */
  waitMs?: number;
  /** At most this many programs are kept; the least recently computed is forgotten first. */
  maxPrograms?: number;
  now?: () => number;
  onError?: (error: unknown) => void;
}

export interface CachedTotals {
  /** Undefined while the first computation runs (or when it failed). */
  totals: Map<number, PartnerTotals> | undefined;
  /** When the totals shown were computed (ms since the epoch). */
  asOf: number | undefined;
}

interface ProgramState {
  at: number;
  /** The warehouse's clock when the clicks were last read: loads after it are looked at next time. */
  readAt: string;
  days: Map<string, Map<number, number>>;
  totals: Map<number, PartnerTotals>;
}

/**
 * The partner list's totals, kept up to date per program and process (a speed rule:
 * docs/architecture.md, "Rules that exist only for speed"). Reading every click of a program with
 * FINAL costs about 150 ms per million clicks here, and chDB runs one statement at a time, so no
 * request can wait for it at 10 million events. Clicks are kept per UTC day: the first computation
 * reads them all (in the background), each later one only the days whose clicks were loaded since
 * (FINAL over a day is exact however its rows were merged); the money (sales, commissions: one row
 * per entity) is read again whole. A request answers the last computation, exact as of `asOf`, and
 * starts the next when it is older than `maxAgeMs`; a computation that ends within `waitMs` (small
 * programs, most updates) is waited for.
 */
export function createPartnerTotalsCache(warehouse: Warehouse, o: PartnerTotalsCacheOptions = {}) {
  const { maxAgeMs = 60_000, waitMs = 60, maxPrograms = 1_000, now = Date.now } = o;
  const states = new Map<number, ProgramState>();
  const running = new Map<number, Promise<void>>();

  async function update(programId: number, previous: ProgramState | undefined): Promise<ProgramState> {
    const at = now();
    const [{ now: readAt }] = (await warehouse.query<{ now: string }>(nowSql)) as [{ now: string }];
    let days: Map<string, Map<number, number>>;
    if (!previous) {
      days = clickDays(await warehouse.query<Row>(clicksByDaySql, { programId, days: [] }));
    } else {
      const since = new Date(Date.parse(`${previous.readAt.replace(' ', 'T')}Z`) - LOAD_MARGIN_MS).toISOString().replace('T', ' ').replace('Z', '');
      const touched = (await warehouse.query<{ day: string }>(touchedDaysSql, { programId, since })).map((r) => r.day);
      days = new Map(previous.days);
      for (const day of touched) days.delete(day);
      if (touched.length) clickDays(await warehouse.query<Row>(clicksByDaySql, { programId, days: touched }), days);
    }
    const money = await warehouse.query<Row>(moneyTotalsSql, { programId });
    return { at, readAt, days, totals: combine(days, money) };
  }

  function refresh(programId: number): Promise<void> {
    const already = running.get(programId);
    if (already) return already;
    const job = update(programId, states.get(programId))
      .then((state) => {
        states.delete(programId);
        states.set(programId, state);
        if (states.size > maxPrograms) states.delete(states.keys().next().value!);
      })
      .catch((error: unknown) => o.onError?.(error))
      .finally(() => running.delete(programId));
    running.set(programId, job);
    return job;
  }

  return {
    async get(programId: number): Promise<CachedTotals> {
      const state = states.get(programId);
      // Only the request that starts a computation waits for it (a little): the ones that come
      // while it runs answer at once.
      if ((!state || now() - state.at > maxAgeMs) && !running.has(programId)) {
        let timer: NodeJS.Timeout | undefined;
        const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
        await Promise.race([refresh(programId), waited]);
        clearTimeout(timer);
      }
      const latest = states.get(programId);
      return { totals: latest?.totals, asOf: latest?.at };
    },
  };
}

export type PartnerTotalsCache = ReturnType<typeof createPartnerTotalsCache>;
