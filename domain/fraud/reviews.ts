/**
 * The review queue (partner-program.md, "Fraud review"): a program's held commissions, oldest hold
 * first, each with what held it (a fraud rule's reasons and evidence, or its partner's ban) and its
 * sale. Owners approve or reject them through the commission endpoints (domain/ledger/lifecycle.ts).
 */
import { sql, type Queryable } from '../../core/db.js';
import { COMMISSION_COLUMNS, commissionView, type CommissionView } from '../ledger/lifecycle.js';
import { requirePartner, withPartnerName } from '../ledger/entries.js';

/** One reason a commission is held: the rule (or cause) and its evidence (which email, IP, how many clicks, seconds). */
export interface HoldReason {
  reason: string;
  [evidence: string]: unknown;
}

export interface Review extends CommissionView {
  /** The partner's name, which the console shows. */
  partner_name: string | null;
  held_at: Date;
  reasons: HoldReason[];
  sale: { transaction_id: string; amount_minor: number; currency: string; occurred_at: Date };
}

export interface ReviewPage {
  items: Review[];
  /** The last item's place (its held_at as Postgres prints it, its id), when more follow. */
  next: { at: string; id: string } | undefined;
}

export interface ReviewQuery {
  partnerId: number | undefined;
  after: { at: string; id: string } | undefined;
  limit: number;
}

const q = {
  // commissions_held (program_id, held_at, id) WHERE held_at IS NOT NULL (every commission ever held,
  // 0065): the queue is those still held.
  page: sql(
    'fraud.reviews_page',
    `${withPartnerName(`SELECT ${COMMISSION_COLUMNS}, c.held_at, COALESCE(c.hold_reasons, '[]'::jsonb) AS reasons, c.held_at::text AS cursor_at,
            s.transaction_id AS sale_transaction_id, s.amount_cents AS sale_amount, s.currency AS sale_currency, s.occurred_at AS sale_occurred_at
       FROM commissions c
       JOIN sale_events s ON s.id = c.sale_id
      WHERE c.program_id = $1 AND c.held_at IS NOT NULL AND c.status = 'held' AND ($2::bigint IS NULL OR c.partner_id = $2::bigint)
        AND ($3::timestamptz IS NULL OR (c.held_at, c.id) > ($3::timestamptz, $4::uuid))
      ORDER BY c.held_at, c.id
      LIMIT $5`)} ORDER BY page.held_at, page.id`,
  ),
};

type Row = CommissionView & {
  partner_name: string | null;
  held_at: Date;
  reasons: HoldReason[];
  cursor_at: string;
  sale_transaction_id: string;
  sale_amount: number | string;
  sale_currency: string;
  sale_occurred_at: Date;
};

/** A page of the program's held commissions; partner_not_found for a partner filter not in the program. */
export async function reviewPage(db: Queryable, programId: number, query: ReviewQuery): Promise<ReviewPage> {
  if (query.partnerId !== undefined) await requirePartner(db, programId, query.partnerId);
  const rows = await db.many<Row>(q.page, [programId, query.partnerId ?? null, query.after?.at ?? null, query.after?.id ?? null, query.limit + 1]);
  const kept = rows.slice(0, query.limit);
  const last = kept.at(-1);
  return {
    items: kept.map(({ cursor_at: _at, sale_transaction_id, sale_amount, sale_currency, sale_occurred_at, partner_name, held_at, reasons, ...c }) => ({
      ...commissionView(c),
      partner_name,
      held_at,
      reasons,
      sale: { transaction_id: sale_transaction_id, amount_minor: Number(sale_amount), currency: sale_currency, occurred_at: sale_occurred_at },
    })),
    next: rows.length > query.limit && last ? { at: last.cursor_at, id: last.id } : undefined,
  };
}
