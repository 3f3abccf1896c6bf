/**
 * The commission sweeper (docs/decisions/ledger.md, "Holds"): a stream-side processor, started
 * wherever the relay runs (embedded and distributed), that writes down the end of commission holds.
 * Every read already shows a pending commission past its available_at as approved; the sweeper makes
 * that durable and emits commission.approved, through approve_due_commissions (SQL), which moves each
 * commission once (row locks, SKIP LOCKED between sweepers) in batches of `batch`.
 */
import type { Logger } from 'pino';
import { sql, type Database } from '../core/db.js';
import type { RunningService } from './services.js';

const sweep = sql('sweeper.approve_due', `SELECT approve_due_commissions($1, NULL) AS approved`);

export interface SweeperDeps {
  db: Database;
  logger: Logger;
  /** Between sweeps (default 30 s): a hold ends at a time the reads already honour, so this is only how soon the event follows. */
  intervalMs?: number;
  /** Commissions per transaction (default 1,000). */
  batch?: number;
  /** After each sweep: how many commissions it approved. */
  onSweep?(approved: number): void;
}

/** One sweep: batches until fewer than `batch` were due. */
export async function sweepOnce(db: Database, batch = 1_000): Promise<number> {
  let total = 0;
  for (;;) {
    const approved = Number((await db.one<{ approved: number }>(sweep, [batch]))!.approved);
    total += approved;
    if (approved < batch) return total;
  }
}

export function startCommissionSweeper(deps: SweeperDeps): RunningService {
  const intervalMs = deps.intervalMs ?? 30_000;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = sweepOnce(deps.db, deps.batch)
      .then(
        (approved) => {
          if (approved > 0) deps.logger.info({ approved }, 'commission holds ended: approved');
          deps.onSweep?.(approved);
        },
        (err: unknown) => deps.logger.error({ err }, 'commission sweep failed; retrying at the next interval'),
      )
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
