-- The repeat payments of one batch (record_batch) in two statements for the whole batch, rather
-- than record_sale's five and a subtransaction for each (docs/architecture.md, "Rules that exist
-- only for speed"; docs/performance.md, "Sales by the batch"). It writes exactly what
-- record_sale would for the same item and answers the same; it takes only the items whose outcome
-- is plain, and leaves the others (NULL in the answer) to record_sale, which the caller then runs:
-- - a real sale (test false) with its transaction_id, the first item of the batch for it, and no
--   real sale holding it yet (else record_sale refuses it as a duplicate);
-- - no customer_key, promo code, processor promotion or customer id: the customer is the one the
--   item's click created, in the item's program, converted already (a payment that converts, or
--   finds no customer, is record_first_payments' or record_sale's), with a partner and its
--   partner-program record;
-- - the program's terms from its row (a partner in no group, the sale at or after the latest
--   version's start: record_sale's own shortcut) and of a one-off type, so the payment earns no
--   commission (a recurring type's renewal may earn one, with the fraud rules: record_sale's).
-- Customers are locked as record_sale locks them, one item after the other; a statement that fails
-- (a transaction_id taken meanwhile, a deadlock, a value a column refuses) undoes this function's
-- writes and the caller runs every item alone. The sales are written before the batch's other
-- items, whatever their places in it: concurrent requests have no order, and no outcome here
-- depends on another item of the batch. tests/ingest/money/sale-batches.test.ts keeps this and
-- record_sale alike: a change to either must keep it green.
CREATE OR REPLACE FUNCTION record_sales(items jsonb) RETURNS jsonb[] LANGUAGE plpgsql AS $$
DECLARE
  -- The candidates, one element each, in the items' order.
  positions int[];
  picked jsonb[];
  transaction_ids text[];
  customer_ids bigint[];
  partner_ids bigint[];
  written jsonb[];
BEGIN
  SELECT array_agg(c.n ORDER BY c.n), array_agg(c.x ORDER BY c.n), array_agg(c.x->>'transaction_id' ORDER BY c.n),
         array_agg(c.customer_id ORDER BY c.n), array_agg(c.partner_id ORDER BY c.n)
    INTO positions, picked, transaction_ids, customer_ids, partner_ids
    FROM (SELECT i.n, i.x, cu.id AS customer_id, cu.partner_id
            FROM (SELECT DISTINCT ON (x->>'transaction_id') x, n::int AS n
                    FROM jsonb_array_elements(items) WITH ORDINALITY AS a (x, n)
                   ORDER BY x->>'transaction_id', n) i
            -- Each read below a subquery the planner keeps apart, so that it probes the index once
            -- an item: a join would be planned for jsonb_array_elements' assumed 100 rows and
            -- read whole tables (8 ms a batch in bench:ingest).
            CROSS JOIN LATERAL (SELECT cu.id, cu.program_id, cu.partner_id, cu.partner_program_id, cu.status
                                  FROM customers cu WHERE cu.click_id = i.x->>'click_id' FOR UPDATE) cu
            CROSS JOIN LATERAL (SELECT p.rule_version, p.rule_version_from, p.commission_type
                                  FROM programs p WHERE p.id = cu.program_id OFFSET 0) p
            CROSS JOIN LATERAL (SELECT pp.group_id FROM partner_programs pp WHERE pp.id = cu.partner_program_id OFFSET 0) pp
           WHERE (i.x->>'test')::boolean = false AND i.x->>'transaction_id' IS NOT NULL AND i.x->>'customer_key' IS NULL
             AND NOT i.x ?| ARRAY['promo_codes', 'promotion_ids', 'customer_id']
             AND cu.program_id = (i.x->>'program_id')::bigint AND cu.status = 'conversion' AND cu.partner_id IS NOT NULL
             AND pp.group_id IS NULL AND p.rule_version IS NOT NULL
             AND COALESCE((i.x->>'occurred_at')::timestamptz, now()) >= p.rule_version_from
             AND p.commission_type NOT IN ('recurring_percent', 'recurring_fixed')
             AND (SELECT t.id FROM sale_events t WHERE t.transaction_id = i.x->>'transaction_id' AND NOT t.test) IS NULL) c;
  IF positions IS NULL THEN
    RETURN batch_answers(NULL, NULL, jsonb_array_length(items));
  END IF;

  -- Each sale is kept with its item by its transaction_id, which only that item has.
  WITH s AS (
    INSERT INTO sale_events (program_id, customer_id, partner_id, transaction_id, amount_cents, currency, occurred_at,
                             provider, provider_payment_id, livemode, is_recurring, sale_type, subscription_id, test)
    SELECT (u.x->>'program_id')::bigint, u.customer_id, u.partner_id, u.x->>'transaction_id', (u.x->>'amount_cents')::bigint,
           u.x->>'currency', COALESCE((u.x->>'occurred_at')::timestamptz, now()), u.x->>'provider', u.x->>'provider_payment_id',
           (u.x->>'livemode')::boolean, (u.x->>'is_recurring')::boolean, u.x->>'sale_type', u.x->>'subscription_id', false
      FROM unnest(picked, customer_ids, partner_ids) WITH ORDINALITY AS u (x, customer_id, partner_id, k)
     ORDER BY u.k
    RETURNING *
  ), event AS (
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    SELECT 'sale.recorded', 'sale:' || s.id, s.program_id, false, s.occurred_at, sale_recorded_event(ROW(s.*)::sale_events)
      FROM s JOIN unnest(transaction_ids) WITH ORDINALITY AS u (transaction_id, k) USING (transaction_id)
     ORDER BY u.k
  )
  SELECT array_agg(jsonb_build_object('sale', to_jsonb(ROW(s.*)::sale_events), 'commission', NULL, 'converted', false, 'refusal', NULL)
                   ORDER BY u.k)
    INTO written
    FROM s JOIN unnest(transaction_ids) WITH ORDINALITY AS u (transaction_id, k) USING (transaction_id);
  RETURN batch_answers(written, positions, jsonb_array_length(items));
END
$$;
