-- A lead in one statement (docs/architecture.md, "Rules that exist only for speed"); domain/tracking/leads.ts
-- calls it, and refusals raise 'refused' as record_sale's do.
--
-- item: click_id, customer_key, email, test, key_program_id (null: a browser-mode call), origin.
-- Server mode (a valid key) settles; browser mode on a server_required program leaves a provisional
-- lead whose customer key is not saved. First click wins: an existing customer keeps the partner
-- and program of the click that created it.
CREATE OR REPLACE FUNCTION record_lead(item jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
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
