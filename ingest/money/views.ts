/** The domain's rows as the money surface shows them: times as ISO 8601 strings. */
import type { CommissionView } from '../../domain/ledger/lifecycle.js';
import type { LedgerEntry } from '../../domain/ledger/entries.js';
import type { Payout } from '../../domain/ledger/payouts.js';

const iso = (d: Date | string) => (d instanceof Date ? d : new Date(d)).toISOString();
const isoOrNull = (d: Date | string | null) => (d === null ? null : iso(d));

export const commissionOut = (c: CommissionView) => ({
  ...c,
  created_at: iso(c.created_at),
  available_at: iso(c.available_at),
  approved_at: isoOrNull(c.approved_at),
  paid_at: isoOrNull(c.paid_at),
  reversed_at: isoOrNull(c.reversed_at),
});

export const entryOut = (e: LedgerEntry) => ({
  id: e.id,
  kind: e.kind,
  amount_minor: e.amount_minor,
  currency: e.currency,
  commission_id: e.commission_id,
  sale_id: e.sale_id,
  payout_id: e.payout_id,
  cause: e.cause,
  rule_version: e.rule_version,
  reason: e.reason,
  created_at: iso(e.created_at),
  available_at: iso(e.available_at),
});

export const payoutOut = (p: Payout) => ({
  id: p.id,
  partner_id: p.partner_id,
  currency: p.currency,
  amount_minor: p.amount_minor,
  status: p.status,
  cutoff: iso(p.cutoff),
  commission_ids: p.commission_ids,
  clawback_entry_ids: p.clawback_entry_ids,
  manual_entry_ids: p.manual_entry_ids,
  created_at: iso(p.created_at),
  paid_at: isoOrNull(p.paid_at),
  canceled_at: isoOrNull(p.canceled_at),
  reference: p.reference,
});
