/**
 * A program's money settings (partner-program.md): `commission_hold_days` (0 to 365, default 30),
 * `payout_minimum_minor` (default 5000, compared with each currency's approved balance). A change
 * applies to commissions created after it: a commission's available_at is fixed when it is created.
 */
import { sql, type Database, type Queryable } from '../../core/db.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';

export interface PayoutSettings {
  commission_hold_days: number;
  payout_minimum_minor: number;
}

const q = {
  get: sql('ledger.settings', `SELECT commission_hold_days, payout_minimum_minor FROM programs WHERE id = $1`),
  // The settings before a change, locked, for the change's audit entry.
  locked: sql('ledger.settings_locked', `SELECT commission_hold_days, payout_minimum_minor FROM programs WHERE id = $1 FOR UPDATE`),
  update: sql(
    'ledger.settings_update',
    `UPDATE programs SET commission_hold_days = COALESCE($2, commission_hold_days), payout_minimum_minor = COALESCE($3, payout_minimum_minor),
            updated_at = now()
      WHERE id = $1
      RETURNING commission_hold_days, payout_minimum_minor`,
  ),
};

const view = (r: PayoutSettings): PayoutSettings => ({ commission_hold_days: Number(r.commission_hold_days), payout_minimum_minor: Number(r.payout_minimum_minor) });

export async function payoutSettings(db: Queryable, programId: number): Promise<PayoutSettings> {
  return view((await db.one<PayoutSettings>(q.get, [programId]))!);
}

export async function updatePayoutSettings(db: Database, programId: number, change: Partial<PayoutSettings>, by: AuditContext): Promise<PayoutSettings> {
  return db.transaction(async (tx) => {
    const before = view((await tx.one<PayoutSettings>(q.locked, [programId]))!);
    const after = view((await tx.one<PayoutSettings>(q.update, [programId, change.commission_hold_days ?? null, change.payout_minimum_minor ?? null]))!);
    await recordAudit(tx, by, { action: 'program.payout_settings_updated', programId, target: { type: 'program', id: programId }, before, after });
    return after;
  });
}
