-- Partial refunds from the payment processor (issue 12, point 4; docs/decisions/payments.md, "Partial
-- refunds"). The processor reports a charge's refunded total (cumulative) with every refund: the
-- sale keeps status paid and records that share of its amount as refunded, and its commission and
-- platform fee shrink by the same share. The charge refunded in full goes through record_refund
-- (0013) unchanged, which reverses what is left.

-- The share of the sale amount refunded so far while the sale is paid (a full refund or
-- chargeback changes the status instead). The dashboard's revenue is amount_cents - refunded_cents.
ALTER TABLE sale_events ADD COLUMN refunded_cents bigint NOT NULL DEFAULT 0 CHECK (refunded_cents >= 0);
-- What partial refunds took off the commission and the fee: amount_cents is what is left, so the
-- amount first earned is amount_cents + reversed_cents.
ALTER TABLE commissions ADD COLUMN reversed_cents bigint NOT NULL DEFAULT 0 CHECK (reversed_cents >= 0);
ALTER TABLE platform_fees ADD COLUMN reversed_cents bigint NOT NULL DEFAULT 0 CHECK (reversed_cents >= 0);

-- One row per partial refund applied: what it took off the sale, the commission and the fee.
-- refunded_cents (the sale's total after it) grows with every row of a sale.
CREATE TABLE partial_refunds (
  id                           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  sale_id                      uuid NOT NULL REFERENCES sale_events (id) ON DELETE CASCADE,
  program_id                   bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  amount_cents                 bigint NOT NULL CHECK (amount_cents > 0),
  refunded_cents               bigint NOT NULL,
  commission_reversed_cents    bigint NOT NULL DEFAULT 0,
  platform_fee_reversed_cents  bigint NOT NULL DEFAULT 0,
  created_at                   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (sale_id, refunded_cents)
);

-- The share of an amount, in minor units, rounded half up. Every partial refund computes the total
-- share from the charge's cumulative refund and subtracts what earlier ones took, so the rounding
-- never adds up across refunds.
CREATE FUNCTION refunded_share(amount_cents bigint, refunded numeric, charged numeric) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT round(amount_cents * refunded / charged)::bigint
$$;

-- item: program_id, transaction_id, refunded_cents (the charge's refunded total, as the processor
-- sends it), charge_cents (the charge's amount); 0 < refunded_cents < charge_cents. Applies the
-- part of the refund not applied yet: a repeat, or an older total arriving after a newer one,
-- answers recorded false and changes nothing, so the refunds of a charge apply once in any order.
CREATE FUNCTION record_partial_refund(item jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
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
  -- The real sale before a test one under the same transaction_id, as record_refund.
  SELECT * INTO s FROM sale_events
   WHERE transaction_id = p_transaction_id AND program_id = (item->>'program_id')::bigint
   ORDER BY test LIMIT 1 FOR UPDATE;
  IF NOT FOUND THEN
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
