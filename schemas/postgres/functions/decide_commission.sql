-- An owner's approval or rejection of a commission (partner-program.md, "Commission lifecycle"):
-- approve moves a pending or held one to approved (commission.approved, by owner); reject moves a
-- pending, held or approved one to reversed with its fee, and the ledger takes it back (a reversal
-- entry caused by reject:<commission id>). The state judged is the one reads show (commission_state).
--
-- Answers {"outcome": "ok", "commission": ...}, {"outcome": "not_found"} (no such commission in the
-- program), or {"outcome": "conflict", "state": ...} (processing, paid, or a move the state does not
-- allow); domain/ledger/lifecycle.ts turns these into its outcomes.
CREATE OR REPLACE FUNCTION decide_commission(p_program bigint, p_commission uuid, p_decision text, p_reason text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  cm commissions;
  fee platform_fees;
  entry ledger_entries;
  state text;
BEGIN
  SELECT * INTO cm FROM commissions WHERE id = p_commission AND program_id = p_program FOR UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('outcome', 'not_found');
  END IF;
  -- Whether a payout covers it (processing) is decided by runs under the payout lock: wait for any.
  PERFORM lock_payouts(p_program, true);
  state := commission_state(cm);
  IF p_decision = 'approve' THEN
    IF state NOT IN ('pending', 'held') THEN
      RETURN jsonb_build_object('outcome', 'conflict', 'state', state);
    END IF;
    UPDATE commissions SET status = 'approved', approved_at = now(), status_reason = p_reason WHERE id = cm.id RETURNING * INTO cm;
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    VALUES ('commission.approved', 'sale:' || cm.sale_id, cm.program_id, false, cm.approved_at, commission_approved_event(cm, 'owner'));
  ELSE
    IF state NOT IN ('pending', 'held', 'approved') THEN
      RETURN jsonb_build_object('outcome', 'conflict', 'state', state);
    END IF;
    UPDATE commissions SET status = 'reversed', reversed_at = now(), status_reason = p_reason WHERE id = cm.id RETURNING * INTO cm;
    UPDATE platform_fees SET status = 'reversed', reversed_at = now() WHERE commission_id = cm.id AND status = 'charged'
    RETURNING * INTO fee;
    IF cm.amount_cents > 0 THEN
      INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, cause, reason, created_at, available_at)
      VALUES (cm.program_id, cm.partner_id, 'reversal', -cm.amount_cents, cm.currency, cm.id, cm.sale_id, 'reject:' || cm.id, p_reason,
              cm.reversed_at, cm.reversed_at)
      RETURNING * INTO entry;
    END IF;
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    SELECT * FROM (VALUES ('commission.reversed', 'sale:' || cm.sale_id, cm.program_id, false, cm.reversed_at, commission_reversed_event(cm, entry)),
                          ('platform_fee.reversed', 'sale:' || cm.sale_id, fee.program_id, false, cm.reversed_at, platform_fee_event(fee, cm)))
             AS v (event_type, aggregate_key, program_id, test, occurred_at, payload)
     WHERE v.program_id IS NOT NULL;
  END IF;
  RETURN jsonb_build_object('outcome', 'ok', 'commission', to_jsonb(cm));
END
$$;
