/**
 * Exports for analysts who work in pandas, DuckDB or a spreadsheet: chosen analytics views (or
 * one query) for a time range, each to a Parquet or CSV file, through the same checked, limited,
 * read-only path as `npm run sql` (any of its three targets).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { QueryLimits } from './guard.js';
import type { SqlSession } from './target.js';

/**
 * Each view with the time its range applies to (the fact's own time). Customers: when they
 * appeared (signup, else first purchase).
 */
export const EXPORT_TABLES = {
  clicks: 'clicked_at',
  customers: 'coalesce(signup_at, first_purchase_at, updated_at)',
  sales: 'occurred_at',
  refunds: 'refunded_at',
  commissions: 'created_at',
  platform_fees: 'created_at',
  partner_programs: 'created_at',
  test_events: 'logged_at',
} as const;
export type ExportTable = keyof typeof EXPORT_TABLES;

export type ExportFormat = 'parquet' | 'csv';

export interface ExportRange {
  /** Inclusive, UTC. */
  from: Date;
  /** Exclusive, UTC. */
  to: Date;
}

export interface ExportPlan {
  /** Views to export, or a query of the analyst's, which may use {from:DateTime64(6, 'UTC')} and {to:...}. */
  what: { tables: ExportTable[] } | { query: string; name: string };
  range: ExportRange;
  format: ExportFormat;
  outDir: string;
}

export interface ExportProgress {
  /** Called before and after each file: rows done so far of all rows to export. */
  (state: { file: string; doneRows: number; totalRows: number; finished: boolean }): void;
}

export interface ExportedFile {
  file: string;
  rows: number;
  bytes: number;
}

/** ClickHouse's DateTime64 text, which the {name:DateTime64(6, 'UTC')} parameters take. */
const chTime = (d: Date) => d.toISOString().replace('T', ' ').replace('Z', '');

const RANGE = `{from:DateTime64(6, 'UTC')}`;
const RANGE_END = `{to:DateTime64(6, 'UTC')}`;

function tableQuery(table: ExportTable): string {
  const time = EXPORT_TABLES[table];
  return `SELECT * FROM analytics.${table} WHERE ${time} >= ${RANGE} AND ${time} < ${RANGE_END} ORDER BY ${time}`;
}

/**
 * The engine's canonical text of an analyst's query (one statement, no trailing `;` or comment),
 * asked through the same checked path: it can then stand inside the count's subquery.
 */
async function canonical(session: SqlSession, query: string, limits: QueryLimits): Promise<string> {
  const answer = await session.run({ query: 'SELECT formatQuery({query:String}) AS query', params: { query }, format: 'jsonl' }, limits);
  return (JSON.parse(answer.toString('utf8')) as { query: string }).query;
}

export async function runExport(session: SqlSession, plan: ExportPlan, limits: QueryLimits, progress: ExportProgress = () => {}): Promise<ExportedFile[]> {
  if (!(plan.range.from < plan.range.to)) throw new Error('The range is empty: --from must be before --to');
  const params = { from: chTime(plan.range.from), to: chTime(plan.range.to) };
  const jobs =
    'tables' in plan.what
      ? plan.what.tables.map((table) => ({ name: table, query: tableQuery(table) }))
      : [{ name: plan.what.name, query: await canonical(session, plan.what.query, limits) }];
  // Counted first, so the bar knows the whole: the same checked path, a count over each query.
  const counts: number[] = [];
  for (const job of jobs) {
    const answer = await session.run({ query: `SELECT count() AS n FROM (\n${job.query}\n)`, params, format: 'jsonl' }, limits);
    counts.push(Number((JSON.parse(answer.toString('utf8')) as { n: number | string }).n));
  }
  const totalRows = counts.reduce((a, b) => a + b, 0);
  await mkdir(plan.outDir, { recursive: true });
  const files: ExportedFile[] = [];
  let doneRows = 0;
  for (const [i, job] of jobs.entries()) {
    const file = join(plan.outDir, `${job.name}.${plan.format}`);
    progress({ file, doneRows, totalRows, finished: false });
    const bytes = await session.run({ query: job.query, params, format: plan.format }, limits);
    await writeFile(file, bytes);
    doneRows += counts[i]!;
    files.push({ file, rows: counts[i]!, bytes: bytes.length });
    progress({ file, doneRows, totalRows, finished: true });
  }
  return files;
}
