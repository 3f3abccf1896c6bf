/**
 * What a pipeline run put in its warehouse, from the timestamps it writes anyway: per event table
 * the rows, the distinct events and the first and last `loaded_at`, or every click with its
 * `loaded_at`. loaded_at is `DEFAULT now64(3)` (schemas/clickhouse/0001): the time the loader's
 * insert reached the engine, in milliseconds, on the same clock as the benchmark (the server runs
 * on this machine).
 */
import { sql } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
// The loader's event tables (one per event type); the current-state tables hold no loaded_at.
import { EVENT_TABLES } from '../../processors/loader/mappers.js';

export interface TableSummary {
  table: string;
  rows: number;
  events: number;
  firstMs: number | null;
  lastMs: number | null;
  /** Events whose row was inserted after the run's first insert (any table): the rate's numerator. */
  afterFirst: number;
}

// Table names come from the loader's fixed list, never from input.
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

/** Per event table: rows, distinct events, first and last loaded_at, events after the run's first insert. */
export async function readSummary(warehouse: Warehouse): Promise<TableSummary[]> {
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
  return tables;
}

/** Every click id with the time its row was inserted. */
export async function readClicks(warehouse: Warehouse): Promise<Array<[string, number]>> {
  const rows = await warehouse.query<{ id: string; ms: number }>(clicksQuery);
  return rows.map((r) => [r.id, Number(r.ms)]);
}
