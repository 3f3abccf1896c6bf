-- Leads and refunds in one statement each, and the batch that writes many of any kind in one
-- statement and one commit (docs/architecture.md, "Rules that exist only for speed"). The lead and
-- refund rules live here (domain/tracking/leads.ts and refunds.ts call these); refusals raise
-- 'refused' as record_sale does (0012).

CREATE FUNCTION customer_result(c customers) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('customer_id', c.id, 'program_id', c.program_id, 'click_id', c.click_id, 'status', c.status,
                            'signup_date', c.signup_date, 'provisional', c.provisional)
$$;

-- item: click_id, customer_key, email, test, key_program_id (null: a browser-mode call), origin.
-- Server mode (a valid key) settles; browser mode on a server_required program leaves a provisional
-- lead whose customer key is not saved. First click wins: an existing customer keeps the partner
-- and program of the click that created it.
CREATE FUNCTION record_lead(item jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  key_program bigint := (item->>'key_program_id')::bigint;
  server_mode boolean := item->>'key_program_id' IS NOT NULL;
  p_click_id text := item->>'click_id';
  -- Browser calls are unauthenticated: what they claim about the customer is not kept.
  claimed_key text := CASE WHEN server_mode THEN item->>'customer_key' END;
  claimed_email text := CASE WHEN server_mode THEN item->>'email' END;
  origin text := item->>'origin';
  c customers;
  k clicks;
  click_lead_auth text;
  click_origins text[];
  lead_auth text;
  provisional boolean;
BEGIN
  IF server_mode AND claimed_key IS NOT NULL THEN
    SELECT * INTO c FROM customers WHERE program_id = key_program AND customer_key = claimed_key FOR UPDATE;
  END IF;
  IF c.id IS NULL AND p_click_id IS NOT NULL THEN
    -- Locking the click serializes concurrent first leads or sales for one click.
    SELECT k2.* INTO k FROM clicks k2 WHERE k2.click_id = p_click_id FOR UPDATE;
    SELECT p.lead_auth, p.allowed_origins INTO click_lead_auth, click_origins FROM programs p WHERE p.id = k.program_id;
    IF k.click_id IS NOT NULL THEN
      SELECT * INTO c FROM customers WHERE click_id = p_click_id FOR UPDATE;
    END IF;
  END IF;
  IF COALESCE(c.program_id, k.program_id) IS NULL THEN
    RAISE EXCEPTION 'refused' USING DETAIL = 'customer_not_found';
  END IF;
  IF server_mode AND COALESCE(c.program_id, k.program_id) <> key_program THEN
    RAISE EXCEPTION 'refused' USING DETAIL = 'customer_other_program';
  END IF;
  IF NOT server_mode AND k.click_id IS NOT NULL AND origin IS NOT NULL AND NOT origin = ANY (click_origins) THEN
    RAISE EXCEPTION 'refused' USING DETAIL = 'origin_not_allowed';
  END IF;

  IF c.id IS NOT NULL THEN
    IF NOT c.provisional THEN
      RAISE EXCEPTION 'refused' USING DETAIL = 'status_locked', HINT = c.status;
    END IF;
    IF NOT server_mode THEN
      -- The click row carries the program's current lead_auth; a customer always has its click here.
      SELECT p.lead_auth INTO lead_auth FROM clicks k2 JOIN programs p ON p.id = k2.program_id
       WHERE k2.click_id = c.click_id FOR UPDATE OF k2;
      IF COALESCE(lead_auth, 'server_required') = 'server_required' THEN
        RETURN customer_result(c); -- a repeat browser lead: nothing new
      END IF;
    END IF;
    IF claimed_key IS NOT NULL
       AND EXISTS (SELECT 1 FROM customers WHERE program_id = c.program_id AND customer_key = claimed_key AND id <> c.id) THEN
      RAISE EXCEPTION 'refused' USING DETAIL = 'customer_key_taken';
    END IF;
    UPDATE customers
       SET provisional = false, customer_key = COALESCE(claimed_key, customer_key), email = COALESCE(claimed_email, email),
           version = version + 1, updated_at = now()
     WHERE id = c.id
     RETURNING * INTO c;
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    VALUES ('customer.changed', 'customer:' || c.id, c.program_id, c.test, c.updated_at, customer_changed_event(c, 'settled'));
    RETURN customer_result(c);
  END IF;

  provisional := NOT server_mode AND click_lead_auth = 'server_required';
  INSERT INTO customers (program_id, click_id, partner_id, partner_program_id, customer_key, email, status, provisional,
                         test, signup_date)
  VALUES (k.program_id, k.click_id, k.partner_id, k.partner_program_id, claimed_key, claimed_email, 'lead', provisional,
          (item->>'test')::boolean OR k.test, now())
  RETURNING * INTO c;
  INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
  VALUES ('customer.changed', 'customer:' || c.id, c.program_id, c.test, c.updated_at,
          customer_changed_event(c, CASE WHEN provisional THEN 'provisional' ELSE 'lead' END));
  IF c.test THEN
    PERFORM log_test_event(c.program_id, 'lead', c.id::text);
  END IF;
  RETURN customer_result(c);
END
$$;

-- item: program_id, transaction_id, reason ('refund' or 'chargeback'), refund_reason. A full refund
-- or chargeback of a recorded sale: the sale changes status, its commission and fee are reversed.
-- Refunds are idempotent: the first one stands, and a repeat answers it with recorded false.
CREATE FUNCTION record_refund(item jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  p_transaction_id text := item->>'transaction_id';
  p_reason text := item->>'reason';
  s record;
  r refunds;
  reversed boolean;
  new_status text := CASE WHEN item->>'reason' = 'refund' THEN 'refunded' ELSE 'chargeback' END;
  cm commissions;
  fee platform_fees;
BEGIN
  -- A program may hold a real and a test sale under one transaction_id (test sales have their own
  -- namespace, 0010): the real one is refunded.
  SELECT id, program_id, status, test INTO s FROM sale_events
   WHERE transaction_id = p_transaction_id AND program_id = (item->>'program_id')::bigint
   ORDER BY test LIMIT 1 FOR UPDATE;
  IF NOT FOUND THEN
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

-- Group commit for the tracking routes (domain/batched-statement.ts): the items of one batch,
-- all of one kind, in one statement and one commit. Each runs in its own subtransaction, so a
-- refused or failed item undoes only its own writes; the answer has one element per item, in
-- order: the function's result as {"ok": ...}, {"refused": reason, "hint": ...}, or
-- {"failed": sqlstate, "message": ...}. A batch stays at 30 items or fewer: an item can take two
-- subtransaction ids (a sale's commission has its own), and past 64 in one transaction every
-- other session's snapshots overflow to pg_subtrans.
CREATE FUNCTION record_batch(kind text, items jsonb, fee_bps integer) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  item jsonb;
  results jsonb[] := '{}';
  message text;
  detail text;
  hint text;
BEGIN
  FOR item IN SELECT value FROM jsonb_array_elements(items) LOOP
    BEGIN
      results := results || jsonb_build_object('ok', CASE kind
        WHEN 'sale' THEN record_sale(item, fee_bps)
        WHEN 'lead' THEN record_lead(item)
        WHEN 'refund' THEN record_refund(item)
      END);
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
      IF SQLSTATE = 'P0001' AND message = 'refused' THEN
        results := results || jsonb_build_object('refused', detail, 'hint', NULLIF(hint, ''));
      ELSE
        results := results || jsonb_build_object('failed', SQLSTATE, 'message', message);
      END IF;
    END;
  END LOOP;
  RETURN to_jsonb(results);
END
$$;
