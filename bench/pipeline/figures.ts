/**
 * A run's rates, from the timestamps the pipeline writes anyway: the outbox's `relayed_at` (start
 * of the relay's transaction) and the warehouse's `loaded_at` (insert time), not from polling.
 */
import { sql, type Database } from '../../core/db.js';
import type { TableSummary } from './warehouse-figures.js';

const relayed = sql(
  'bench.pipeline_relayed',
  `SELECT count(*)::int AS n, count(DISTINCT relayed_at)::int AS batches,
          (extract(epoch FROM min(relayed_at)) * 1000)::float8 AS first_ms,
          (extract(epoch FROM max(relayed_at)) * 1000)::float8 AS last_ms,
          count(*) FILTER (WHERE relayed_at = (SELECT max(relayed_at) FROM outbox))::int AS last_batch
     FROM outbox WHERE relayed_at IS NOT NULL`,
);

export interface RelayFigures {
  relayed: number;
  batches: number;
  /** Rows of every batch but the last over the time from the first batch's start to the last one's. */
  perS: number;
  firstMs: number;
  lastMs: number;
}

export async function relayFigures(db: Database): Promise<RelayFigures> {
  const r = (await db.one<{ n: number; batches: number; first_ms: number; last_ms: number; last_batch: number }>(relayed))!;
  const seconds = (r.last_ms - r.first_ms) / 1000;
  return { relayed: r.n, batches: r.batches, perS: seconds > 0 ? (r.n - r.last_batch) / seconds : Number.NaN, firstMs: r.first_ms, lastMs: r.last_ms };
}

export interface LoaderFigures {
  events: number;
  rows: number;
  /**
   * Given the time the loader joined its group: every event over the time from the join to the
   * last insert (the baseline consumer is measured the same way). Otherwise the events inserted
   * after the first insert over the time from the first insert to the last.
   */
  perS: number;
  firstMs: number;
  lastMs: number;
  byTable: TableSummary[];
}

export function loaderFigures(tables: TableSummary[], joinedAtMs?: number): LoaderFigures {
  const used = tables.filter((t) => t.rows > 0);
  const firstMs = Math.min(...used.map((t) => t.firstMs!));
  const lastMs = Math.max(...used.map((t) => t.lastMs!));
  const afterFirst = used.reduce((n, t) => n + t.afterFirst, 0);
  const events = used.reduce((n, t) => n + t.events, 0);
  return {
    events,
    rows: used.reduce((n, t) => n + t.rows, 0),
    perS: joinedAtMs !== undefined ? events / ((lastMs - joinedAtMs) / 1000) : lastMs > firstMs ? afterFirst / ((lastMs - firstMs) / 1000) : Number.NaN,
    firstMs,
    lastMs,
    byTable: tables,
  };
}

/** Every outbox event type is in the warehouse as often as in the outbox (distinct event ids). */
export function missingEvents(outbox: Map<string, number>, tables: TableSummary[]): string[] {
  const problems: string[] = [];
  for (const [eventType, n] of outbox) {
    const table = eventType.replace('.', '_');
    const found = tables.find((t) => t.table === table)?.events ?? 0;
    if (found !== n) problems.push(`${eventType}: ${n} in the outbox, ${found} in ${table}`);
  }
  return problems;
}
