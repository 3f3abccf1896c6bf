/**
 * The commission sweeper (docs/decisions/ledger.md, "Holds"): a stream-side processor, started
 * wherever the relay runs (embedded and distributed), that writes down the end of commission holds.
 * Every read already shows a pending commission past its available_at as approved; the sweeper makes
 * that durable and emits commission.approved, through approve_due_commissions (SQL), which closes each
 * due hold once (row locks, SKIP LOCKED between sweepers) in batches of `batch`: a commission still
 * pending is approved, one reversed, held or decided meanwhile keeps its state.
 */
import type { Logger } from 'pino';
import { sql, type Database } from '../core/db.js';
import type { RunningService } from './services.js';

const sweep = sql('sweeper.approve_due', `SELECT approve_due_commissions($1, NULL) AS closed`);

export interface SweeperDeps {
  db: Database;
  logger: Logger;
  /** Between sweeps (default 30 s): a hold ends at a time the reads already honour, so this is only how soon the event follows. */
  intervalMs?: number;
  /** Commissions per transaction (default 1,000). */
  batch?: number;
  /** After each sweep: how many holds it closed. */
  onSweep?(closed: number): void;
}

/** One sweep: batches until fewer than `batch` were due; how many holds it closed. */
export async function sweepOnce(db: Database, batch = 1_000): Promise<number> {
  let total = 0;
  for (;;) {
    const closed = Number((await db.one<{ closed: number }>(sweep, [batch]))!.closed);
    total += closed;
    if (closed < batch) return total;
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
        (closed) => {
          if (closed > 0) deps.logger.info({ closed }, 'commission holds ended');
          deps.onSweep?.(closed);
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
