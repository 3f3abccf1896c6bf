/**
 * The ClickHouse server the benchmarks measure beside chDB: BENCH_CLICKHOUSE_URL when given (its
 * default user, full rights), otherwise scripts/clickhouse-server.sh's server (clickhouse-local from
 * libchdb.so behind ClickHouse's HTTP handler, not clickhouse-server) started on a free port with
 * its data in the benchmark's temporary directory, and stopped at the end. Each run gets a database
 * of its own on it.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sql } from '../core/db.js';
import { openWarehouse } from '../core/warehouse.js';
import { freePort } from './processes.js';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../scripts/clickhouse-server.sh', import.meta.url));
const NAME = /^[a-z_][a-z0-9_]*$/;

export interface BenchClickHouse {
  /** The server, default user, no database in the path. */
  url: string;
  /** How it is described in the reports. */
  label: string;
  /** The server's process (one started here), for its CPU time: the engine's work is there, not in the loader. */
  pid(): number | undefined;
  stop(): Promise<void>;
}

export async function benchClickHouse(dataDir: string): Promise<BenchClickHouse> {
  const given = process.env.BENCH_CLICKHOUSE_URL;
  if (given) return { url: given.replace(/\/$/, ''), label: `ClickHouse over HTTP at ${new URL(given).host}`, pid: () => undefined, stop: async () => {} };
  const port = await freePort();
  const env = { ...process.env, CLICKHOUSE_HTTP_PORT: String(port), CLICKHOUSE_DATA_DIR: dataDir };
  await run('bash', [SCRIPT, 'start'], { env });
  return {
    url: `http://127.0.0.1:${port}`,
    label: 'ClickHouse over HTTP (scripts/clickhouse-server.sh: clickhouse-local from libchdb.so)',
    pid: () => {
      try {
        return Number(readFileSync(join(dataDir, 'server.pid'), 'utf8').trim()) || undefined;
      } catch {
        return undefined;
      }
    },
    stop: async () => {
      await run('bash', [SCRIPT, 'stop'], { env }).catch(() => undefined);
    },
  };
}

/** Creates the database on the server; returns the server's URL with it as the default database. */
export async function serverDatabase(server: string, name: string): Promise<string> {
  if (!NAME.test(name)) throw new Error(`not a database name: ${name}`);
  const admin = await openWarehouse({ kind: 'http', url: server });
  try {
    await admin.command(sql('bench.clickhouse_create_database', `CREATE DATABASE IF NOT EXISTS ${name}`));
  } finally {
    await admin.close();
  }
  return `${server}/${name}`;
}
