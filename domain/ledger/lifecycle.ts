/**
 * The commission lifecycle (partner-program.md, "Commission lifecycle"; docs/decisions/ledger.md):
 * pending until the program's hold ends (then approved, visible at once in every read), held by a
 * fraud rule, approved, processing in a payout, paid, reversed. The moves live in SQL
 * (schemas/postgres/functions/): decide_commission for an owner's approval or rejection,
 * approve_due_commissions for the hold's end, create_payouts and settle_payout for payouts, and
 * record_refund / record_partial_refund for refunds.
 */
import { sql, type Database, type Queryable } from '../../core/db.js';
import type { CommissionStatus } from '../../schemas/event-contract.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { refused } from '../errors.js';

export type { CommissionStatus };

/**
 * A commission as the money routes show it: `status` is the state every read shows (commission_state:
 * a hold that ended reads approved; an approved commission in a pending payout reads processing), and
 * `payout_id` the payout that covers it (pending or paid).
 */
export interface CommissionView {
  id: string;
  sale_id: string;
  partner_id: number;
  amount_minor: number;
  currency: string;
  status: CommissionStatus;
  created_at: Date;
  available_at: Date;
  approved_at: Date | null;
  paid_at: Date | null;
  reversed_at: Date | null;
  payout_id: string | null;
  status_reason: string | null;
  /** The commission rule version that computed it (issue 30; commission_rule_versions.id). */
  rule_version: number | null;
}

/** The columns of CommissionView, `c` being commissions. */
export const COMMISSION_COLUMNS = `c.id, c.sale_id, c.partner_id, c.amount_cents AS amount_minor, c.currency,
  commission_state(c) AS status, c.created_at, c.available_at, c.approved_at, c.paid_at, c.reversed_at,
  COALESCE(c.payout_id, CASE WHEN c.status = 'approved' THEN commission_payout(c) END) AS payout_id, c.status_reason, c.rule_version`;

const q = {
  decide: sql('ledger.decide_commission', `SELECT decide_commission($1, $2::uuid, $3, $4) AS result`),
  one: sql('ledger.commission', `SELECT ${COMMISSION_COLUMNS} FROM commissions c WHERE c.id = $2::uuid AND c.program_id = $1`),
  // The commission before a decision, locked, for the decision's audit entry.
  lock: sql('ledger.commission_lock', `SELECT id FROM commissions WHERE id = $2::uuid AND program_id = $1 FOR UPDATE`),
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** An id that is not a uuid names no commission or payout: the same refusal as an unknown one, and no query. */
export const isUuid = (id: string) => UUID.test(id);

export const commissionView = (row: CommissionView): CommissionView => ({
  ...row,
  partner_id: Number(row.partner_id),
  amount_minor: Number(row.amount_minor),
});

/** One commission of the program, as reads show it. */
export async function getCommission(db: Queryable, programId: number, commissionId: string): Promise<CommissionView> {
  const row = isUuid(commissionId) ? await db.one<CommissionView>(q.one, [programId, commissionId]) : undefined;
  if (!row) throw refused({ reason: 'commission_not_found' });
  return commissionView(row);
}

type Decided = { outcome: 'ok'; commission: { id: string } } | { outcome: 'not_found' } | { outcome: 'conflict'; state: string };

/**
 * An owner approves (pending or held) or rejects (pending, held or approved) a commission, with a
 * reason. Refusals: commission_not_found (unknown, or another program's), commission_state_conflict
 * (processing, paid, reversed, or approving an approved one).
 */
export async function decideCommission(
  db: Database,
  programId: number,
  commissionId: string,
  decision: 'approve' | 'reject',
  reason: string,
  by: AuditContext,
): Promise<CommissionView> {
  if (!isUuid(commissionId)) throw refused({ reason: 'commission_not_found' });
  return db.transaction(async (tx) => {
    if (!(await tx.one(q.lock, [programId, commissionId]))) throw refused({ reason: 'commission_not_found' });
    const before = await getCommission(tx, programId, commissionId);
    const row = await tx.one<{ result: Decided }>(q.decide, [programId, commissionId, decision, reason]);
    const decided = row!.result;
    if (decided.outcome === 'not_found') throw refused({ reason: 'commission_not_found' });
    if (decided.outcome === 'conflict') throw refused({ reason: 'commission_state_conflict', state: decided.state, decision });
    const after = await getCommission(tx, programId, commissionId);
    const action = decision === 'approve' ? 'commission.approved' : 'commission.rejected';
    await recordAudit(tx, by, { action, programId, target: { type: 'commission', id: commissionId }, before, after: { ...after, reason } });
    return after;
  });
}

