/**
 * Starting and ending a run cleanly: the relay gate (the relay's advisory lock, held by the
 * benchmark so a started relay stays idle until every process is up) and the drain (the outbox
 * relayed, the loader's group caught up).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { sql, type Database } from '../../core/db.js';
import { fmtFinite as fmt, log } from '../output.js';
import { databaseUrl } from '../setup.js';
import type { Bench } from './lifecycle.js';
import { assertRunning, type Service } from './services.js';

/** The relay's advisory lock (processors/relay.ts): held by the benchmark, it keeps a started relay idle. */
const RELAY_LOCK = 727274002;
/** Longest wait for one run to drain (relay done, loader caught up). */
export const DRAIN_TIMEOUT_MS = 10 * 60_000;

const q = {
  unrelayed: sql('bench.pipeline_unrelayed', `SELECT count(*)::int AS n FROM outbox WHERE relayed_at IS NULL`),
  reset: sql('bench.pipeline_reset', `UPDATE outbox SET relayed_at = NULL WHERE relayed_at IS NOT NULL`),
  vacuum: sql('bench.pipeline_vacuum', `VACUUM ANALYZE outbox`),
  markAll: sql('bench.pipeline_mark_all', `UPDATE outbox SET relayed_at = now() WHERE relayed_at IS NULL`),
};

export async function holdGate(bench: Bench): Promise<void> {
  const { run } = bench;
  if (!run.gate) {
    run.gate = new pg.Client({ connectionString: databaseUrl(bench.settings.adminUrl, run.dbName) });
    await run.gate.connect();
  }
  await run.gate.query('SELECT pg_advisory_lock($1)', [RELAY_LOCK]);
}

export async function releaseGate(bench: Bench): Promise<void> {
  await bench.run.gate!.query('SELECT pg_advisory_unlock($1)', [RELAY_LOCK]);
}

/** Waits until the loader's consumer group has joined (members with partitions assigned). */
export async function loaderJoined(bench: Bench, groupId: string): Promise<void> {
  const joinDeadline = Date.now() + 60_000;
  while (!(await bench.run.admin.groupStable(groupId))) {
    if (Date.now() > joinDeadline) throw new Error(`loader group ${groupId} not stable after 60 s`);
    await sleep(200);
  }
}

/** Waits until (with a relay) the outbox is relayed and (with a loader) its group has committed everything. */
export async function drain(bench: Bench, options: { relay?: Service; loader?: Service; groupId?: string; topics?: readonly string[] }): Promise<void> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  let lastReport = Date.now();
  for (;;) {
    assertRunning(options.relay, options.loader);
    const unrelayed = options.relay ? (await bench.db.one<{ n: number }>(q.unrelayed))!.n : 0;
    const lag = options.loader ? await bench.run.admin.groupLag(options.groupId!, options.topics!) : 0;
    if (unrelayed === 0 && lag === 0) return;
    if (Date.now() > deadline) throw new Error(`not drained after ${DRAIN_TIMEOUT_MS} ms: ${unrelayed} unrelayed, loader lag ${lag}`);
    if (Date.now() - lastReport > 10_000) {
      log(`    ... ${fmt(unrelayed)} unrelayed, loader lag ${fmt(lag)}`);
      lastReport = Date.now();
    }
    await sleep(250);
  }
}

/** Every event unrelayed again, for the next run over the same outbox. */
export async function resetOutbox(db: Database): Promise<void> {
  await db.many(q.reset);
  await db.many(q.vacuum);
}

export async function vacuumOutbox(db: Database): Promise<void> {
  await db.many(q.vacuum);
}

/** Whatever earlier runs left unrelayed would be relayed into the next run's topics too. */
export async function markAllRelayed(db: Database): Promise<void> {
  await db.many(q.markAll);
}
