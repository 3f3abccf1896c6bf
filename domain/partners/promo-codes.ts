/**
 * A partner's promo codes in a program (issue 31, point 4): a code unique in the program ignoring
 * case, and optionally the processor's promotion id (`promo_...`), unique in the program too. A sale
 * carrying either attributes a customer with no attribution yet to the partner
 * (schemas/postgres/functions/promo_sale_customer.sql). Codes are disabled, never deleted: the
 * audit log and the customers they attributed keep pointing at them, and a disabled code keeps its
 * name (docs/decisions/links-and-promo-codes.md).
 */
import { isUniqueViolation, sql, type Database, type Queryable } from '../../core/db.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { refused } from '../errors.js';

export interface PromoCode {
  id: number;
  partner_id: number;
  code: string;
  processor_promotion_id: string | null;
  enabled: boolean;
  created_at: Date;
}

const CODE = `id::int AS id, partner_id::int AS partner_id, code, processor_promotion_id, enabled, created_at`;

const q = {
  junction: sql(
    'promo_codes.junction',
    `SELECT pp.id FROM partner_programs pp
      WHERE pp.program_id = $1 AND pp.partner_id = $2
        AND NOT EXISTS (SELECT 1 FROM cli_test_fixtures f WHERE f.program_id = $1 AND f.partner_program_id = pp.id)`,
  ),
  list: sql('promo_codes.list', `SELECT ${CODE} FROM promo_codes WHERE program_id = $1 AND partner_id = $2 ORDER BY id`),
  insert: sql(
    'promo_codes.insert',
    `INSERT INTO promo_codes (program_id, partner_id, partner_program_id, code, processor_promotion_id) VALUES ($1, $2, $3, $4, $5)
     RETURNING ${CODE}`,
  ),
  lock: sql('promo_codes.lock', `SELECT ${CODE} FROM promo_codes WHERE id = $1 AND program_id = $2 AND partner_id = $3 FOR UPDATE`),
  set: sql('promo_codes.set_enabled', `UPDATE promo_codes SET enabled = $2, updated_at = now() WHERE id = $1`),
};

const view = (c: PromoCode): PromoCode => ({
  id: Number(c.id),
  partner_id: Number(c.partner_id),
  code: c.code,
  processor_promotion_id: c.processor_promotion_id,
  enabled: c.enabled,
  created_at: c.created_at,
});

async function junctionOf(db: Queryable, programId: number, partnerId: number): Promise<{ id: number }> {
  const junction = await db.one<{ id: number }>(q.junction, [programId, partnerId]);
  if (!junction) throw refused({ reason: 'partner_not_found' });
  return junction;
}

/** The partner's promo codes in the program, oldest first; partner_not_found when it has no record there. */
export async function listPromoCodes(db: Queryable, programId: number, partnerId: number): Promise<PromoCode[]> {
  await junctionOf(db, programId, partnerId);
  return (await db.many<PromoCode>(q.list, [programId, partnerId])).map(view);
}

export interface NewPromoCode {
  code: string;
  processorPromotionId?: string | undefined;
}

/**
 * A new code for the partner. A code any partner of the program already has, in any letter case,
 * is promo_code_taken; a promotion id already given to a code of the program, promotion_id_taken.
 * Either refusal writes nothing (the insert fails before the audit entry, in one transaction).
 */
export async function createPromoCode(db: Database, programId: number, partnerId: number, p: NewPromoCode, by: AuditContext): Promise<PromoCode> {
  try {
    return await db.transaction(async (tx) => {
      const junction = await junctionOf(tx, programId, partnerId);
      const code = view((await tx.one<PromoCode>(q.insert, [programId, partnerId, junction.id, p.code, p.processorPromotionId ?? null]))!);
      await recordAudit(tx, by, { action: 'promo_code.created', programId, target: { type: 'promo_code', id: code.id }, before: null, after: code });
      return code;
    });
  } catch (error) {
    if (isUniqueViolation(error, 'promo_codes_program_code')) throw refused({ reason: 'promo_code_taken', code: p.code });
    if (isUniqueViolation(error, 'promo_codes_program_promotion')) throw refused({ reason: 'promotion_id_taken', promotionId: p.processorPromotionId ?? '' });
    throw error;
  }
}

/** Turns a code off (it attributes nothing more) or on again; setting the state it has writes nothing. */
export async function setPromoCodeEnabled(db: Database, programId: number, partnerId: number, codeId: number, enabled: boolean, by: AuditContext): Promise<PromoCode> {
  return db.transaction(async (tx) => {
    await junctionOf(tx, programId, partnerId);
    const row = await tx.one<PromoCode>(q.lock, [codeId, programId, partnerId]);
    if (!row) throw refused({ reason: 'promo_code_not_found' });
    const before = view(row);
    if (before.enabled === enabled) return before;
    await tx.many(q.set, [codeId, enabled]);
    const after = { ...before, enabled };
    await recordAudit(tx, by, {
      action: enabled ? 'promo_code.enabled' : 'promo_code.disabled',
      programId,
      target: { type: 'promo_code', id: codeId },
      before,
      after,
    });
    return after;
  });
}
