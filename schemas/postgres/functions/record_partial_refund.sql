-- A partial refund from the payment processor (docs/decisions/payments.md, "Partial refunds"). The
-- processor reports a charge's refunded total (cumulative) with every refund: the sale keeps status
-- paid and records that share of its amount as refunded. A commission not paid yet (pending, held,
-- approved and in no payout) and its platform fee shrink by the same share (a ledger adjustment);
-- one in a pending payout (processing) or paid is never edited, and the ledger claws that share
-- back instead (docs/decisions/ledger.md, "Refunds by the commission's state").
-- The charge refunded in full goes through record_refund, which reverses what is left.
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
  claw bigint := 0;
  pr partial_refunds;
  pr_id uuid := gen_random_uuid();
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

  SELECT * INTO cm FROM commissions WHERE sale_id = s.id AND status <> 'reversed' FOR UPDATE;
  IF cm.status IN ('approved', 'paid') THEN
    -- A payout run may be choosing what to cover: wait for it (the shared payout lock), then see it.
    PERFORM lock_payouts(cm.program_id, true);
  END IF;
  IF cm.status IN ('pending', 'held') OR (cm.status = 'approved' AND commission_payout(cm) IS NULL) THEN
    cm_step := greatest(refunded_share(cm.amount_cents + cm.reversed_cents, refunded, charged) - cm.reversed_cents, 0);
    UPDATE commissions SET amount_cents = amount_cents - cm_step, reversed_cents = reversed_cents + cm_step
     WHERE id = cm.id RETURNING * INTO cm;
    SELECT * INTO fee FROM platform_fees WHERE sale_id = s.id AND status = 'charged' FOR UPDATE;
    IF fee.id IS NOT NULL THEN
      fee_step := greatest(refunded_share(fee.amount_cents + fee.reversed_cents, refunded, charged) - fee.reversed_cents, 0);
      UPDATE platform_fees SET amount_cents = amount_cents - fee_step, reversed_cents = reversed_cents + fee_step
       WHERE id = fee.id RETURNING * INTO fee;
    END IF;
  ELSIF cm.status IN ('approved', 'paid') THEN
    -- In a payout or paid: the same share of the commission as first earned, less what adjustments
    -- before payment and earlier clawbacks took, so the rounding never adds up across refunds.
    SELECT greatest(refunded_share(cm.amount_cents + cm.reversed_cents, refunded, charged) - cm.reversed_cents
                    - COALESCE(sum(commission_clawback_cents), 0), 0)
      INTO claw FROM partial_refunds WHERE sale_id = s.id;
  END IF;
  INSERT INTO partial_refunds (id, sale_id, program_id, amount_cents, refunded_cents, commission_reversed_cents, platform_fee_reversed_cents,
                               commission_clawback_cents)
  VALUES (pr_id, s.id, s.program_id, step, target, cm_step, fee_step, claw)
  RETURNING * INTO pr;
  -- The ledger's adjustment or clawback (cause: this partial refund) and the events, one statement.
  -- The commission and the fee travel whole, as commission.created does, with what was taken off.
  WITH entry AS (
    INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, cause, created_at, available_at)
    SELECT cm.program_id, cm.partner_id, CASE WHEN claw > 0 THEN 'clawback' ELSE 'adjustment' END, -(cm_step + claw), cm.currency,
           cm.id, cm.sale_id, 'partial_refund:' || pr.id, pr.created_at, pr.created_at
     WHERE cm_step + claw > 0
    RETURNING *
  )
  INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
  SELECT 'sale.partially_refunded', 'sale:' || s.id, s.program_id, s.test, pr.created_at,
         jsonb_build_object('partial_refund_id', pr.id, 'sale_id', s.id, 'transaction_id', s.transaction_id,
                            'program_id', s.program_id, 'amount_cents', step, 'refunded_cents', target,
                            'currency', s.currency, 'refunded_at', pr.created_at)
  UNION ALL
  SELECT 'commission.adjusted', 'sale:' || s.id, s.program_id, false, pr.created_at,
         commission_event(cm) || jsonb_build_object('reversed_cents', cm.reversed_cents)
   WHERE cm_step > 0
  UNION ALL
  SELECT 'platform_fee.adjusted', 'sale:' || s.id, s.program_id, false, pr.created_at,
         platform_fee_event(fee, cm) || jsonb_build_object('reversed_cents', fee.reversed_cents)
   WHERE fee_step > 0
  UNION ALL
  SELECT 'ledger_entry.recorded', 'partner:' || e.partner_id, e.program_id, false, e.created_at, ledger_entry_event(ROW(e.*)::ledger_entries)
    FROM entry e;
  RETURN jsonb_build_object('partial_refund_id', pr.id, 'sale_id', s.id, 'transaction_id', p_transaction_id,
                            'sale_status', s.status, 'refunded_cents', target, 'commission_reversed_cents', cm_step,
                            'platform_fee_reversed_cents', fee_step, 'commission_clawback_cents', claw, 'recorded', true);
END
$$;
