import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { sql } from './sql.js';
import type { Warehouse } from './warehouse.js';

export const CLICKHOUSE_MIGRATIONS_DIR = fileURLToPath(new URL('../schemas/clickhouse/', import.meta.url));

const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;

const q = {
  createTable: sql(
    'warehouse_migrations.create_table',
    `CREATE TABLE IF NOT EXISTS schema_migrations (
       version UInt32,
       name String,
       applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
     ) ENGINE = ReplacingMergeTree ORDER BY version`,
  ),
  applied: sql('warehouse_migrations.applied', `SELECT DISTINCT version FROM schema_migrations`),
  record: sql(
    'warehouse_migrations.record',
    `INSERT INTO schema_migrations (version, name) VALUES ({version:UInt32}, {name:String})`,
  ),
};

/** The statements of a DDL file: split at a `;` that ends a line; comment-only pieces dropped. */
export function statements(text: string): string[] {
  return text
    .split(/;[ \t]*(?:\r?\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s.split('\n').some((line) => line.trim() !== '' && !line.trim().startsWith('--')));
}

/**
 * Applies the numbered ClickHouse DDL files not yet recorded in schema_migrations, in order, one
 * statement per call (a ClickHouse server takes one statement per HTTP request). ClickHouse DDL is
 * not transactional, so every statement is written to be re-run (IF NOT EXISTS): a start that
 * fails half-way, or two loaders starting at once, re-apply safely. Returns the files applied.
 * `upTo` stops after that version (a benchmark fills the tables an older version had, then upgrades).
 */
export async function migrateWarehouse(warehouse: Warehouse, dir = CLICKHOUSE_MIGRATIONS_DIR, options: { upTo?: number } = {}): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => MIGRATION_FILE.test(f)).sort();
  await warehouse.command(q.createTable);
  const done = new Set((await warehouse.query<{ version: number }>(q.applied)).map((r) => Number(r.version)));
  const applied: string[] = [];
  for (const file of files) {
    const [, version, name] = MIGRATION_FILE.exec(file)!;
    if (done.has(Number(version)) || Number(version) > (options.upTo ?? Infinity)) continue;
    const text = await readFile(`${dir}/${file}`, 'utf8');
    for (const [i, statement] of statements(text).entries()) {
      await warehouse.command(sql(`warehouse_migration.${version}.${i + 1}`, statement));
    }
    await warehouse.command(q.record, { version: Number(version), name });
    applied.push(file);
  }
  return applied;
}
