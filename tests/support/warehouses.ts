/**
 * The warehouse side of a suite, on both modes: chDB in this process (a directory of its own), and
 * the ClickHouse HTTP server of CLICKHOUSE_TEST_URL (a database of its own, ats_test_<hex>, dropped
 * afterwards), so the same test runs on the embedded warehouse and on the distributed one.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from '../../core/db.js';
import { CLICKHOUSE_MIGRATIONS_DIR, migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { clickhouseTestUrl } from './clickhouse-server.js';

export type WarehouseKind = 'chdb' | 'http';

/** chDB always; the ClickHouse server too when CLICKHOUSE_TEST_URL is set (required in CI). */
export function warehouseKinds(): WarehouseKind[] {
  return clickhouseTestUrl() ? ['chdb', 'http'] : ['chdb'];
}

export interface TestWarehouse {
  kind: WarehouseKind;
  warehouse: Warehouse;
  /** The server's URL with this warehouse's database (http only): for processes of their own. */
  url: string | undefined;
  /**
   * Stops background merges of this warehouse's tables, so redelivered duplicates stay rows, as
   * they may at any moment on a real server (only FINAL and distinct counts keep them from
   * counting twice). On the server only this database's tables: others' tests share it.
   */
  stopMerges(): Promise<void>;
  drop(): Promise<void>;
}

const TEST_DATABASE = /^ats_test_[a-z0-9_]+$/;

const mergeTreeTables = sql(
  't.warehouse_merge_tree_tables',
  `SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree'`,
);

/**
 * The migrations with the analytics views in `<database>_analytics` instead of `analytics`: that
 * database is one per server (the analyst user's grant names it), and the views of a test's
 * database must neither replace nor follow those of another.
 */
async function migrationsFor(database: string, dir: string): Promise<string> {
  for (const file of await readdir(CLICKHOUSE_MIGRATIONS_DIR)) {
    if (!file.endsWith('.sql')) continue;
    const text = await readFile(join(CLICKHOUSE_MIGRATIONS_DIR, file), 'utf8');
    await writeFile(join(dir, file), text.replace(/\banalytics\./g, `${database}_analytics.`).replace(/\bDATABASE IF NOT EXISTS analytics\b/g, `DATABASE IF NOT EXISTS ${database}_analytics`));
  }
  return dir;
}

async function serverWarehouse(base: string): Promise<TestWarehouse> {
  const database = `ats_test_${randomBytes(6).toString('hex')}`;
  const admin = await openWarehouse({ kind: 'http', url: base });
  const dir = await mkdtemp(join(tmpdir(), 'ats-warehouse-'));
  let warehouse: Warehouse | undefined;
  const drop = async () => {
    if (!TEST_DATABASE.test(database)) throw new Error(`refusing to drop ${database}`);
    await warehouse?.close();
    await admin.command(sql('t.warehouse_drop_views', `DROP DATABASE IF EXISTS ${database}_analytics SYNC`));
    await admin.command(sql('t.warehouse_drop', `DROP DATABASE IF EXISTS ${database} SYNC`));
    await admin.close();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await admin.command(sql('t.warehouse_create', `CREATE DATABASE ${database}`));
    const url = new URL(base);
    url.pathname = `/${database}`;
    warehouse = await openWarehouse({ kind: 'http', url: url.toString() });
    await migrateWarehouse(warehouse, await migrationsFor(database, dir));
    const opened = warehouse;
    return {
      kind: 'http',
      warehouse: opened,
      url: url.toString(),
      stopMerges: async () => {
        for (const { name } of await opened.query<{ name: string }>(mergeTreeTables)) {
          await opened.command(sql('t.warehouse_stop_merges_table', `SYSTEM STOP MERGES ${database}.${name}`));
        }
      },
      drop,
    };
  } catch (error) {
    await drop().catch(() => undefined);
    throw error;
  }
}

/** A migrated warehouse of the given kind, for this test file alone. */
export async function createTestWarehouse(kind: WarehouseKind): Promise<TestWarehouse> {
  if (kind === 'http') return serverWarehouse(clickhouseTestUrl()!);
  const dir = await mkdtemp(join(tmpdir(), 'ats-warehouse-'));
  const warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
  try {
    await migrateWarehouse(warehouse);
  } catch (error) {
    await warehouse.close();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    kind,
    warehouse,
    url: undefined,
    stopMerges: () => warehouse.command(sql('t.warehouse_stop_merges', 'SYSTEM STOP MERGES')),
    drop: async () => {
      await warehouse.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
