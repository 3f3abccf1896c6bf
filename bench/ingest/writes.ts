/**
 * Sales, leads and refunds. The limit is 120 sales per key per minute, so the load rotates over
 * enough programs (each with its key, partner and clicks) to stay under it. Leads and refunds use
 * each item of their pools once: clicks and paid sales copied in SQL, as many as the runs may take.
 */
import type { Database } from '../../core/db.js';
import { sql } from '../../core/db.js';
import { fmt, log } from '../output.js';
import { seedProgram, type SeededProgram } from '../setup.js';
import { postClick } from './clicks.js';
import { checkLeads, checkRefunds, checkSales, type LeadDurability, type RefundDurability, type SaleDurability } from './durability.js';
import type { Driver } from './driver.js';
import type { PhaseResult, Phases } from './phases.js';
import type { IngestSettings } from './settings.js';
import { MAX_PROGRAMS, pacedRequests, SALE_LIMIT_PER_KEY_PER_MIN, SALES_PER_KEY, TARGET_WRITE_PER_S } from './targets.js';

const copies = {
  /** Lead clicks copied from one real click of the program: the same link, partner and junction. */
  clicks: sql(
    'bench.copy_clicks',
    `INSERT INTO clicks (click_id, program_id, partner_id, partner_program_id, referral_link_id, affiliate_url)
     SELECT gen_random_uuid()::text, k.program_id, k.partner_id, k.partner_program_id, k.referral_link_id, k.affiliate_url
       FROM clicks k CROSS JOIN generate_series(1, $2::int)
      WHERE k.click_id = $1
     RETURNING click_id`,
  ),
  /**
   * Paid sales to refund, copied (with their commission and platform fee) from one paid bench sale of
   * the program: the sale phase alone may not make as many sales as the refund phase can refund.
   */
  sales: sql(
    'bench.copy_sales',
    `WITH source AS (
       SELECT s.program_id, s.customer_id, s.partner_id, s.amount_cents, s.currency, s.occurred_at, s.is_recurring,
              c.partner_id AS commission_partner_id, c.customer_id AS commission_customer_id, c.commission_type,
              c.commission_rate, c.amount_cents AS commission_cents, c.available_at AS commission_available_at, f.amount_cents AS fee_cents
         FROM sale_events s JOIN commissions c ON c.sale_id = s.id JOIN platform_fees f ON f.commission_id = c.id
        WHERE s.program_id = $1 AND s.transaction_id LIKE 'bench-sale-%' AND s.status = 'paid'
        LIMIT 1
     ), copies AS (
       SELECT source.*, gen_random_uuid() AS sale_id, gen_random_uuid() AS commission_id,
              'bench-refund-' || $1 || '-' || g AS transaction_id
         FROM source CROSS JOIN generate_series(1, $2::int) g
     ), sales AS (
       INSERT INTO sale_events (id, program_id, customer_id, partner_id, transaction_id, amount_cents, currency, occurred_at, is_recurring)
       SELECT sale_id, program_id, customer_id, partner_id, transaction_id, amount_cents, currency, occurred_at, is_recurring FROM copies
     ), commissions AS (
       INSERT INTO commissions (id, sale_id, program_id, partner_id, customer_id, commission_type, commission_rate, amount_cents, currency,
                                available_at)
       SELECT commission_id, sale_id, program_id, commission_partner_id, commission_customer_id, commission_type, commission_rate,
              commission_cents, currency, commission_available_at FROM copies
     ), fees AS (
       INSERT INTO platform_fees (sale_id, commission_id, program_id, amount_cents, currency)
       SELECT sale_id, commission_id, program_id, fee_cents, currency FROM copies
     )
     SELECT transaction_id FROM copies`,
  ),
};

/**
 * VACUUM (ANALYZE) after a pool was copied in. A table that just grew by hundreds of thousands of
 * rows would otherwise be vacuumed and analyzed by autovacuum during the measured runs, taking CPU
 * the service's own writes never cause; or, where autovacuum is off (as on our machines), keep the
 * statistics of an empty table and rows without hint bits.
 */
const vacuum = {
  clicks: sql('bench.vacuum_clicks', 'VACUUM (ANALYZE) clicks'),
  sale_events: sql('bench.vacuum_sale_events', 'VACUUM (ANALYZE) sale_events'),
  commissions: sql('bench.vacuum_commissions', 'VACUUM (ANALYZE) commissions'),
  platform_fees: sql('bench.vacuum_platform_fees', 'VACUUM (ANALYZE) platform_fees'),
};

async function settle(db: Database, ...tables: (keyof typeof vacuum)[]): Promise<void> {
  for (const table of tables) await db.many(vacuum[table]);
}

/** Runs tasks with at most `concurrency` in flight. */
async function inParallel<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array<T>(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}

type Target = SeededProgram & { clickIds: string[] };

export interface WritePhases {
  sale: PhaseResult;
  lead: PhaseResult & { exhausted: boolean };
  refund: PhaseResult & { exhausted: boolean };
  sales: SaleDurability;
  leads: LeadDurability;
  refunds: RefundDurability;
  /** Sale and refund requests built per key (their shared limit). */
  perKey: number[];
  programCount: number;
}

interface Context {
  settings: IngestSettings;
  driver: Driver;
  phases: Phases;
  db: Database;
  workspaceId: number;
  serviceUrl: string;
  servicePid: number | undefined;
}

/** A sale is far more work than a click (a transaction of about ten statements against one), so the measured click rate bounds it. */
async function prepareSaleTargets(ctx: Context, clickRps: number): Promise<Target[]> {
  const { settings, db } = ctx;
  const plannedSales = Math.max(clickRps, 100) * (settings.warmup + settings.duration + 1) * 1.25 + pacedRequests(settings);
  const programCount = Math.min(MAX_PROGRAMS, Math.max(4, Math.ceil(plannedSales / SALES_PER_KEY)));
  const clicksPerProgram = Math.max(5, Math.ceil(settings.clickPool / programCount));
  log(`  sale: preparing ${programCount} programs with keys and ${clicksPerProgram} clicks each (limit ${SALE_LIMIT_PER_KEY_PER_MIN} sales/min per key)`);
  const prepStarted = Date.now();
  const targets = await inParallel(programCount, 6, async (i) => {
    const program = await seedProgram(db, ctx.workspaceId, `s${i}`);
    return { ...program, clickIds: [] as string[] };
  });
  await inParallel(programCount * clicksPerProgram, 16, async (j) => {
    const target = targets[j % programCount]!;
    target.clickIds.push(await postClick(ctx.serviceUrl, target.affCode, ctx.driver.nextIp()));
  });
  log(`  sale: prepared in ${((Date.now() - prepStarted) / 1000).toFixed(1)} s`);
  return targets;
}

export async function runWritePhases(ctx: Context, clickRps: number): Promise<WritePhases> {
  const { settings, phases, db, serviceUrl, servicePid } = ctx;
  const targets = await prepareSaleTargets(ctx, clickRps);
  const programCount = targets.length;
  const perKey = new Array<number>(programCount).fill(0);
  const keys = targets.map((t) => t.apiKey);
  const sale = await phases.keyedPhase('sale', serviceUrl, servicePid, {
    path: '/api/v1/track/sale',
    keys,
    pools: targets.map((t) => t.clickIds.map((id) => JSON.stringify(id))),
    wrap: true,
    body: `'{"transaction_id":"bench-sale-' .. STAGE .. '-t' .. tid .. '-' .. n .. '","amount_cents":1999,"click_id":' .. item .. ',"currency":"USD"}'`,
    answer: '"transaction_id":"([^"]+)"',
  }, perKey, db, TARGET_WRITE_PER_S);
  const sales = await checkSales(db, sale);

  // Leads: one per click, each with its own customer key, on clicks copied in SQL from one real
  // click of each program. The lead and refund pools must outlast their runs: they may be faster than sales.
  const poolPerProgram = Math.ceil(
    (settings.writePool ||
      Math.min(300_000, Math.max(2_000, sale.measured.rps * (settings.warmup + settings.duration + 1) * 4) + pacedRequests(settings))) / programCount,
  );
  const leadPools = await inParallel(programCount, 4, async (i) =>
    (await db.many<{ click_id: string }>(copies.clicks, [targets[i]!.clickIds[0], poolPerProgram])).map((r) => JSON.stringify(r.click_id)),
  );
  await settle(db, 'clicks');
  log(`  lead: ${fmt(poolPerProgram * programCount)} clicks made for leads (${poolPerProgram} per program)`);
  const lead = await phases.keyedPhase('lead', serviceUrl, servicePid, {
    path: '/api/v1/track/lead',
    keys,
    pools: leadPools,
    wrap: false,
    body: `'{"click_id":' .. item .. ',"customer_key":"bench-lead-' .. STAGE .. '-t' .. tid .. '-' .. n .. '"}'`,
    answer: '"click_id":"([^"]+)"',
  }, new Array<number>(programCount).fill(0), db, TARGET_WRITE_PER_S);
  const leads = await checkLeads(db, lead);

  // Refunds: each paid sale once, with its program's key (the sales' limit bucket).
  const refundPools = await inParallel(programCount, 4, async (i) =>
    (await db.many<{ transaction_id: string }>(copies.sales, [targets[i]!.programId, poolPerProgram])).map((r) => JSON.stringify(r.transaction_id)),
  );
  await settle(db, 'sale_events', 'commissions', 'platform_fees');
  log(`  refund: ${fmt(poolPerProgram * programCount)} paid sales made to refund (${poolPerProgram} per program)`);
  const refund = await phases.keyedPhase('refund', serviceUrl, servicePid, {
    path: '/api/v1/track/refund',
    keys,
    pools: refundPools,
    wrap: false,
    body: `'{"transaction_id":' .. item .. '}'`,
    answer: '"transaction_id":"([^"]+)"',
  }, perKey, db, TARGET_WRITE_PER_S);
  const refunds = await checkRefunds(db, refund);
  return { sale, lead, refund, sales, leads, refunds, perKey, programCount };
}
