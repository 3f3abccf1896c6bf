-- A refund found its sale with `transaction_id = $1 AND program_id = $2 ORDER BY test`, which
-- neither partial unique index on transaction_id (0010) can serve: PostgreSQL read every sale of
-- the program to find one, so a refund cost more the more sales its program had. refunded_sale
-- asks each index in turn. record_refund (0013) and record_partial_refund (0014) are otherwise
-- unchanged.

-- The program's sale under transaction_id, locked: the real one when the program holds both a real
-- and a test sale under it (test sales have their own namespace, 0010); all NULL when there is none.
CREATE FUNCTION refunded_sale(p_program_id bigint, p_transaction_id text) RETURNS sale_events
LANGUAGE plpgsql AS $$
DECLARE
  s sale_events;
BEGIN
  SELECT * INTO s FROM sale_events
   WHERE transaction_id = p_transaction_id AND program_id = p_program_id AND NOT test FOR UPDATE;
  IF NOT FOUND THEN
    SELECT * INTO s FROM sale_events
     WHERE program_id = p_program_id AND transaction_id = p_transaction_id AND test FOR UPDATE;
  END IF;
  RETURN s;
END
$$;

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
  s := refunded_sale((item->>'program_id')::bigint, p_transaction_id);
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

CREATE OR REPLACE FUNCTION record_partial_refund(item jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  p_transaction_id text := item->>'transaction_id';
  refunded numeric := (item->>'refunded_cents')::numeric;
  charged numeric := (item->>'charge_cents')::numeric;
  s sale_events;
  target bigint;
  step bigint;
  cm commissions;
  cm_step bigint := 0;
  fee platform_fees;
  fee_step bigint := 0;
  pr partial_refunds;
BEGIN
  IF refunded IS NULL OR charged IS NULL OR refunded <= 0 OR refunded >= charged THEN
    RAISE EXCEPTION 'refused' USING DETAIL = 'invalid_refund_amount';
  END IF;
  s := refunded_sale((item->>'program_id')::bigint, p_transaction_id);
  IF s.id IS NULL THEN
    RAISE EXCEPTION 'refused' USING DETAIL = 'sale_not_found';
  END IF;
  target := least(s.amount_cents, refunded_share(s.amount_cents, refunded, charged));
  step := target - s.refunded_cents;
  IF s.status <> 'paid' OR step <= 0 THEN
    RETURN jsonb_build_object('sale_id', s.id, 'transaction_id', p_transaction_id, 'sale_status', s.status,
                              'refunded_cents', s.refunded_cents, 'recorded', false);
  END IF;
  UPDATE sale_events SET refunded_cents = target, updated_at = now() WHERE id = s.id RETURNING * INTO s;

  SELECT * INTO cm FROM commissions WHERE sale_id = s.id AND status = 'pending' FOR UPDATE;
  IF cm.id IS NOT NULL THEN
    cm_step := greatest(refunded_share(cm.amount_cents + cm.reversed_cents, refunded, charged) - cm.reversed_cents, 0);
    UPDATE commissions SET amount_cents = amount_cents - cm_step, reversed_cents = reversed_cents + cm_step
     WHERE id = cm.id RETURNING * INTO cm;
    SELECT * INTO fee FROM platform_fees WHERE sale_id = s.id AND status = 'charged' FOR UPDATE;
    IF fee.id IS NOT NULL THEN
      fee_step := greatest(refunded_share(fee.amount_cents + fee.reversed_cents, refunded, charged) - fee.reversed_cents, 0);
      UPDATE platform_fees SET amount_cents = amount_cents - fee_step, reversed_cents = reversed_cents + fee_step
       WHERE id = fee.id RETURNING * INTO fee;
    END IF;
  END IF;

  INSERT INTO partial_refunds (sale_id, program_id, amount_cents, refunded_cents, commission_reversed_cents, platform_fee_reversed_cents)
  VALUES (s.id, s.program_id, step, target, cm_step, fee_step)
  RETURNING * INTO pr;
  INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
  VALUES ('sale.partially_refunded', 'sale:' || s.id, s.program_id, s.test, pr.created_at,
          jsonb_build_object('partial_refund_id', pr.id, 'sale_id', s.id, 'transaction_id', s.transaction_id,
                             'program_id', s.program_id, 'amount_cents', step, 'refunded_cents', target,
                             'currency', s.currency, 'refunded_at', pr.created_at));
  -- The commission and the fee travel whole, as commission.created does, with what was taken off.
  IF cm_step > 0 THEN
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    VALUES ('commission.adjusted', 'sale:' || s.id, s.program_id, false, pr.created_at,
            commission_event(cm) || jsonb_build_object('reversed_cents', cm.reversed_cents));
  END IF;
  IF fee_step > 0 THEN
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    VALUES ('platform_fee.adjusted', 'sale:' || s.id, s.program_id, false, pr.created_at,
            platform_fee_event(fee, cm) || jsonb_build_object('reversed_cents', fee.reversed_cents));
  END IF;
  RETURN jsonb_build_object('partial_refund_id', pr.id, 'sale_id', s.id, 'transaction_id', p_transaction_id,
                            'sale_status', s.status, 'refunded_cents', target, 'commission_reversed_cents', cm_step,
                            'platform_fee_reversed_cents', fee_step, 'recorded', true);
END
$$;
