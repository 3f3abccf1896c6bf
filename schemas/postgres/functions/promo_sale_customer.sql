-- Issue 31, point 4 (docs/decisions/links-and-promo-codes.md): the customer of a sale that carries a
-- promo code or a processor promotion id, when nothing else attributes it. record_sale calls it only
-- when the item has promo_codes, promotion_ids or customer_id, so a sale without them pays nothing.
--
-- customer_id: a processor payment's customer found by its email or processor customer id that has
--   neither a click nor a key (one a promo code made); it is the customer, locked.
-- promo_codes (compared ignoring case), promotion_ids: when the program has no attribution for the
--   sale's customer (no customer with its key, no click of the program with its id), the first
--   enabled code of an approved partner that matches makes the customer, attributed to that partner,
--   a conversion with no click (no window to check). An existing attribution always wins (first
--   touch): then customer is NULL and record_sale resolves the customer as it always does.
CREATE OR REPLACE FUNCTION promo_sale_customer(item jsonb, p_program_id bigint, occurred timestamptz,
                                               OUT customer customers, OUT created boolean) LANGUAGE plpgsql AS $$
DECLARE
  p_customer_key text := item->>'customer_key';
  p_click_id text := item->>'click_id';
  codes text[] := ARRAY(SELECT lower(x) FROM jsonb_array_elements_text(COALESCE(item->'promo_codes', '[]')) x);
  ids text[] := ARRAY(SELECT jsonb_array_elements_text(COALESCE(item->'promotion_ids', '[]')));
  code record;
BEGIN
  created := false;
  IF item ? 'customer_id' THEN
    SELECT * INTO customer FROM customers WHERE id = (item->>'customer_id')::bigint AND program_id = p_program_id FOR UPDATE;
    IF FOUND THEN
      RETURN;
    END IF;
  END IF;
  IF cardinality(codes) = 0 AND cardinality(ids) = 0 THEN
    RETURN;
  END IF;
  IF p_customer_key IS NOT NULL AND EXISTS (SELECT 1 FROM customers WHERE program_id = p_program_id AND customer_key = p_customer_key) THEN
    RETURN;
  END IF;
  IF p_click_id IS NOT NULL AND EXISTS (SELECT 1 FROM clicks WHERE click_id = p_click_id AND program_id = p_program_id) THEN
    RETURN;
  END IF;
  SELECT pc.partner_id, pc.partner_program_id INTO code
    FROM promo_codes pc JOIN partner_programs pp ON pp.id = pc.partner_program_id
   WHERE pc.program_id = p_program_id AND pc.enabled AND pp.status = 'approved' AND pp.partner_id = pc.partner_id
     AND (lower(pc.code) = ANY (codes) OR pc.processor_promotion_id = ANY (ids))
   ORDER BY pc.id
   LIMIT 1;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  -- A concurrent sale that made the customer of this key first: record_sale finds that one.
  INSERT INTO customers (program_id, partner_id, partner_program_id, customer_key, email, status, provisional, test, first_purchase_date)
  VALUES (p_program_id, code.partner_id, code.partner_program_id, p_customer_key, item->>'customer_email', 'conversion', false, false, occurred)
  ON CONFLICT (program_id, customer_key) DO NOTHING
  RETURNING * INTO customer;
  created := customer.id IS NOT NULL;
END
$$;
