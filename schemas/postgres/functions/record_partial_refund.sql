-- A partial refund from the payment processor (docs/decisions/payments.md, "Partial refunds"). The
-- processor reports a charge's refunded total (cumulative) with every refund: the sale keeps status
-- paid and records that share of its amount as refunded, and its commission and platform fee
-- shrink by the same share. The charge refunded in full goes through record_refund, which reverses
-- what is left.
--
-- item: program_id, transaction_id, refunded_cents (the charge's refunded total, as the processor
-- sends it), charge_cents (the charge's amount), test (the mode); 0 < refunded_cents < charge_cents.
-- Applies the part of the refund not applied yet: a repeat, or an older total arriving after a
-- newer one, answers recorded false and changes nothing, so the refunds of a charge apply once in
-- any order.
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
  s := refunded_sale((item->>'program_id')::bigint, p_transaction_id, (item->>'test')::boolean);
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
