-- The payout lock of a program (docs/decisions/ledger.md, "Payouts"): a payout run, mark-paid and
-- cancel take it alone (p_shared false); a refund, a partial refund or a rejection of an approved
-- commission takes it shared, so that it never decides between a reversal and a clawback while a
-- run is choosing what to cover. Held to the end of the transaction.
CREATE OR REPLACE FUNCTION lock_payouts(p_program bigint, p_shared boolean) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF p_shared THEN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('payouts:' || p_program, 0));
  ELSE
    PERFORM pg_advisory_xact_lock(hashtextextended('payouts:' || p_program, 0));
  END IF;
END
$$;
