-- A pending payout marked paid or canceled (partner-program.md, "Payouts"). paid: the payout entry
-- (cause payout:<id>) and the payout.paid event, its commissions written paid (a payout's rows are
-- few: its run wrote none). canceled: the entries it netted outstanding again and the
-- payout.canceled event; its commissions read approved again, since no pending payout covers them
-- (commission_state). Under the program's payout lock (lock_payouts), so a run never sees a payout
-- half settled.
--
-- Answers {"outcome": "ok", "payout": ...}, {"outcome": "not_found"} or {"outcome": "conflict",
-- "status": ...} for a payout that is not pending.
CREATE OR REPLACE FUNCTION settle_payout(p_program bigint, p_payout uuid, p_action text, p_reference text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  p payouts;
  entry ledger_entries;
BEGIN
  SELECT * INTO p FROM payouts WHERE id = p_payout AND program_id = p_program FOR UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('outcome', 'not_found');
  END IF;
  IF p.status <> 'pending' THEN
    RETURN jsonb_build_object('outcome', 'conflict', 'status', p.status);
  END IF;
  -- Its commissions' rows before the payout lock, in the order of a refund, a partial refund or an
  -- owner's decision (commission row, then the lock shared): taken the other way round, the two
  -- would deadlock.
  PERFORM 1 FROM commissions WHERE id = ANY (p.commission_ids) ORDER BY id FOR UPDATE;
  PERFORM lock_payouts(p_program, false);
  IF p_action = 'paid' THEN
    UPDATE payouts SET status = 'paid', paid_at = now(), reference = p_reference WHERE id = p.id RETURNING * INTO p;
    UPDATE commissions SET status = 'paid', paid_at = p.paid_at, payout_id = p.id WHERE id = ANY (p.commission_ids) AND status = 'approved';
    INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, payout_id, cause, reason, created_at, available_at)
    VALUES (p.program_id, p.partner_id, 'payout', -p.amount_minor, p.currency, p.id, 'payout:' || p.id, p_reference, p.paid_at, p.paid_at)
    RETURNING * INTO entry;
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    VALUES ('payout.paid', 'partner:' || p.partner_id, p.program_id, false, p.paid_at, payout_event(p)),
           ('ledger_entry.recorded', 'partner:' || p.partner_id, p.program_id, false, entry.created_at, ledger_entry_event(entry));
  ELSE
    UPDATE payouts SET status = 'canceled', canceled_at = now() WHERE id = p.id RETURNING * INTO p;
    DELETE FROM ledger_settlements WHERE payout_id = p.id;
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    VALUES ('payout.canceled', 'partner:' || p.partner_id, p.program_id, false, p.canceled_at, payout_event(p));
  END IF;
  RETURN jsonb_build_object('outcome', 'ok', 'payout', to_jsonb(p));
END
$$;
