/**
 * The one thing the ingest benchmark asserts: every acknowledged write is in the database. Each
 * check reads the ids wrk took from the 2xx bodies and looks for their rows (and outbox events).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Database } from '../../core/db.js';
import type { PhaseSummary } from './driver.js';
import { okOf, runsOf, type PhaseResult } from './phases.js';

const count = {
  clicks: sql('bench.count_clicks', `SELECT count(*)::int AS n FROM clicks`),
  clickEvents: sql('bench.count_click_events', `SELECT count(*)::int AS n FROM outbox WHERE event_type = 'click.recorded'`),
  clicksAmong: sql('bench.count_clicks_among', `SELECT count(*)::int AS n FROM clicks WHERE click_id = ANY ($1::text[])`),
  clickEventsAmong: sql(
    'bench.count_click_events_among',
    `SELECT count(DISTINCT aggregate_key)::int AS n FROM outbox WHERE event_type = 'click.recorded' AND aggregate_key = ANY ($1::text[])`,
  ),
  sales: sql('bench.count_sales', `SELECT count(*)::int AS n FROM sale_events WHERE transaction_id LIKE 'bench-sale-%'`),
  salesAmong: sql('bench.count_sales_among', `SELECT count(*)::int AS n FROM sale_events WHERE transaction_id = ANY ($1::text[])`),
  saleEvents: sql('bench.count_sale_events', `SELECT count(*)::int AS n FROM outbox WHERE event_type = 'sale.recorded'`),
  commissions: sql('bench.count_commissions', `SELECT count(*)::int AS n FROM commissions`),
  leadsAmong: sql('bench.count_leads_among', `SELECT count(*)::int AS n FROM customers WHERE click_id = ANY ($1::text[]) AND customer_key LIKE 'bench-lead-%'`),
  leadEvents: sql('bench.count_lead_events', `SELECT count(*)::int AS n FROM outbox WHERE event_type = 'customer.changed' AND payload->>'change' = 'lead'`),
  refundsAmong: sql(
    'bench.count_refunds_among',
    `SELECT count(*)::int AS n FROM sale_events s WHERE s.transaction_id = ANY ($1::text[]) AND s.status = 'refunded'
        AND EXISTS (SELECT 1 FROM refunds r WHERE r.sale_id = s.id)`,
  ),
};

async function countOf(db: Database, query: ReturnType<typeof sql>, params: unknown[] = []): Promise<number> {
  return (await db.one<{ n: number }>(query, params))!.n;
}

/** Requests still in the service when wrk stopped may commit a moment later: wait until the count settles (bounded). */
async function settledCount(db: Database, query: ReturnType<typeof sql>): Promise<number> {
  let last = await countOf(db, query);
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    await sleep(300);
    const now = await countOf(db, query);
    if (now === last) return now;
    last = now;
  }
  return last;
}

export interface ClickDurability {
  /** The smoke click, the warm-ups' and the measured runs'. */
  acknowledged: number;
  rows: number;
  eventRows: number;
  idsFound: number;
  eventsFound: number;
  distinctIds: number;
  /** 2xx bodies without a click_id. */
  unreadable: number;
  durable: boolean;
}

/** Every acknowledged click (the smoke click and every run's) has its row and its event. */
export async function checkClicks(db: Database, smokeClickId: string, clickRuns: PhaseSummary[]): Promise<ClickDurability> {
  const unreadable = clickRuns.reduce((n, run) => n + run.unreadable, 0);
  const acknowledged = 1 + clickRuns.reduce((n, run) => n + run.ok, 0);
  const rows = await settledCount(db, count.clicks);
  const eventRows = await countOf(db, count.clickEvents);
  const allAckedIds = [smokeClickId, ...clickRuns.flatMap((run) => run.ids)];
  const idsFound = await countOf(db, count.clicksAmong, [allAckedIds]);
  const eventsFound = await countOf(db, count.clickEventsAmong, [allAckedIds]);
  const distinctIds = new Set(allAckedIds).size;
  const durable =
    unreadable === 0 &&
    distinctIds === acknowledged &&
    idsFound === acknowledged &&
    eventsFound === acknowledged &&
    rows >= acknowledged &&
    eventRows >= acknowledged;
  return { acknowledged, rows, eventRows, idsFound, eventsFound, distinctIds, unreadable, durable };
}

export interface SaleDurability {
  acknowledged: number;
  rows: number;
  ids: number;
  idsFound: number;
  eventRows: number;
  commissionRows: number;
  /** 2xx bodies without a transaction_id. */
  unreadable: number;
  durable: boolean;
}

export async function checkSales(db: Database, sale: PhaseResult): Promise<SaleDurability> {
  const ackedTransactionIds = runsOf(sale).flatMap((run) => run.ids);
  const unreadable = runsOf(sale).reduce((n, run) => n + run.unreadable, 0);
  const acknowledged = okOf(sale);
  const rows = await settledCount(db, count.sales);
  const idsFound = await countOf(db, count.salesAmong, [ackedTransactionIds]);
  const eventRows = await countOf(db, count.saleEvents);
  const commissionRows = await countOf(db, count.commissions);
  const durable = unreadable === 0 && ackedTransactionIds.length === acknowledged && idsFound === acknowledged && rows >= acknowledged;
  return { acknowledged, rows, ids: ackedTransactionIds.length, idsFound, eventRows, commissionRows, unreadable, durable };
}

export interface LeadDurability {
  acknowledged: number;
  /** Found as customers with their key. */
  found: number;
  durable: boolean;
}

export async function checkLeads(db: Database, lead: PhaseResult): Promise<LeadDurability> {
  const ackedLeadClicks = runsOf(lead).flatMap((run) => run.ids);
  const acknowledged = okOf(lead);
  await settledCount(db, count.leadEvents);
  const found = await countOf(db, count.leadsAmong, [ackedLeadClicks]);
  return { acknowledged, found, durable: ackedLeadClicks.length === acknowledged && found === acknowledged };
}

export interface RefundDurability {
  acknowledged: number;
  /** Distinct sales refunded: a pool that ran out repeats refunds (answered 200 again). */
  distinct: number;
  /** Their sales refunded with a refund row. */
  found: number;
  durable: boolean;
}

export async function checkRefunds(db: Database, refund: PhaseResult): Promise<RefundDurability> {
  const ackedRefunds = runsOf(refund).flatMap((run) => run.ids);
  const acknowledged = okOf(refund);
  const found = await countOf(db, count.refundsAmong, [ackedRefunds]);
  const distinct = new Set(ackedRefunds).size;
  return { acknowledged, distinct, found, durable: ackedRefunds.length === acknowledged && found === distinct };
}
