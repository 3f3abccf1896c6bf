/**
 * How a partner is paid (partner-program.md, "Partners, applications and the portal": `paypal`
 * email, `wise` details, or `manual`), for the payout exports. Until the partner portal (issue 31)
 * lets a partner set it, an owner of a program the partner is in sets it.
 */
import { sql, type Database, type Queryable } from '../../core/db.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { requirePartner } from './entries.js';

export type PayoutMethod =
  | { method: 'paypal'; email: string }
  /** Wise's "send by email" batch: the recipient's email and account holder name; PERSON or INSTITUTION. */
  | { method: 'wise'; email: string; name: string; receiver_type: 'PERSON' | 'INSTITUTION' }
  | { method: 'manual'; note: string | null };

const q = {
  // The method before a change, locked (when there is one), for the change's audit entry.
  locked: sql('payout_methods.locked', `SELECT method, details FROM partner_payout_methods WHERE partner_id = $1 FOR UPDATE`),
  upsert: sql(
    'payout_methods.upsert',
    `INSERT INTO partner_payout_methods (partner_id, method, details) VALUES ($1, $2, $3::jsonb)
     ON CONFLICT (partner_id) DO UPDATE SET method = excluded.method, details = excluded.details, updated_at = now()`,
  ),
  get: sql('payout_methods.get', `SELECT method, details FROM partner_payout_methods WHERE partner_id = $1`),
};

const detailsOf = (m: PayoutMethod) => {
  const { method: _method, ...details } = m;
  return details;
};

/** The stored form back to the method; undefined when the partner has none. */
export function methodOf(row: { method: string | null; details: Record<string, unknown> | null }): PayoutMethod | undefined {
  if (!row.method) return undefined;
  return { method: row.method, ...(row.details ?? {}) } as PayoutMethod;
}

export async function setPayoutMethod(db: Database, programId: number, partnerId: number, method: PayoutMethod, by: AuditContext): Promise<PayoutMethod> {
  return db.transaction(async (tx) => {
    await requirePartner(tx, programId, partnerId);
    const row = await tx.one<{ method: string | null; details: Record<string, unknown> | string | null }>(q.locked, [partnerId]);
    await tx.many(q.upsert, [partnerId, method.method, JSON.stringify(detailsOf(method))]);
    // PGlite may hand jsonb back as text.
    const before = row ? methodOf({ method: row.method, details: typeof row.details === 'string' ? (JSON.parse(row.details) as Record<string, unknown>) : row.details }) : undefined;
    await recordAudit(tx, by, { action: 'payout_method.updated', programId, target: { type: 'partner', id: partnerId }, before: before ?? null, after: method });
    return method;
  });
}

export async function getPayoutMethod(db: Queryable, programId: number, partnerId: number): Promise<PayoutMethod | undefined> {
  await requirePartner(db, programId, partnerId);
  const row = await db.one<{ method: string; details: Record<string, unknown> }>(q.get, [partnerId]);
  return row ? methodOf(row) : undefined;
}
