/**
 * Where a run's loader writes: chDB in a directory of the run (read afterwards by a child process,
 * chDB binding one directory per process), or a database of the run on the ClickHouse server over
 * HTTP (bench/clickhouse-server.ts; read from this process). The loader child is pointed at it by
 * its environment, as the service is configured.
 */
import { join } from 'node:path';
import { openWarehouse } from '../../core/warehouse.js';
import { serverDatabase } from '../clickhouse-server.js';
import type { Bench } from './lifecycle.js';
import { readWarehouse } from './services.js';
import { readClicks, readSummary, type TableSummary } from './warehouse-figures.js';

export type WarehouseKind = 'chdb' | 'http';
export const WAREHOUSE_KINDS = ['chdb', 'http'] as const;

export const warehouseLabel = (kind: WarehouseKind) => (kind === 'chdb' ? 'chDB' : 'ClickHouse HTTP');

export interface RunWarehouse {
  kind: WarehouseKind;
  /** Processes whose CPU is the warehouse's beside the loader's: the server's, over HTTP. */
  cpuPids(): Record<string, number | undefined>;
  /** For the loader child: DATA_DIR (chDB under it) or CLICKHOUSE_URL. */
  env: Record<string, string>;
  summary(): Promise<TableSummary[]>;
  clicks(): Promise<Array<[string, number]>>;
}

async function fromServer<T>(url: string, read: (w: Awaited<ReturnType<typeof openWarehouse>>) => Promise<T>): Promise<T> {
  const warehouse = await openWarehouse({ kind: 'http', url });
  try {
    return await read(warehouse);
  } finally {
    await warehouse.close();
  }
}

/** A warehouse of its own for one run; `name` is unique within the benchmark (letters, digits, _). */
export async function runWarehouse(bench: Bench, kind: WarehouseKind, name: string): Promise<RunWarehouse> {
  if (kind === 'chdb') {
    const dir = join(bench.run.tmpDir, name);
    return {
      kind,
      env: { DATA_DIR: dir },
      cpuPids: () => ({}),
      summary: () => readWarehouse<TableSummary[]>(bench, join(dir, 'ch'), 'summary'),
      clicks: () => readWarehouse<Array<[string, number]>>(bench, join(dir, 'ch'), 'clicks'),
    };
  }
  const server = bench.run.clickhouse;
  if (!server) throw new Error('no ClickHouse server for this run (BENCH_WAREHOUSES has no http)');
  const url = await serverDatabase(server.url, `${bench.run.prefix}${name}`);
  return { kind, env: { CLICKHOUSE_URL: url }, cpuPids: () => ({ clickhouse: server.pid() }), summary: () => fromServer(url, readSummary), clicks: () => fromServer(url, readClicks) };
}
