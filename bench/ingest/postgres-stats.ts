/**
 * What PostgreSQL spent during a measured run: the cluster's WAL counters (commit cost), the bench
 * database's transactions (round trips) and its backends' CPU time.
 */
import { sql, type Database } from '../../core/db.js';
import { log } from '../output.js';
import { processCpuMicros } from '../setup.js';

export interface WalStats {
  records: number;
  bytes: number;
  writes: number;
  syncs: number;
  /** The bench database's transactions: each statement outside a transaction is one (round trips). */
  xacts: number;
}

const walStats = sql(
  'bench.wal_stats',
  `SELECT wal_records AS records, wal_bytes AS bytes, wal_write AS writes, wal_sync AS syncs,
          (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()) AS xacts
     FROM pg_stat_wal`,
);

const benchBackends = sql('bench.backends', `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`);

const checkpointNow = sql('bench.checkpoint', 'CHECKPOINT');

/** CPU time (µs) of the bench database's server processes: the service's pool and the bench's own (idle while it measures). */
export async function backendCpu(db: Database | undefined): Promise<Map<number, number> | undefined> {
  if (!db) return undefined;
  const rows = await db.many<{ pid: number }>(benchBackends).catch(() => []);
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    const micros = processCpuMicros(pid);
    if (micros !== undefined) cpu.set(pid, micros);
  }
  return cpu.size ? cpu : undefined;
}

/** CPU the backends seen before used since; a backend that ended meanwhile is not counted (the pool keeps its connections). */
export function backendCpuSince(before: Map<number, number> | undefined): number | undefined {
  if (!before) return undefined;
  let used = 0;
  for (const [pid, micros] of before) used += (processCpuMicros(pid) ?? micros) - micros;
  return used;
}

/**
 * Every phase starts right after a checkpoint. A run writes about a gigabyte of WAL, and with the
 * default max_wal_size PostgreSQL starts a checkpoint every half gigabyte or so, wherever in the run
 * that falls: the phase it lands in pays for a burst of full-page images, and run-to-run figures
 * then differ by which phase that was. From a checkpoint of its own, each phase pays that cost at
 * its start (in its warm-up) and no WAL-triggered one falls inside it. Needs a superuser or
 * pg_checkpoint (PostgreSQL 15); without, the phase runs as is and the report says so.
 */
export async function checkpoint(db: Database | undefined): Promise<void> {
  if (!db) return;
  await db.many(checkpointNow).catch((error: unknown) => log(`  CHECKPOINT refused (${String(error)}): a WAL-triggered checkpoint may fall inside this phase`));
}

/** Cluster-wide WAL counters (PostgreSQL 14+); undefined where the view is missing. */
export async function walSnapshot(db: Database | undefined): Promise<WalStats | undefined> {
  if (!db) return undefined;
  return db.one<WalStats>(walStats).catch(() => undefined);
}

export function walSince(before: WalStats | undefined, after: WalStats | undefined): WalStats | undefined {
  if (!before || !after) return undefined;
  return {
    records: after.records - before.records,
    bytes: after.bytes - before.bytes,
    writes: after.writes - before.writes,
    syncs: after.syncs - before.syncs,
    xacts: after.xacts - before.xacts,
  };
}
