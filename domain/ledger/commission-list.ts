/**
 * A program's commissions for the console (issue 33, point 5): newest first, filtered by the state
 * every read shows (commission_state) and by partner, in cursor pages. Reads through the
 * (program_id, created_at, id) index, in the page's order (0067); the stored status narrows a
 * state filter before commission_state decides it, so a filter does not call the payout lookup
 * for every row. Each with its partner's name, which the console shows.
 */
import { sql, type Queryable } from '../../core/db.js';
import { COMMISSION_COLUMNS, commissionView, type CommissionStatus, type CommissionView } from './lifecycle.js';
import { requirePartner, withPartnerName } from './entries.js';

export interface CommissionFilter {
  status: CommissionStatus | undefined;
  partnerId: number | undefined;
  /** The last item of the previous page: its created_at as Postgres prints it, and its id. */
  after: { at: string; id: string } | undefined;
  limit: number;
}

/** The stored statuses a shown state can come from (commission_state): pending past its hold reads approved, approved in a payout processing. */
const STORED: Record<CommissionStatus, string[]> = {
  pending: ['pending'],
  held: ['held'],
  approved: ['pending', 'approved'],
  processing: ['approved'],
  paid: ['paid'],
  reversed: ['reversed'],
};

const q = {
  page: sql(
    'ledger.commissions_page',
    `${withPartnerName(`SELECT ${COMMISSION_COLUMNS}, c.created_at::text AS cursor_at
       FROM commissions c
      WHERE c.program_id = $1
        AND ($2::text IS NULL OR (c.status = ANY($3::text[]) AND commission_state(c) = $2::text))
        AND ($4::bigint IS NULL OR c.partner_id = $4::bigint)
        AND ($5::timestamptz IS NULL OR (c.created_at <= $5::timestamptz AND (c.created_at, c.id) < ($5::timestamptz, $6::uuid)))
      ORDER BY c.created_at DESC, c.id DESC
      LIMIT $7`)} ORDER BY page.created_at DESC, page.id DESC`,
  ),
};

/** A commission of the list: with its partner's name. */
export type ListedCommission = CommissionView & { partner_name: string | null };

/** A page of the program's commissions, newest first; partner_not_found for a partner filter not in the program. */
export async function commissionPage(db: Queryable, programId: number, f: CommissionFilter): Promise<{ items: ListedCommission[]; next: { at: string; id: string } | undefined }> {
  if (f.partnerId !== undefined) await requirePartner(db, programId, f.partnerId);
  const rows = await db.many<ListedCommission & { cursor_at: string }>(q.page, [
    programId,
    f.status ?? null,
    f.status ? STORED[f.status] : null,
    f.partnerId ?? null,
    f.after?.at ?? null,
    f.after?.id ?? null,
    f.limit + 1,
  ]);
  const kept = rows.slice(0, f.limit);
  const last = kept.at(-1);
  return {
    items: kept.map(({ cursor_at: _at, partner_name, ...c }) => ({ ...commissionView(c), partner_name })),
    next: rows.length > f.limit && last ? { at: last.cursor_at, id: last.id } : undefined,
  };
}
