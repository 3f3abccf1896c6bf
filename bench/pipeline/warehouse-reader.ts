/**
 * The pipeline benchmark's warehouse reader, run as a child process after the loader has stopped:
 * chDB binds one data directory per process, so each run's directory is read by a process of its
 * own. Writes one JSON document to <out-file>.
 *
 *   tsx bench/pipeline/warehouse-reader.ts <chdb-dir> summary <out-file>   per event table: rows, distinct
 *                                                                   events, first and last loaded_at
 *   tsx bench/pipeline/warehouse-reader.ts <chdb-dir> clicks <out-file>    every click_id with its loaded_at
 *
 * loaded_at is `DEFAULT now64(3)` (schemas/clickhouse/0001): the time the loader's insert reached
 * the engine, in milliseconds, on the same clock as the benchmark.
 */
import { writeFile } from 'node:fs/promises';
import { sql } from '../../core/db.js';
import { openWarehouse } from '../../core/warehouse.js';

/** The event tables (one per event type); the current-state tables hold no loaded_at. */
const EVENT_TABLES = [
  'click_recorded',
  'customer_changed',
  'sale_recorded',
  'sale_status_changed',
  'commission_created',
  'commission_reversed',
  'platform_fee_created',
  'platform_fee_reversed',
  'partner_program_changed',
  'test_event_logged',
  'sale_partially_refunded',
  'commission_adjusted',
  'platform_fee_adjusted',
] as const;

export interface TableSummary {
  table: string;
  rows: number;
  events: number;
  firstMs: number | null;
  lastMs: number | null;
  /** Events whose row was inserted after the run's first insert (any table): the rate's numerator. */
  afterFirst: number;
}

// Table names come from the fixed list above, never from input.
const summaryQuery = (table: string) =>
  sql(
    `bench.pipeline_summary_${table}`,
    `SELECT count() AS rows, uniqExact(event_id) AS events,
            if(count() = 0, NULL, toUnixTimestamp64Milli(min(loaded_at))) AS firstMs,
            if(count() = 0, NULL, toUnixTimestamp64Milli(max(loaded_at))) AS lastMs
       FROM ${table}`,
  );
const afterQuery = (table: string) =>
  sql(
    `bench.pipeline_after_${table}`,
    `SELECT uniqExactIf(event_id, toUnixTimestamp64Milli(loaded_at) > {first:Int64}) AS n FROM ${table}`,
  );
const clicksQuery = sql(
  'bench.pipeline_clicks',
  `SELECT click_id AS id, toUnixTimestamp64Milli(min(loaded_at)) AS ms FROM click_recorded GROUP BY click_id`,
);

async function main() {
  const [dir, mode, out] = process.argv.slice(2);
  if (!dir || !out || (mode !== 'summary' && mode !== 'clicks')) {
    throw new Error('usage: tsx bench/pipeline/warehouse-reader.ts <chdb-dir> summary|clicks <out-file>');
  }
  const warehouse = await openWarehouse({ kind: 'chdb', path: dir });
  try {
    if (mode === 'clicks') {
      const rows = await warehouse.query<{ id: string; ms: number }>(clicksQuery);
      await writeFile(out, JSON.stringify(rows.map((r) => [r.id, Number(r.ms)])));
      return;
    }
    const tables: TableSummary[] = [];
    for (const table of EVENT_TABLES) {
      const [row] = await warehouse.query<{ rows: number; events: number; firstMs: number | null; lastMs: number | null }>(summaryQuery(table));
      tables.push({ table, rows: Number(row!.rows), events: Number(row!.events), firstMs: row!.firstMs, lastMs: row!.lastMs, afterFirst: 0 });
    }
    const firsts = tables.map((t) => t.firstMs).filter((v): v is number => v !== null);
    if (firsts.length) {
      const first = Math.min(...firsts);
      for (const t of tables) {
        if (t.rows === 0) continue;
        const [row] = await warehouse.query<{ n: number }>(afterQuery(t.table), { first });
        t.afterFirst = Number(row!.n);
      }
    }
    await writeFile(out, JSON.stringify(tables));
  } finally {
    await warehouse.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
