/**
 * Payouts (partner-program.md, "Payouts"; docs/decisions/ledger.md): a run makes one payout per
 * partner and currency whose approved balance as of the cutoff reaches the program's minimum
 * (create_payouts.sql); a pending payout is marked paid or canceled (settle_payout.sql). Both run
 * under the program's payout lock, so concurrent runs never cover a commission twice.
 */
import { sql, type Database, type Queryable } from '../../core/db.js';
import type { PayoutPayload, PayoutStatus } from '../../schemas/event-contract.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { refused } from '../errors.js';
import { withPartnerName } from './entries.js';
import { isUuid } from './lifecycle.js';

export type { PayoutStatus };

/** A row of payouts: the payout events' fields, under the row's own id. */
export type Payout = Omit<PayoutPayload, 'payout_id'> & { id: string };

const PAYOUT_COLUMNS = `p.id, p.program_id, p.partner_id, p.currency, p.amount_minor, p.status, p.cutoff, p.commission_ids, p.clawback_entry_ids,
  p.manual_entry_ids, p.reference, p.created_at, p.paid_at, p.canceled_at`;

const q = {
  create: sql('payouts.create', `SELECT create_payouts($1, $2::timestamptz, $3) AS result`),
  settle: sql('payouts.settle', `SELECT settle_payout($1, $2::uuid, $3, $4) AS result`),
  byIds: sql('payouts.by_ids', `SELECT ${PAYOUT_COLUMNS} FROM payouts p WHERE p.program_id = $1 AND p.id = ANY ($2::uuid[]) ORDER BY p.partner_id, p.currency`),
  one: sql('payouts.one', `SELECT ${PAYOUT_COLUMNS} FROM payouts p WHERE p.program_id = $1 AND p.id = $2::uuid`),
  // The payout before it is settled, locked, for the audit entry.
  lock: sql('payouts.lock', `SELECT ${PAYOUT_COLUMNS} FROM payouts p WHERE p.program_id = $1 AND p.id = $2::uuid FOR UPDATE`),
  page: sql(
    'payouts.page',
    `${withPartnerName(`SELECT ${PAYOUT_COLUMNS}, p.created_at::text AS cursor_at
       FROM payouts p
      WHERE p.program_id = $1 AND ($2::text IS NULL OR p.status = $2) AND ($3::bigint IS NULL OR p.partner_id = $3)
        AND ($4::timestamptz IS NULL OR (p.created_at, p.id::text) > ($4::timestamptz, $5::text))
      ORDER BY p.created_at, p.id::text
      LIMIT $6`)} ORDER BY page.created_at, page.id::text`,
  ),
};

export const payoutView = (p: Payout): Payout => ({
  ...p,
  program_id: Number(p.program_id),
  partner_id: Number(p.partner_id),
  amount_minor: Number(p.amount_minor),
  clawback_entry_ids: p.clawback_entry_ids.map(Number),
  manual_entry_ids: p.manual_entry_ids.map(Number),
});

export interface PayoutRun {
  runId: string;
  payouts: Payout[];
  /** True when the Idempotency-Key named an earlier run: its payouts, nothing new. */
  replayed: boolean;
}

/**
 * A payout run with this cutoff (not in the future: the route checks it against its clock). `key`:
 * the request's Idempotency-Key; the same key answers the first run again.
 */
/** A run, with an audit entry per payout it made (a replayed run makes none, and records none). */
export async function createPayouts(db: Database, programId: number, cutoff: Date, key: string | undefined, by: AuditContext): Promise<PayoutRun> {
  return db.transaction(async (tx) => {
    const run = (await tx.one<{ result: { run_id: string; payout_ids: string[]; replayed: boolean } }>(q.create, [programId, cutoff.toISOString(), key ?? null]))!
      .result;
    const rows = run.payout_ids.length ? await tx.many<Payout>(q.byIds, [programId, run.payout_ids]) : [];
    const payouts = rows.map(payoutView);
    if (!run.replayed) {
      for (const payout of payouts) {
        await recordAudit(tx, by, { action: 'payout.created', programId, target: { type: 'payout', id: payout.id }, before: null, after: { ...payout, run_id: run.run_id } });
      }
    }
    return { runId: run.run_id, payouts, replayed: run.replayed };
  });
}

export async function getPayout(db: Queryable, programId: number, payoutId: string): Promise<Payout> {
  const row = isUuid(payoutId) ? await db.one<Payout>(q.one, [programId, payoutId]) : undefined;
  if (!row) throw refused({ reason: 'payout_not_found' });
  return payoutView(row);
}

export interface PayoutFilter {
  status?: PayoutStatus;
  partnerId?: number;
  after?: { at: string; id: string };
  limit: number;
}

/** A payout of the list: with its partner's name, which the console shows. */
export type ListedPayout = Payout & { partner_name: string | null };

/** A program's payouts, oldest first, a page at a time. */
export async function payoutsPage(db: Queryable, programId: number, f: PayoutFilter): Promise<{ items: ListedPayout[]; next: { at: string; id: string } | undefined }> {
  const rows = await db.many<ListedPayout & { cursor_at: string }>(q.page, [
    programId, f.status ?? null, f.partnerId ?? null, f.after?.at ?? null, f.after?.id ?? null, f.limit + 1,
  ]);
  const kept = rows.slice(0, f.limit);
  const last = kept.at(-1);
  return {
    items: kept.map(({ cursor_at: _at, partner_name, ...p }) => ({ ...payoutView(p), partner_name })),
    next: rows.length > f.limit && last ? { at: last.cursor_at, id: last.id } : undefined,
  };
}

type Settled = { outcome: 'ok'; payout: Payout } | { outcome: 'not_found' } | { outcome: 'conflict'; status: string };

/**
 * Marks a pending payout paid (with the reference of the money sent) or cancels it. Refusals:
 * payout_not_found, payout_state_conflict (it is not pending: paid or canceled already).
 */
export async function settlePayout(db: Database, programId: number, payoutId: string, action: 'paid' | 'canceled', reference: string | null, by: AuditContext): Promise<Payout> {
  if (!isUuid(payoutId)) throw refused({ reason: 'payout_not_found' });
  return db.transaction(async (tx) => {
    const before = await tx.one<Payout>(q.lock, [programId, payoutId]);
    if (!before) throw refused({ reason: 'payout_not_found' });
    const settled = (await tx.one<{ result: Settled }>(q.settle, [programId, payoutId, action, reference]))!.result;
    if (settled.outcome === 'not_found') throw refused({ reason: 'payout_not_found' });
    if (settled.outcome === 'conflict') throw refused({ reason: 'payout_state_conflict', status: settled.status });
    const after = await getPayout(tx, programId, payoutId);
    const target = { type: 'payout', id: payoutId };
    await recordAudit(tx, by, { action: action === 'paid' ? 'payout.paid' : 'payout.canceled', programId, target, before: payoutView(before), after });
    return after;
  });
}
