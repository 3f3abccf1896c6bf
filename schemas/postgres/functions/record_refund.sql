-- A refund in one statement (docs/architecture.md, "Rules that exist only for speed");
-- domain/tracking/refunds.ts calls it, and refusals raise 'refused' as record_sale's do.
--
-- item: program_id, transaction_id, reason ('refund' or 'chargeback'), refund_reason, and test when
-- the mode is known (a processor refund or dispute; see refunded_sale). A full refund or chargeback
-- of a recorded sale: the sale changes status, its commission and fee are reversed. Refunds are
-- idempotent: the first one stands, and a repeat answers it with recorded false.
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
BEGIN
  s := refunded_sale((item->>'program_id')::bigint, p_transaction_id, (item->>'test')::boolean);
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
  UPDATE commissions SET status = 'reversed', reversed_at = now() WHERE sale_id = s.id AND status = 'pending'
  RETURNING * INTO cm;
  IF cm.id IS NOT NULL THEN
    UPDATE platform_fees SET status = 'reversed', reversed_at = now() WHERE sale_id = s.id AND status = 'charged'
    RETURNING * INTO fee;
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    VALUES ('commission.reversed', 'sale:' || s.id, s.program_id, false, cm.reversed_at, commission_event(cm));
    IF fee.id IS NOT NULL THEN
      INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
      VALUES ('platform_fee.reversed', 'sale:' || s.id, s.program_id, false, cm.reversed_at, platform_fee_event(fee, cm));
    END IF;
  END IF;
  RETURN jsonb_build_object('refund_id', r.id, 'sale_id', s.id, 'transaction_id', p_transaction_id, 'reason', p_reason,
                            'sale_status', new_status, 'commission_reversed', cm.id IS NOT NULL, 'created_at', r.created_at,
                            'recorded', true);
END
$$;
