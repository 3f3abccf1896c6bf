-- The first payments of one batch (record_batch) in two statements for the whole batch, rather than
-- record_sale's fifteen and two subtransactions for each (docs/architecture.md, "Rules that exist
-- only for speed"; docs/performance.md, "Sales by the batch"). It writes exactly what record_sale
-- would for the same item and answers the same; it takes only the items whose outcome is plain,
-- and leaves the others (NULL in the answer) to record_sale, which the caller then runs:
-- - a real sale (test false) with its transaction_id, the first item of the batch for it and the
--   first for its click, and no real sale holding that transaction_id yet;
-- - no customer_key, promo code, processor promotion or customer id: the customer is created from
--   the item's click (a real click of the item's program, with a partner and its partner-program
--   record), which no customer has yet;
-- - the program's terms from its row (a partner in no group, the sale at or after the latest
--   version's start: record_sale's own shortcut), the payment within the attribution window.
-- What record_sale decides for such a payment, this decides alike: the commission (fraud_flags
-- when a rule is on; held, approved with no hold, or pending), its platform fee, its ledger entry,
-- and the events in record_sale's order. Clicks are locked as record_sale locks them, one item
-- after the other. A statement that fails (a customer or transaction_id taken meanwhile, a deadlock,
-- a value a column refuses) undoes this function's writes and the caller runs every item alone:
-- record_sale's own commission_failed (the sale kept without its commission) is record_sale's.
-- The payments are written after record_sales' and before the batch's other items, whatever their
-- places in it: concurrent requests have no order, and being the first item for its click, no
-- outcome here depends on another item of the batch. tests/ingest/money/sale-batches.test.ts keeps
-- this and record_sale alike: a change to either must keep it green.
CREATE OR REPLACE FUNCTION record_first_payments(items jsonb, fee_bps integer) RETURNS jsonb[] LANGUAGE plpgsql AS $$
DECLARE
  -- The candidates, one element each, in the items' order.
  positions int[];
  picked jsonb[];
  click_ids text[];
  program_ids bigint[];
  partner_ids bigint[];
  partner_program_ids bigint[];
  written jsonb[];
BEGIN
  SELECT array_agg(c.n ORDER BY c.n), array_agg(c.x ORDER BY c.n), array_agg(c.click_id ORDER BY c.n),
         array_agg(c.program_id ORDER BY c.n), array_agg(c.partner_id ORDER BY c.n), array_agg(c.partner_program_id ORDER BY c.n)
    INTO positions, picked, click_ids, program_ids, partner_ids, partner_program_ids
    FROM (SELECT i.n, i.x, k.click_id, k.program_id, k.partner_id, k.partner_program_id
            FROM (SELECT DISTINCT ON (x->>'transaction_id') x, n, first_for_click
                    FROM (SELECT x, n::int AS n, min(n::int) OVER (PARTITION BY x->>'click_id') AS first_for_click
                            FROM jsonb_array_elements(items) WITH ORDINALITY AS a (x, n)) a
                   ORDER BY x->>'transaction_id', n) i
            -- Each read below a subquery the planner keeps apart, so that it probes the index once
            -- an item (record_sales.sql says why).
            CROSS JOIN LATERAL (SELECT k.click_id, k.program_id, k.partner_id, k.partner_program_id, k.test, k.created_at
                                  FROM clicks k WHERE k.click_id = i.x->>'click_id' FOR UPDATE) k
            CROSS JOIN LATERAL (SELECT p.rule_version, p.rule_version_from, p.attribution_window_days
                                  FROM programs p WHERE p.id = k.program_id OFFSET 0) p
            CROSS JOIN LATERAL (SELECT pp.group_id FROM partner_programs pp WHERE pp.id = k.partner_program_id OFFSET 0) pp
           WHERE i.n = i.first_for_click
             AND (i.x->>'test')::boolean = false AND i.x->>'transaction_id' IS NOT NULL AND i.x->>'customer_key' IS NULL
             AND NOT i.x ?| ARRAY['promo_codes', 'promotion_ids', 'customer_id']
             AND k.program_id = (i.x->>'program_id')::bigint AND NOT k.test AND k.partner_id IS NOT NULL
             AND pp.group_id IS NULL AND p.rule_version IS NOT NULL
             AND COALESCE((i.x->>'occurred_at')::timestamptz, now()) >= p.rule_version_from
             AND COALESCE((i.x->>'occurred_at')::timestamptz, now()) - k.created_at <= make_interval(days => p.attribution_window_days)
             AND (SELECT cu.id FROM customers cu WHERE cu.click_id = k.click_id) IS NULL
             AND (SELECT t.id FROM sale_events t WHERE t.transaction_id = i.x->>'transaction_id' AND NOT t.test) IS NULL) c;
  IF positions IS NULL THEN
    RETURN batch_answers(NULL, NULL, jsonb_array_length(items));
  END IF;

  -- A new statement, so a new snapshot: a customer another call made from one of these clicks
  -- before this one locked it is seen by the customers' unique click_id, which fails the statement.
  WITH item AS (
    SELECT u.pos, u.x, u.click_id, u.program_id, u.partner_id, u.partner_program_id,
           COALESCE((u.x->>'occurred_at')::timestamptz, now()) AS occurred
      FROM unnest(picked, click_ids, program_ids, partner_ids, partner_program_ids)
           WITH ORDINALITY AS u (x, click_id, program_id, partner_id, partner_program_id, pos)
  ), cust AS (
    INSERT INTO customers (program_id, click_id, partner_id, partner_program_id, customer_key, status, provisional, test, first_purchase_date)
    SELECT item.program_id, item.click_id, item.partner_id, item.partner_program_id, NULL, 'conversion', false, false, item.occurred
      FROM item ORDER BY item.pos
    RETURNING *
  ), s AS (
    INSERT INTO sale_events (program_id, customer_id, partner_id, transaction_id, amount_cents, currency, occurred_at,
                             provider, provider_payment_id, livemode, is_recurring, sale_type, subscription_id, test)
    SELECT item.program_id, cust.id, cust.partner_id, item.x->>'transaction_id', (item.x->>'amount_cents')::bigint, item.x->>'currency',
           item.occurred, item.x->>'provider', item.x->>'provider_payment_id', (item.x->>'livemode')::boolean,
           (item.x->>'is_recurring')::boolean, item.x->>'sale_type', item.x->>'subscription_id', false
      FROM item JOIN cust ON cust.click_id = item.click_id ORDER BY item.pos
    RETURNING *
  ), terms AS MATERIALIZED (
    -- The terms and the fraud rules' verdict, computed once an item.
    SELECT item.pos, s.id AS sale_id, cust.id AS customer_id, p.commission_type, p.commission_rate, p.commission_hold_days,
           p.rule_version, commission_cents(p.commission_type, p.commission_rate, s.amount_cents, true) AS cents,
           CASE WHEN p.fraud_rules @? '$.* ? (@ == true)' THEN fraud_flags(p.fraud_rules, ROW(cust.*)::customers, item.occurred, item.x) END AS flags
      FROM item JOIN cust ON cust.click_id = item.click_id JOIN s ON s.transaction_id = item.x->>'transaction_id'
      -- A probe an item, not a join the planner would size for 100 items (record_sales.sql).
      CROSS JOIN LATERAL (SELECT p.commission_type, p.commission_rate, p.commission_hold_days, p.rule_version, p.fraud_rules
                            FROM programs p WHERE p.id = item.program_id OFFSET 0) p
  ), cm AS (
    INSERT INTO commissions (sale_id, program_id, partner_id, customer_id, commission_type, commission_rate, amount_cents, currency,
                             status, available_at, approved_at, rule_version, held_at, hold_reasons, in_hold)
    SELECT s.id, s.program_id, s.partner_id, t.customer_id, t.commission_type, t.commission_rate, t.cents, s.currency,
           CASE WHEN t.flags IS NOT NULL THEN 'held' WHEN t.commission_hold_days = 0 THEN 'approved' ELSE 'pending' END,
           now() + make_interval(days => t.commission_hold_days),
           CASE WHEN t.flags IS NULL AND t.commission_hold_days = 0 THEN now() END, t.rule_version,
           CASE WHEN t.flags IS NOT NULL THEN now() END, t.flags, t.flags IS NULL AND t.commission_hold_days > 0
      FROM terms t JOIN s ON s.id = t.sale_id ORDER BY t.pos
    RETURNING *
  ), fee AS (
    INSERT INTO platform_fees (sale_id, commission_id, program_id, amount_cents, currency)
    SELECT cm.sale_id, cm.id, cm.program_id, platform_fee_cents(cm.amount_cents, fee_bps), cm.currency
      FROM cm JOIN terms t ON t.sale_id = cm.sale_id ORDER BY t.pos
    RETURNING *
  ), entry AS (
    -- A zero commission moves no money and has no entry.
    INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, cause, created_at, available_at,
                                rule_version)
    SELECT cm.program_id, cm.partner_id, 'commission', cm.amount_cents, cm.currency, cm.id, cm.sale_id, 'sale:' || cm.sale_id,
           cm.created_at, cm.available_at, cm.rule_version
      FROM cm JOIN terms t ON t.sale_id = cm.sale_id
     WHERE cm.amount_cents > 0
     ORDER BY t.pos
    RETURNING *
  ), event AS (
    -- Each sale's events in record_sale's order, the sales in the items' order.
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    SELECT e.event_type, e.aggregate_key, e.program_id, e.test, e.occurred_at, e.payload
      FROM (
        SELECT t.pos, 1 AS step, 'sale.recorded' AS event_type, 'sale:' || s.id AS aggregate_key, s.program_id, s.test, s.occurred_at,
               sale_recorded_event(ROW(s.*)::sale_events) AS payload
          FROM terms t JOIN s ON s.id = t.sale_id
        UNION ALL
        SELECT t.pos, 2, 'customer.changed', 'customer:' || cust.id, cust.program_id, cust.test, cust.updated_at,
               customer_changed_event(ROW(cust.*)::customers, 'conversion')
          FROM terms t JOIN cust ON cust.id = t.customer_id
        UNION ALL
        SELECT t.pos, 3, 'commission.created', 'sale:' || cm.sale_id, cm.program_id, false, cm.created_at, commission_event(ROW(cm.*)::commissions)
          FROM terms t JOIN cm ON cm.sale_id = t.sale_id
        UNION ALL
        SELECT t.pos, 4, 'commission.held', 'sale:' || cm.sale_id, cm.program_id, false, cm.held_at, commission_held_event(ROW(cm.*)::commissions)
          FROM terms t JOIN cm ON cm.sale_id = t.sale_id
         WHERE cm.status = 'held'
        UNION ALL
        SELECT t.pos, 5, 'platform_fee.created', 'sale:' || cm.sale_id, cm.program_id, false, fee.created_at,
               platform_fee_event(ROW(fee.*)::platform_fees, ROW(cm.*)::commissions)
          FROM terms t JOIN cm ON cm.sale_id = t.sale_id JOIN fee ON fee.commission_id = cm.id
        UNION ALL
        SELECT t.pos, 6, 'ledger_entry.recorded', 'partner:' || entry.partner_id, entry.program_id, false, entry.created_at,
               ledger_entry_event(ROW(entry.*)::ledger_entries)
          FROM terms t JOIN entry ON entry.sale_id = t.sale_id
      ) e
     ORDER BY e.pos, e.step
  )
  SELECT array_agg(jsonb_build_object('sale', to_jsonb(ROW(s.*)::sale_events), 'commission', to_jsonb(ROW(cm.*)::commissions),
                                      'converted', true, 'refusal', NULL) ORDER BY t.pos)
    INTO written
    FROM terms t JOIN s ON s.id = t.sale_id JOIN cm ON cm.sale_id = t.sale_id;
  RETURN batch_answers(written, positions, jsonb_array_length(items));
END
$$;
