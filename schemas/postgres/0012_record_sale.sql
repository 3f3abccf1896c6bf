-- A sale in one round trip (docs/architecture.md, "Rules that exist only for speed"): the sale's
-- rules live here and run in the caller's transaction, so that POST /track/sale costs one statement
-- instead of about twelve. A refusal raises 'refused' with the reason as DETAIL (and the sale id as
-- HINT for a duplicate), which rolls back whatever the call wrote; domain/tracking/tracking-writes.ts
-- turns it into the domain's refusal. The outbox payloads are the event contract's
-- (schemas/event-contract.ts; tests/schemas/event-contract.test.ts checks every stored payload's fields).

-- The commission a paid sale earns, in the sale's minor units, or NULL when it earns none: one-off
-- types pay on the payment that converts the customer, recurring types on every payment. Percent
-- rates are percentages of the amount; fixed rates are major units (x100 minor units). Rounded half up.
CREATE FUNCTION commission_cents(commission_type text, rate numeric, amount_cents bigint, converts boolean)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN NOT converts AND commission_type NOT IN ('recurring_percent', 'recurring_fixed') THEN NULL
    WHEN commission_type IN ('percent', 'recurring_percent') THEN round(amount_cents * rate / 100)
    ELSE round(rate * 100)
  END::bigint
$$;

-- The platform's fee on a commission, in basis points of the commission, rounded half up.
CREATE FUNCTION platform_fee_cents(commission bigint, fee_bps integer) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT round(commission * fee_bps / 10000.0)::bigint
$$;

CREATE FUNCTION sale_recorded_event(s sale_events) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object(
    'sale_id', s.id, 'transaction_id', s.transaction_id, 'program_id', s.program_id, 'customer_id', s.customer_id,
    'partner_id', s.partner_id, 'amount_cents', s.amount_cents, 'currency', s.currency, 'occurred_at', s.occurred_at,
    'status', s.status, 'is_recurring', s.is_recurring, 'test', s.test, 'created_at', s.created_at)
$$;

CREATE FUNCTION customer_changed_event(c customers, change text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object(
    'change', change, 'customer_id', c.id, 'program_id', c.program_id, 'partner_id', c.partner_id,
    'partner_program_id', c.partner_program_id, 'click_id', c.click_id, 'status', c.status, 'provisional', c.provisional,
    'test', c.test, 'signup_date', c.signup_date, 'first_purchase_date', c.first_purchase_date, 'version', c.version,
    'updated_at', c.updated_at)
$$;

CREATE FUNCTION commission_event(cm commissions) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object(
    'commission_id', cm.id, 'sale_id', cm.sale_id, 'program_id', cm.program_id, 'partner_id', cm.partner_id,
    'amount_cents', cm.amount_cents, 'currency', cm.currency, 'status', cm.status, 'created_at', cm.created_at)
$$;

CREATE FUNCTION platform_fee_event(fee platform_fees, cm commissions) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object(
    'platform_fee_id', fee.id, 'commission_id', cm.id, 'sale_id', cm.sale_id, 'program_id', cm.program_id,
    'amount_cents', fee.amount_cents, 'currency', cm.currency, 'created_at', fee.created_at)
$$;

-- Raises duplicate_transaction when the transaction_id is taken in the sale's namespace: real sales
-- share one (the spec's global guard), a program's test sales have their own (0010). The HINT is
-- the sale id for the program's own sale and empty for another program's, which is never named.
CREATE FUNCTION refuse_duplicate_sale(p_program_id bigint, p_transaction_id text, p_test boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  existing sale_events;
BEGIN
  IF p_test THEN
    SELECT * INTO existing FROM sale_events WHERE program_id = p_program_id AND transaction_id = p_transaction_id AND test;
  ELSE
    SELECT * INTO existing FROM sale_events WHERE transaction_id = p_transaction_id AND NOT test;
  END IF;
  IF existing.id IS NOT NULL THEN
    RAISE EXCEPTION 'refused' USING DETAIL = 'duplicate_transaction',
      HINT = CASE WHEN existing.program_id = p_program_id THEN existing.id::text ELSE '' END;
  END IF;
END
$$;

-- item: the sale as domain/tracking/sales.ts sends it (saleItem), one JSON object.
-- A test-mode event: what the integration checklist and readiness count (as domain/tracking/test-events.ts).
CREATE FUNCTION log_test_event(p_program_id bigint, p_event_type text, p_entity_id text) RETURNS void LANGUAGE sql AS $$
  WITH entry AS (
    INSERT INTO tracking_logs (program_id, event_type, entity_id) VALUES (p_program_id, p_event_type, p_entity_id)
    RETURNING id, program_id, event_type, entity_id, created_at
  )
  INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
  SELECT 'test_event.logged', program_id::text, program_id, true, created_at,
         jsonb_build_object('tracking_log_id', id, 'program_id', program_id, 'event_type', event_type,
                            'entity_id', entity_id, 'created_at', created_at)
    FROM entry
$$;

-- item: the sale as domain/tracking/sales.ts sends it (saleItem), one JSON object.
CREATE FUNCTION record_sale(item jsonb, p_fee_bps integer) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  p_program_id bigint := (item->>'program_id')::bigint;
  p_transaction_id text := item->>'transaction_id';
  p_customer_key text := item->>'customer_key';
  p_click_id text := item->>'click_id';
  p_test boolean := (item->>'test')::boolean;
  occurred timestamptz := COALESCE((item->>'occurred_at')::timestamptz, now());
  k record;
  c customers;
  click_created timestamptz;
  created boolean := false;
  converts boolean;
  terms record;
  s sale_events;
  commission bigint;
  cm commissions;
  fee platform_fees;
  refusal text;
BEGIN
  PERFORM refuse_duplicate_sale(p_program_id, p_transaction_id, p_test);

  IF NOT p_test THEN
    -- The customer the sale is for, in the key's program, locked; created from a click with no lead yet.
    IF p_customer_key IS NOT NULL THEN
      SELECT * INTO c FROM customers WHERE program_id = p_program_id AND customer_key = p_customer_key FOR UPDATE;
      IF NOT FOUND AND p_click_id IS NULL THEN
        IF EXISTS (SELECT 1 FROM customers o JOIN programs p ON p.id = o.program_id
                    WHERE o.customer_key = p_customer_key AND o.program_id <> p_program_id
                      AND p.workspace_id = (SELECT workspace_id FROM programs WHERE id = p_program_id)) THEN
          RAISE EXCEPTION 'refused' USING DETAIL = 'customer_other_program';
        END IF;
        RAISE EXCEPTION 'refused' USING DETAIL = 'customer_not_found';
      END IF;
    END IF;
    IF c.id IS NULL THEN
      IF p_click_id IS NULL THEN
        RAISE EXCEPTION 'refused' USING DETAIL = 'customer_not_found';
      END IF;
      -- Locking the click serializes concurrent first leads or sales for one click.
      SELECT * INTO k FROM clicks WHERE click_id = p_click_id FOR UPDATE;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'refused' USING DETAIL = 'customer_not_found';
      END IF;
      IF k.program_id <> p_program_id THEN
        RAISE EXCEPTION 'refused' USING DETAIL = 'customer_other_program';
      END IF;
      SELECT * INTO c FROM customers WHERE click_id = p_click_id FOR UPDATE;
      IF NOT FOUND THEN
        -- A payment with no signup before it: the click alone carries the attribution.
        INSERT INTO customers (program_id, click_id, partner_id, partner_program_id, customer_key, status, provisional,
                               test, first_purchase_date)
        VALUES (k.program_id, k.click_id, k.partner_id, k.partner_program_id, p_customer_key, 'conversion', false,
                k.test, occurred)
        RETURNING * INTO c;
        created := true;
      END IF;
      click_created := k.created_at;
    ELSIF c.click_id IS NOT NULL THEN
      SELECT created_at INTO click_created FROM clicks WHERE click_id = c.click_id;
    END IF;

    IF c.partner_program_id IS NULL OR NOT EXISTS (SELECT 1 FROM partner_programs WHERE id = c.partner_program_id) THEN
      RAISE EXCEPTION 'refused' USING DETAIL = 'no_junction';
    END IF;
    SELECT commission_type, commission_rate, attribution_window_days INTO terms FROM programs WHERE id = p_program_id;
    converts := created OR c.status <> 'conversion';
    -- Checked on every payment until one converts; the click may be at most the window older than
    -- the signup, or than the payment when there was no signup.
    IF converts AND click_created IS NOT NULL
       AND COALESCE(c.signup_date, occurred) - click_created > make_interval(days => terms.attribution_window_days) THEN
      RAISE EXCEPTION 'refused' USING DETAIL = 'outside_window';
    END IF;
  END IF;

  INSERT INTO sale_events (program_id, customer_id, partner_id, transaction_id, amount_cents, currency, occurred_at,
                           provider, provider_payment_id, livemode, is_recurring, sale_type, subscription_id, test)
  VALUES (p_program_id, c.id, c.partner_id, p_transaction_id, (item->>'amount_cents')::bigint, item->>'currency', occurred,
          item->>'provider', item->>'provider_payment_id', (item->>'livemode')::boolean, (item->>'is_recurring')::boolean,
          item->>'sale_type', item->>'subscription_id', p_test)
  ON CONFLICT DO NOTHING
  RETURNING * INTO s;
  IF s.id IS NULL THEN
    -- Another call took this transaction_id after the check above.
    PERFORM refuse_duplicate_sale(p_program_id, p_transaction_id, p_test);
  END IF;
  INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
  VALUES ('sale.recorded', 'sale:' || s.id, s.program_id, s.test, s.occurred_at, sale_recorded_event(s));

  IF p_test THEN
    -- Test mode: a flagged sale event and a tracking-log entry; no customer, no commission, no fee.
    PERFORM log_test_event(s.program_id, 'sale', s.id::text);
    RETURN jsonb_build_object('sale', to_jsonb(s), 'commission', NULL, 'converted', false);
  END IF;

  IF converts AND NOT created THEN
    UPDATE customers
       SET status = 'conversion', first_purchase_date = COALESCE(first_purchase_date, occurred),
           version = version + 1, updated_at = now()
     WHERE id = c.id
     RETURNING * INTO c;
  END IF;
  IF converts THEN
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    VALUES ('customer.changed', 'customer:' || c.id, c.program_id, c.test, c.updated_at, customer_changed_event(c, 'conversion'));
  END IF;
  IF c.partner_id IS NULL THEN
    RETURN jsonb_build_object('sale', to_jsonb(s), 'commission', NULL, 'converted', converts, 'refusal', 'partner_required');
  END IF;

  commission := commission_cents(terms.commission_type, terms.commission_rate, s.amount_cents, converts);
  IF commission IS NOT NULL THEN
    BEGIN
      INSERT INTO commissions (sale_id, program_id, partner_id, customer_id, commission_type, commission_rate, amount_cents, currency)
      VALUES (s.id, s.program_id, c.partner_id, c.id, terms.commission_type, terms.commission_rate, commission, s.currency)
      RETURNING * INTO cm;
      INSERT INTO platform_fees (sale_id, commission_id, program_id, amount_cents, currency)
      VALUES (s.id, cm.id, s.program_id, platform_fee_cents(commission, p_fee_bps), s.currency)
      RETURNING * INTO fee;
    EXCEPTION WHEN OTHERS THEN
      -- The sale stays recorded and its transaction_id consumed, as the spec describes.
      refusal := 'commission_failed';
      cm := NULL;
    END;
    IF cm.id IS NOT NULL THEN
      INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
      VALUES ('commission.created', 'sale:' || s.id, s.program_id, false, cm.created_at, commission_event(cm)),
             ('platform_fee.created', 'sale:' || s.id, s.program_id, false, fee.created_at, platform_fee_event(fee, cm));
    END IF;
  END IF;
  RETURN jsonb_build_object('sale', to_jsonb(s), 'commission', CASE WHEN cm.id IS NULL THEN NULL ELSE to_jsonb(cm) END,
                            'converted', converts, 'refusal', refusal);
END
$$;
