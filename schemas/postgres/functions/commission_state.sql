-- A commission's state as every read shows it (partner-program.md, "Commission lifecycle";
-- docs/decisions/ledger.md, "Holds" and "Payouts"):
--   - a pending commission whose hold has ended is approved from that moment, whether or not the
--     sweeper has written it yet (approve_due_commissions);
--   - an approved commission that a pending payout covers is processing: a payout run records what
--     it covers in payouts.commission_ids and writes no commission row (a run over a million
--     commissions would otherwise rewrite a million rows: bench/payouts.ts); mark-paid writes
--     `paid` on the rows of its payout.
-- The payout lookup goes through payouts (program_id, partner_id): a partner's pending payouts are few.
CREATE OR REPLACE FUNCTION commission_state(cm commissions) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN cm.status = 'pending' AND cm.available_at <= now() THEN 'approved'
    WHEN cm.status = 'approved' AND commission_payout(cm) IS NOT NULL THEN 'processing'
    ELSE cm.status
  END
$$;
