/**
 * The performance rollup (schemas/clickhouse/0003_performance_rollup.sql): the loader writes one
 * fact per counted entity, then recomputes the hours its batch touched. Recomputing is exact
 * whatever was delivered before and idempotent, so redelivered events never count twice.
 */
import { sql } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';

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

export async function recomputeHours(warehouse: Warehouse, keys: readonly RollupKey[]): Promise<void> {
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

export interface SaleFact {
  sale_id: string;
  program_id: number;
  hour: string;
  currency: string;
  amount_cents: number;
}

export async function saleFacts(warehouse: Warehouse, sales: readonly { program_id: number; sale_id: string }[]): Promise<SaleFact[]> {
  if (sales.length === 0) return [];
  return warehouse.query<SaleFact>(saleFactsSql, {
    programs: [...new Set(sales.map((s) => s.program_id))],
    sales: [...new Set(sales.map((s) => s.sale_id))],
  });
}
