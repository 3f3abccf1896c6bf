-- A refund in one statement (docs/architecture.md, "Rules that exist only for speed");
-- domain/tracking/refunds.ts calls it, and refusals raise 'refused' as record_sale's do.
--
-- item: program_id, transaction_id, reason ('refund' or 'chargeback'), refund_reason, and test when
-- the mode is known (a processor refund or dispute; see refunded_sale). A full refund or chargeback
-- of a recorded sale: the sale changes status; a commission not paid yet (pending, held, approved)
-- is reversed with its fee (a reversal entry in the ledger, carried by commission.reversed), one in a payout or paid keeps its state
-- and the ledger takes back what it paid (a clawback entry, netted into the partner's next payout).
-- The entry's cause is the refund row, of which a sale has one: a retried request, a redelivered
-- processor event or a replay writes no second entry. Refunds are idempotent: the first one stands,
-- and a repeat answers it with recorded false. A batch's plain refunds (pending or held commission)
-- are written together by record_refunds, which must write and answer what this function does:
-- tests/ingest/money/refund-batches.test.ts compares the two.
CREATE OR REPLACE FUNCTION record_refund(item jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  p_transaction_id text := item->>'transaction_id';
  p_reason text := item->>'reason';
  s sale_events;
  r refunds;
  reversed boolean;
  new_status text := CASE WHEN item->>'reason' = 'refund' THEN 'refunded' ELSE 'chargeback' END;
  cm commissions;
  fee platform_fees;
  reversal ledger_entries;
  taken bigint;
BEGIN
  -- A real sale looked up in place (the common case, one index probe), else refunded_sale's order:
  -- a plpgsql call costs more than its statement.
  IF (item->>'test')::boolean IS NOT TRUE THEN
    SELECT * INTO s FROM sale_events
     WHERE transaction_id = p_transaction_id AND program_id = (item->>'program_id')::bigint AND NOT test FOR UPDATE;
  END IF;
  IF s.id IS NULL AND (item->>'test')::boolean IS NOT FALSE THEN
    s := refunded_sale((item->>'program_id')::bigint, p_transaction_id, true);
  END IF;
  IF s.id IS NULL THEN
    RAISE EXCEPTION 'refused' USING DETAIL = 'sale_not_found';
  END IF;
  IF s.status <> 'paid' THEN
    SELECT * INTO r FROM refunds WHERE sale_id = s.id;
    reversed := EXISTS (SELECT 1 FROM commissions WHERE sale_id = s.id AND status = 'reversed');
    RETURN jsonb_build_object('refund_id', r.id, 'sale_id', s.id, 'transaction_id', p_transaction_id, 'reason', r.reason,
                              'sale_status', s.status, 'commission_reversed', reversed, 'created_at', r.created_at,
                              'recorded', false);
  END IF;
  INSERT INTO refunds (sale_id, program_id, reason, refund_reason) VALUES (s.id, s.program_id, p_reason, item->>'refund_reason')
  RETURNING * INTO r;
  UPDATE sale_events SET status = new_status, updated_at = now() WHERE id = s.id;
  INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
  VALUES ('sale.status_changed', 'sale:' || s.id, s.program_id, s.test, r.created_at,
          jsonb_build_object('sale_id', s.id, 'transaction_id', p_transaction_id, 'program_id', s.program_id,
                             'status', new_status, 'reason', p_reason, 'refund_id', r.id, 'changed_at', r.created_at));
  -- The common case in one statement: a commission still inside its hold (or held) is reversed.
  UPDATE commissions SET status = 'reversed', reversed_at = now() WHERE sale_id = s.id AND status IN ('pending', 'held')
  RETURNING * INTO cm;
  IF cm.id IS NULL THEN
    -- Approved (it may be in a pending payout: processing) or paid. A payout run of the program may be
    -- choosing what to cover: the shared payout lock waits for it, and the next statements see it.
    SELECT * INTO cm FROM commissions WHERE sale_id = s.id AND status IN ('approved', 'paid') FOR UPDATE;
    IF cm.id IS NOT NULL THEN
      PERFORM lock_payouts(cm.program_id, true);
      IF cm.status = 'approved' AND commission_payout(cm) IS NULL THEN
        UPDATE commissions SET status = 'reversed', reversed_at = now() WHERE id = cm.id RETURNING * INTO cm;
      ELSE
        -- In a payout or paid: what is left of it after earlier clawbacks comes back as a clawback,
        -- netted into the partner's next payout.
        SELECT cm.amount_cents - COALESCE(sum(commission_clawback_cents), 0) INTO taken FROM partial_refunds WHERE sale_id = s.id;
        WITH entry AS (
          INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, cause, created_at, available_at)
          SELECT cm.program_id, cm.partner_id, 'clawback', -taken, cm.currency, cm.id, cm.sale_id, 'refund:' || r.id, r.created_at, r.created_at
           WHERE taken > 0
          RETURNING *
        )
        INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
        SELECT 'ledger_entry.recorded', 'partner:' || e.partner_id, e.program_id, false, e.created_at, ledger_entry_event(ROW(e.*)::ledger_entries)
          FROM entry e;
        cm := NULL;
      END IF;
    END IF;
  END IF;
  IF cm.id IS NOT NULL THEN
    UPDATE platform_fees SET status = 'reversed', reversed_at = now() WHERE sale_id = s.id AND status = 'charged'
    RETURNING * INTO fee;
    -- The reversal entry of what was left of it, then the two events, the entry travelling in
    -- commission.reversed. The entry is read into a variable rather than passed from a CTE: a
    -- subquery argument keeps commission_reversed_event from being inlined, and PostgreSQL then
    -- parses and plans its body on every call (about 70 µs a refund, docs/performance.md).
    IF cm.amount_cents > 0 THEN
      INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, cause, created_at, available_at)
      VALUES (cm.program_id, cm.partner_id, 'reversal', -cm.amount_cents, cm.currency, cm.id, cm.sale_id, 'refund:' || r.id, r.created_at, r.created_at)
      RETURNING * INTO reversal;
    END IF;
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    SELECT 'commission.reversed', 'sale:' || s.id, s.program_id, false, cm.reversed_at, commission_reversed_event(cm, reversal)
    UNION ALL
    SELECT 'platform_fee.reversed', 'sale:' || s.id, s.program_id, false, cm.reversed_at, platform_fee_event(fee, cm) WHERE fee.id IS NOT NULL;
  END IF;
  RETURN jsonb_build_object('refund_id', r.id, 'sale_id', s.id, 'transaction_id', p_transaction_id, 'reason', p_reason,
                            'sale_status', new_status, 'commission_reversed', cm.id IS NOT NULL, 'created_at', r.created_at,
                            'recorded', true);
END
$$;
