/**
 * The performance rollup (schemas/clickhouse/0003_performance_rollup.sql): the loader writes one
 * fact per counted entity, then recomputes the hours its batch touched. Recomputing is exact
 * whatever was delivered before and idempotent, so redelivered events never count twice.
 */
import { createHash } from 'node:crypto';
import { sql } from '../../core/sql.js';
import { TabSeparatedWriter, type Warehouse } from '../../core/warehouse.js';
import type { Row } from './field-readers.js';
import type { InsertToken } from './insert-tokens.js';

/**
 * A performance fact (0003_performance_rollup.sql): an entity a dashboard figure counts, at the
 * hour it counts in, and whether it counts now. A refund's fact has no hour yet: the load's facts
 * take it, and the sale's amount and currency, from sales_current (collectFacts); its cents are the
 * part refunded so far (0 for a full refund, which counts no more), which is taken off the amount.
 */
export interface Fact extends Row {
  program_id: number;
  hour: string | null;
  metric: 'clicks' | 'leads' | 'conversions' | 'sales' | 'commissions' | 'partners';
  entity: string;
  currency: string;
  cents: number;
  counts: boolean;
  version: number;
}

export const FACTS = 'performance_facts';

type FactFields = Pick<Fact, 'program_id' | 'hour' | 'metric' | 'entity' | 'counts' | 'version'> & Partial<Pick<Fact, 'currency' | 'cents'>>;

/** A mapper's fact row; currency and cents default to none (a literal, not a spread: mappers.ts says why). */
export const fact = (f: FactFields): [string, Fact] => [
  FACTS,
  { program_id: f.program_id, hour: f.hour, metric: f.metric, entity: f.entity, currency: f.currency ?? '', cents: f.cents ?? 0, counts: f.counts, version: f.version },
];

/** A program's hour, `YYYY-MM-DD hh:00:00` in UTC. */
export interface RollupKey {
  program_id: number;
  hour: string;
}

/*
 * Recomputes every (program, hour) of the given programs and hours: a superset of the hours a
 * batch touched, which is harmless (a recompute is exact) and keeps the filter on the sort key.
 * The computation is the view of 0003_performance_rollup.sql (FINAL over the facts), which the
 * migration's backfill uses too.
 */
const recomputeSql = sql(
  'rollup.recompute_hours',
  `INSERT INTO performance_hourly
   SELECT * FROM performance_hours_computed
    WHERE program_id IN {programs:Array(Int64)} AND hour IN {hours:Array(DateTime('UTC'))}`,
);

async function recomputeHours(warehouse: Warehouse, keys: readonly RollupKey[]): Promise<void> {
  if (keys.length === 0) return;
  const programs = [...new Set(keys.map((k) => k.program_id))];
  const hours = [...new Set(keys.map((k) => k.hour))];
  await warehouse.command(recomputeSql, { programs, hours });
}

/**
 * A refund or chargeback (sale.status_changed) does not repeat the sale's time, amount or
 * currency: the sale's fact is completed from sales_current, where its sale.recorded (same Kafka
 * key, so an earlier offset or the same batch) has already been loaded.
 */
const saleFactsSql = sql(
  'rollup.sale_facts',
  `SELECT sale_id, program_id, toString(toStartOfHour(assumeNotNull(occurred_at))) AS hour, currency, amount_cents
     FROM sales_current FINAL
    WHERE program_id IN {programs:Array(Int64)} AND sale_id IN {sales:Array(UUID)} AND occurred_at IS NOT NULL`,
);

interface SaleFact {
  sale_id: string;
  program_id: number;
  hour: string;
  currency: string;
  amount_cents: number;
}

async function saleFacts(warehouse: Warehouse, sales: readonly { program_id: number; sale_id: string }[]): Promise<SaleFact[]> {
  if (sales.length === 0) return [];
  return warehouse.query<SaleFact>(saleFactsSql, {
    programs: [...new Set(sales.map((s) => s.program_id))],
    sales: [...new Set(sales.map((s) => s.sale_id))],
  });
}

/**
 * The facts of one load: placed ones are encoded as they come, with the hours they touch; a
 * refund's waits for its sale's hour, amount and currency. write() completes the refunds' from
 * sales_current, inserts every fact at once, then recomputes the hours they touch.
 */
export function collectFacts() {
  const placed = new TabSeparatedWriter();
  /** Keyed by program and hour. */
  const hours = new Map<string, RollupKey>();
  const refunds: Fact[] = [];

  function add(f: Fact): void {
    if (f.hour === null) {
      refunds.push(f);
      return;
    }
    hours.set(`${f.program_id} ${f.hour}`, { program_id: f.program_id, hour: f.hour });
    placed.add(placed.encode(f));
  }

  async function write(warehouse: Warehouse, token: InsertToken): Promise<void> {
    let completedHash = '';
    if (refunds.length) {
      const sales = new Map((await saleFacts(warehouse, refunds.map((f) => ({ program_id: f.program_id, sale_id: f.entity })))).map((s) => [s.sale_id, s]));
      // A refund of a sale the warehouse never had (dead-lettered) takes nothing away.
      const completed = refunds.flatMap((f) => {
        const sale = sales.get(f.entity);
        return sale ? [{ ...f, hour: sale.hour, currency: sale.currency, cents: Number(sale.amount_cents) - f.cents }] : [];
      });
      if (completed.length) {
        // What was looked up is part of the token, so a retry that finds more is never taken for a duplicate.
        completedHash = createHash('sha256').update(JSON.stringify(completed)).digest('hex').slice(0, 16);
        for (const f of completed) add(f);
      }
    }
    // One insert (one part) for all of them: each insert costs a part's files whatever its size.
    if (placed.count) await warehouse.insert(FACTS, placed.finish(), { dedupToken: token(FACTS, completedHash) });
    await recomputeHours(warehouse, [...hours.values()]);
  }

  return { add, write };
}
