-- A sale in one round trip (docs/architecture.md, "Rules that exist only for speed"): the sale's
-- rules live here and run in the caller's transaction, so that POST /track/sale costs one statement
-- instead of about twelve. A refusal raises 'refused' with the reason as DETAIL (and the sale id as
-- HINT for a duplicate), which rolls back whatever the call wrote; domain/tracking/tracking-writes.ts
-- turns it into the domain's refusal. The outbox payloads are the event contract's
-- (schemas/event-contract.ts; tests/schemas/event-contract.test.ts checks every stored payload's fields).
--
-- It runs as few statements as its rules allow: each statement a plpgsql function runs starts and
-- ends an executor, about a tenth of PostgreSQL's CPU per sale (perf, docs/performance.md). A
-- batch's plain repeat payments and first payments are written together by record_sales and
-- record_first_payments, which must write and answer what this function does:
-- tests/ingest/money/sale-batches.test.ts compares them; a change here must keep it green.
--
-- item: the sale as domain/tracking/sales.ts sends it (saleItem), one JSON object.
CREATE OR REPLACE FUNCTION record_sale(item jsonb, p_fee_bps integer) RETURNS jsonb LANGUAGE plpgsql AS $$
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
  in_effect record;
  s sale_events;
  commission bigint;
  cm commissions;
  fee platform_fees;
  refusal text;
  promo record;
  skipped text;
  flags jsonb;
BEGIN
  -- A real sale's transaction_id checked in place (one index probe): a plpgsql call costs more than
  -- its statement, and this runs on every sale; refuse_duplicate_sale raises for a taken one.
  IF p_test OR EXISTS (SELECT 1 FROM sale_events WHERE transaction_id = p_transaction_id AND NOT test) THEN
    PERFORM refuse_duplicate_sale(p_program_id, p_transaction_id, p_test);
  END IF;

  IF NOT p_test THEN
    -- Issue 31: a promo code or processor promotion id attributes a customer with no attribution yet
    -- (promo_sale_customer.sql); only a sale that carries one pays for the look-up.
    IF item ? 'promo_codes' OR item ? 'promotion_ids' OR item ? 'customer_id' THEN
      SELECT * INTO promo FROM promo_sale_customer(item, p_program_id, occurred);
      c := promo.customer;
      created := promo.created;
    END IF;
    -- The customer the sale is for, in the key's program, locked; created from a click with no lead yet.
    IF p_customer_key IS NOT NULL AND c.id IS NULL THEN
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
      -- Most payments with a click id come after the first: the customer that click created, in
      -- the click's program, is found and locked without touching the click.
      SELECT * INTO c FROM customers WHERE click_id = p_click_id FOR UPDATE;
      IF FOUND AND c.program_id <> p_program_id THEN
        RAISE EXCEPTION 'refused' USING DETAIL = 'customer_other_program';
      END IF;
    END IF;
    IF c.id IS NULL THEN
      -- Locking the click serializes concurrent first leads or sales for one click.
      SELECT * INTO k FROM clicks WHERE click_id = p_click_id FOR UPDATE;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'refused' USING DETAIL = 'customer_not_found';
      END IF;
      IF k.program_id <> p_program_id THEN
        RAISE EXCEPTION 'refused' USING DETAIL = 'customer_other_program';
      END IF;
      -- Created meanwhile by a call that held the click before this one.
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
    END IF;

    -- The program's settings and terms, whether the customer's partner-program record exists and
    -- its group, in one read. The row holds the program's latest version (0068): the one in effect
    -- for a partner in no group at or after its start. Otherwise (issue 30) the version in effect at
    -- the sale's time for the partner's group, else the program's; before the first version of its
    -- scope, the program's first. A program written without any version (by hand) pays its row's
    -- terms, with no version.
    SELECT p.rule_version, p.rule_version_from, p.commission_type, p.commission_rate, p.recurring_months,
           p.attribution_window_days, p.commission_hold_days, pp.id IS NOT NULL AS has_junction, pp.group_id, p.fraud_rules
      INTO terms
      FROM programs p LEFT JOIN partner_programs pp ON pp.id = c.partner_program_id
     WHERE p.id = p_program_id;
    IF terms.group_id IS NOT NULL OR terms.rule_version IS NULL OR occurred < terms.rule_version_from THEN
      SELECT rv.id, rv.commission_type, rv.commission_rate, rv.recurring_months INTO in_effect
        FROM commission_rule_versions rv
       WHERE rv.program_id = p_program_id AND (rv.group_id IS NULL OR rv.group_id = terms.group_id)
       ORDER BY rv.effective_from <= occurred DESC, (rv.group_id IS NOT NULL AND rv.effective_from <= occurred) DESC,
                CASE WHEN rv.effective_from <= occurred THEN rv.effective_from END DESC NULLS LAST, rv.effective_from
       LIMIT 1;
      IF FOUND THEN
        terms.rule_version := in_effect.id;
        terms.commission_type := in_effect.commission_type;
        terms.commission_rate := in_effect.commission_rate;
        terms.recurring_months := in_effect.recurring_months;
      END IF;
    END IF;
    IF c.partner_program_id IS NULL OR NOT terms.has_junction THEN
      RAISE EXCEPTION 'refused' USING DETAIL = 'no_junction';
    END IF;
    converts := created OR c.status <> 'conversion';
    -- The click's time is read only when the window is checked.
    IF converts AND click_created IS NULL AND c.click_id IS NOT NULL THEN
      SELECT created_at INTO click_created FROM clicks WHERE click_id = c.click_id;
    END IF;
    -- Checked on every payment until one converts; the click may be at most the window older than
    -- the signup, or than the payment when there was no signup.
    IF converts AND click_created IS NOT NULL
       AND COALESCE(c.signup_date, occurred) - click_created > make_interval(days => terms.attribution_window_days) THEN
      RAISE EXCEPTION 'refused' USING DETAIL = 'outside_window';
    END IF;
    -- recurring_months (issue 30): a renewal later than that many months after the customer's first
    -- purchase earns nothing; the sale is recorded with the reason.
    IF terms.recurring_months IS NOT NULL AND NOT converts AND terms.commission_type IN ('recurring_percent', 'recurring_fixed')
       AND occurred > COALESCE(c.first_purchase_date, occurred) + make_interval(months => terms.recurring_months) THEN
      skipped := 'recurring_limit_reached';
    END IF;
  END IF;

  INSERT INTO sale_events (program_id, customer_id, partner_id, transaction_id, amount_cents, currency, occurred_at,
                           provider, provider_payment_id, livemode, is_recurring, sale_type, subscription_id, test,
                           commission_skipped_reason)
  VALUES (p_program_id, c.id, c.partner_id, p_transaction_id, (item->>'amount_cents')::bigint, item->>'currency', occurred,
          item->>'provider', item->>'provider_payment_id', (item->>'livemode')::boolean, (item->>'is_recurring')::boolean,
          item->>'sale_type', item->>'subscription_id', p_test, CASE WHEN c.partner_id IS NOT NULL THEN skipped END)
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

  commission := CASE WHEN skipped IS NULL THEN commission_cents(terms.commission_type, terms.commission_rate, s.amount_cents, converts) END;
  IF commission IS NOT NULL THEN
    BEGIN
      -- The fraud rules (fraud_flags), read only when the program has one on: a flagged commission
      -- is held for review with its reasons and evidence (docs/decisions/fraud-review.md).
      IF terms.fraud_rules @? '$.* ? (@ == true)' THEN
        flags := fraud_flags(terms.fraud_rules, c, occurred, item);
      END IF;
      -- Pending until the program's hold ends (available_at); with no hold, approved at once.
      INSERT INTO commissions (sale_id, program_id, partner_id, customer_id, commission_type, commission_rate, amount_cents, currency,
                               status, available_at, approved_at, rule_version, held_at, hold_reasons, in_hold)
      VALUES (s.id, s.program_id, c.partner_id, c.id, terms.commission_type, terms.commission_rate, commission, s.currency,
              CASE WHEN flags IS NOT NULL THEN 'held' WHEN terms.commission_hold_days = 0 THEN 'approved' ELSE 'pending' END,
              now() + make_interval(days => terms.commission_hold_days),
              CASE WHEN flags IS NULL AND terms.commission_hold_days = 0 THEN now() END, terms.rule_version,
              CASE WHEN flags IS NOT NULL THEN now() END, flags, flags IS NULL AND terms.commission_hold_days > 0)
      RETURNING * INTO cm;
      INSERT INTO platform_fees (sale_id, commission_id, program_id, amount_cents, currency)
      VALUES (s.id, cm.id, s.program_id, platform_fee_cents(commission, p_fee_bps), s.currency)
      RETURNING * INTO fee;
      -- The ledger's commission entry (a zero commission moves no money and has none; its cause, the
      -- sale, can make only one) and the three events: one statement, as the two events were.
      WITH entry AS (
        INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, cause, created_at, available_at,
                                    rule_version)
        SELECT cm.program_id, cm.partner_id, 'commission', cm.amount_cents, cm.currency, cm.id, cm.sale_id, 'sale:' || cm.sale_id,
               cm.created_at, cm.available_at, cm.rule_version
         WHERE cm.amount_cents > 0
        RETURNING *
      )
      INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
      SELECT 'commission.created', 'sale:' || s.id, s.program_id, false, cm.created_at, commission_event(cm)
      UNION ALL
      -- Flagged by a fraud rule (fraud_flags): held for review, with its reasons.
      SELECT 'commission.held', 'sale:' || s.id, s.program_id, false, cm.held_at, commission_held_event(cm) WHERE cm.status = 'held'
      UNION ALL
      SELECT 'platform_fee.created', 'sale:' || s.id, s.program_id, false, fee.created_at, platform_fee_event(fee, cm)
      UNION ALL
      SELECT 'ledger_entry.recorded', 'partner:' || e.partner_id, e.program_id, false, e.created_at, ledger_entry_event(ROW(e.*)::ledger_entries)
        FROM entry e;
    EXCEPTION WHEN OTHERS THEN
      -- The sale stays recorded and its transaction_id consumed, as the spec describes.
      refusal := 'commission_failed';
      cm := NULL;
    END;
  END IF;
  RETURN jsonb_build_object('sale', to_jsonb(s), 'commission', CASE WHEN cm.id IS NULL THEN NULL ELSE to_jsonb(cm) END,
                            'converted', converts, 'refusal', refusal);
END
$$;
