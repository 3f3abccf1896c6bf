/**
 * Balances per partner and currency (partner-program.md, "Ledger"; the worked example in
 * docs/decisions/ledger.md, "Balances"). With the commission amounts as they stand (after
 * adjustments) and the state every read shows:
 *
 *   pending    = commissions pending (inside their hold)
 *   held       = commissions held (flagged, waiting for review)
 *   approved   = commissions approved (hold over, or approved by an owner)
 *              + the clawback and manual entries no live payout nets yet (outstanding)
 *   processing = pending payouts (their commissions and the entries they net)
 *   paid       = paid payouts
 *   balance    = the sum of the partner's ledger entries = pending + held + approved + processing
 *
 * A reversed commission counts nowhere (its entries sum to zero); a paid one is in `paid` through
 * its payout, whose payout entry takes it out of `balance`.
 */
import { sql, type Queryable } from '../../core/db.js';
import { requirePartner, withPartnerName } from './entries.js';

export interface Balance {
  currency: string;
  pending: number;
  held: number;
  approved: number;
  processing: number;
  paid: number;
  balance: number;
}

export interface PartnerBalance extends Balance {
  partner_id: number;
}

/** A line of the program's balances: with its partner's name. */
export type ListedBalance = PartnerBalance & { partner_name: string | null };

/** A pending commission past its hold is approved (commission_state, written out for a whole set). */
const STATE = `CASE WHEN c.status = 'pending' AND c.available_at <= now() THEN 'approved' ELSE c.status END`;

// The partner's commissions through its commission entries (ledger index, then commission primary
// keys); those a pending payout covers are that payout's (processing), so they are left out here.
const PARTNER = `
  e AS (SELECT id, kind, amount_minor, currency, commission_id FROM ledger_entries WHERE program_id = $1 AND partner_id = $2),
  p AS (SELECT NULL::bigint AS partner_id, currency, status, amount_minor, commission_ids FROM payouts WHERE program_id = $1 AND partner_id = $2),
  covered AS (SELECT unnest(commission_ids) AS id FROM p WHERE status = 'pending'),
  c AS (SELECT NULL::bigint AS partner_id, c.currency, c.amount_cents, ${STATE} AS state
          FROM e JOIN commissions c ON c.id = e.commission_id
         WHERE e.kind = 'commission' AND c.status IN ('pending', 'held', 'approved') AND NOT EXISTS (SELECT 1 FROM covered v WHERE v.id = c.id)),
  o AS (SELECT NULL::bigint AS partner_id, currency, amount_minor FROM e
         WHERE kind IN ('clawback', 'manual') AND NOT EXISTS (SELECT 1 FROM ledger_settlements s WHERE s.entry_id = e.id)),
  t AS (SELECT NULL::bigint AS partner_id, currency, amount_minor FROM e)`;

// Every partner of the program: its commissions, entries and payouts, read whole (set-based).
const PROGRAM = `
  p AS (SELECT partner_id, currency, status, amount_minor, commission_ids FROM payouts WHERE program_id = $1),
  covered AS (SELECT unnest(commission_ids) AS id FROM p WHERE status = 'pending'),
  c AS (SELECT c.partner_id, c.currency, c.amount_cents, ${STATE} AS state
          FROM commissions c WHERE c.program_id = $1 AND c.status IN ('pending', 'held', 'approved') AND NOT EXISTS (SELECT 1 FROM covered v WHERE v.id = c.id)),
  o AS (SELECT partner_id, currency, amount_minor FROM ledger_entries e
         WHERE program_id = $1 AND kind IN ('clawback', 'manual') AND NOT EXISTS (SELECT 1 FROM ledger_settlements s WHERE s.entry_id = e.id)),
  t AS (SELECT partner_id, currency, amount_minor FROM ledger_entries WHERE program_id = $1)`;

const sums = (inputs: string) => `WITH ${inputs},
  parts AS (
    SELECT partner_id, currency, amount_cents AS pending, 0 AS held, 0 AS approved, 0 AS processing, 0 AS paid, 0 AS balance
      FROM c WHERE state = 'pending'
    UNION ALL SELECT partner_id, currency, 0, amount_cents, 0, 0, 0, 0 FROM c WHERE state = 'held'
    UNION ALL SELECT partner_id, currency, 0, 0, amount_cents, 0, 0, 0 FROM c WHERE state = 'approved'
    UNION ALL SELECT partner_id, currency, 0, 0, amount_minor, 0, 0, 0 FROM o
    UNION ALL SELECT partner_id, currency, 0, 0, 0, amount_minor, 0, 0 FROM p WHERE status = 'pending'
    UNION ALL SELECT partner_id, currency, 0, 0, 0, 0, amount_minor, 0 FROM p WHERE status = 'paid'
    UNION ALL SELECT partner_id, currency, 0, 0, 0, 0, 0, amount_minor FROM t)
  SELECT partner_id, currency, sum(pending)::bigint AS pending, sum(held)::bigint AS held, sum(approved)::bigint AS approved,
         sum(processing)::bigint AS processing, sum(paid)::bigint AS paid, sum(balance)::bigint AS balance
    FROM parts GROUP BY partner_id, currency`;

const q = {
  partner: sql('ledger.partner_balance', `${sums(PARTNER)} ORDER BY currency`),
  // With each partner's name (svc payouts shows it): the page first, then each row's name (withPartnerName).
  program: sql(
    'ledger.program_balances',
    `${withPartnerName(`${sums(PROGRAM)} ORDER BY approved DESC, partner_id, currency LIMIT $2`)} ORDER BY page.approved DESC, page.partner_id, page.currency`,
  ),
};

const numbers = <T extends Balance>(r: T): T => ({
  ...r,
  pending: Number(r.pending),
  held: Number(r.held),
  approved: Number(r.approved),
  processing: Number(r.processing),
  paid: Number(r.paid),
  balance: Number(r.balance),
});

/** The partner's balances in each currency it has entries in (none: an empty list); partner_not_found for a partner not in the program. */
export async function partnerBalances(db: Queryable, programId: number, partnerId: number): Promise<Balance[]> {
  await requirePartner(db, programId, partnerId);
  const rows = await db.many<PartnerBalance>(q.partner, [programId, partnerId]);
  return rows.map(({ partner_id: _p, ...r }) => numbers(r));
}

/** Every partner's balances in the program, with its name, the most approved first, at most `limit` rows. */
export async function programBalances(db: Queryable, programId: number, limit: number): Promise<ListedBalance[]> {
  const rows = await db.many<ListedBalance>(q.program, [programId, limit]);
  return rows.map((r) => ({ ...numbers(r), partner_id: Number(r.partner_id) }));
}
