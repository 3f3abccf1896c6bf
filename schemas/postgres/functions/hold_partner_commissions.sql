-- Holds a partner's commissions in a program (partner-program.md, "Partners, applications and the
-- portal": banning moves its pending and approved commissions to held), with p_reason as the hold's
-- reason ({"reason": p_reason}), each with its commission.held event, in the caller's transaction.
-- Processing (covered by a pending payout), paid and reversed commissions are left as they are.
-- Idempotent: a held commission is not touched again; the answer is how many moved.
--
-- Lock order as decide_commission and mark-paid: the commission rows first, then the program's
-- payout lock (shared), under which "covered by a pending payout" (commission_state) is decided.
CREATE OR REPLACE FUNCTION hold_partner_commissions(p_program_id bigint, p_partner_id bigint, p_reason text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  ids uuid[];
  moved integer;
BEGIN
  -- A ban is rare: the program's commissions (commissions_program_time_id) filtered to the partner.
  SELECT array_agg(id ORDER BY id) INTO ids FROM (
    SELECT c.id FROM commissions c
     WHERE c.program_id = p_program_id AND c.partner_id = p_partner_id AND c.status IN ('pending', 'approved')
     ORDER BY c.id
       FOR UPDATE
  ) locked;
  IF ids IS NULL THEN
    RETURN 0;
  END IF;
  PERFORM lock_payouts(p_program_id, true);
  WITH held AS (
    UPDATE commissions c
       SET status = 'held', held_at = now(), hold_reasons = jsonb_build_array(jsonb_build_object('reason', p_reason))
     WHERE c.id = ANY (ids) AND commission_state(c) IN ('pending', 'approved')
    RETURNING c.*
  ), events AS (
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    SELECT 'commission.held', 'sale:' || h.sale_id, h.program_id, false, h.held_at, commission_held_event(ROW(h.*)::commissions)
      FROM held h
     ORDER BY h.created_at, h.id
    RETURNING 1
  )
  SELECT count(*)::integer INTO moved FROM events;
  RETURN moved;
END
$$;
