-- The fraud rules of a new commission (partner-program.md, "Fraud review"; docs/decisions/fraud-review.md):
-- a JSON array of what flagged it, one {"reason": <rule>, ...evidence} per rule that did, or NULL
-- when none did. record_sale calls it only when the program has a rule on (programs.fraud_rules),
-- and holds a flagged commission.
--
--   self_referral    the customer's email (its lead's, or the processor payment's: item.customer_email)
--                    is one of the partner's (its own, or its payout method's), ignoring case; or the
--                    payment's processor customer (item.processor_customer_id) is the partner's own: a
--                    processor customer the program has seen pay as a customer with one of those emails
--   click_flood      the customer's click came from an address that sent more than 20 clicks on the
--                    same link in the hour up to and including that click (counted up to 1000)
--   fast_conversion  the sale came less than 10 seconds after that click (or is dated before it)
--   partner_ip       that click came from an address the partner signed into the portal from (the
--                    same address, or inside a network recorded for it, or the other way round)
--
-- Every read is by an index: partners and partner_payout_methods by partner, processor_customers by
-- (program, processor customer), clicks by click_id and clicks_flood (client_ip, referral_link_id,
-- created_at), partner_sign_in_addresses by (partner_id, client_ip). A statement per read and only
-- for the rules on (the partner's emails; the click; its flood count; the sign-in address; the
-- processor customer only for a processor payment whose emails did not match); comparisons and
-- evidence in plpgsql expressions (docs/decisions/fraud-review.md, "Speed").
CREATE OR REPLACE FUNCTION fraud_flags(rules jsonb, cust customers, occurred timestamptz, item jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
  flood_on boolean := COALESCE((rules->>'click_flood')::boolean, false);
  fast_on boolean := COALESCE((rules->>'fast_conversion')::boolean, false);
  ip_on boolean := COALESCE((rules->>'partner_ip')::boolean, false) AND cust.partner_id IS NOT NULL;
  customer_email text := item->>'customer_email';
  processor_customer text := item->>'processor_customer_id';
  flags jsonb := '[]';
  own text[];
  seen text;
  k record;
  n integer;
  addr inet;
BEGIN
  IF COALESCE((rules->>'self_referral')::boolean, false) AND cust.partner_id IS NOT NULL
     AND (cust.email IS NOT NULL OR customer_email IS NOT NULL OR processor_customer IS NOT NULL) THEN
    -- The partner's emails (its own, its payout method's) in one read; the customer's compared in
    -- plpgsql expressions (no statement): the lead's email, then the payment's.
    SELECT ARRAY[lower(p.email), lower(m.details->>'email')] INTO own
      FROM partners p LEFT JOIN partner_payout_methods m ON m.partner_id = p.id
     WHERE p.id = cust.partner_id;
    IF lower(cust.email) = ANY (own) THEN
      flags := jsonb_build_array(jsonb_build_object('reason', 'self_referral', 'email', cust.email, 'email_of', 'lead'));
    ELSIF lower(customer_email) = ANY (own) THEN
      flags := jsonb_build_array(jsonb_build_object('reason', 'self_referral', 'email', customer_email, 'email_of', 'processor'));
    ELSIF processor_customer IS NOT NULL AND own IS NOT NULL THEN
      -- A processor customer the program has seen pay under one of the partner's emails.
      SELECT o.email INTO seen
        FROM processor_customers pc JOIN customers o ON o.id = pc.customer_id
       WHERE pc.program_id = cust.program_id AND pc.processor_customer_id = processor_customer AND lower(o.email) = ANY (own);
      IF seen IS NOT NULL THEN
        flags := jsonb_build_array(jsonb_build_object('reason', 'self_referral', 'email', seen, 'email_of', 'processor_customer',
                                                      'processor_customer_id', processor_customer));
      END IF;
    END IF;
  END IF;

  IF cust.click_id IS NOT NULL AND (flood_on OR fast_on OR ip_on) THEN
    -- The customer's click, then what the rules on need of it, each only when its rule is on (a
    -- statement a rule: measured cheaper than one statement with a subquery per rule, whose plan
    -- initialises every subquery on every execution).
    SELECT x.click_id, x.client_ip, x.referral_link_id, x.created_at, NULL::integer AS clicks, NULL::inet AS sign_in_address
      INTO k FROM clicks x WHERE x.click_id = cust.click_id;
    IF flood_on AND k.client_ip IS NOT NULL THEN
      SELECT count(*)::integer INTO n
        FROM (SELECT 1 FROM clicks y
               WHERE y.client_ip = k.client_ip AND y.referral_link_id = k.referral_link_id
                 AND y.created_at > k.created_at - interval '1 hour' AND y.created_at <= k.created_at
               LIMIT 1000) AS hour;
      k.clicks := n;
    END IF;
    IF ip_on AND k.client_ip IS NOT NULL THEN
      SELECT a.client_ip INTO addr FROM partner_sign_in_addresses a
       WHERE a.partner_id = cust.partner_id AND (a.client_ip >>= k.client_ip OR k.client_ip >>= a.client_ip)
       LIMIT 1;
      k.sign_in_address := addr;
    END IF;
    IF k.click_id IS NOT NULL THEN
      IF k.clicks > 20 THEN
        flags := flags || jsonb_build_array(jsonb_build_object('reason', 'click_flood', 'client_ip', host(k.client_ip), 'clicks', k.clicks,
                                                               'link_id', k.referral_link_id, 'click_id', k.click_id));
      END IF;
      IF fast_on AND occurred - k.created_at < interval '10 seconds' THEN
        flags := flags || jsonb_build_array(jsonb_build_object('reason', 'fast_conversion', 'seconds', round(extract(epoch FROM occurred - k.created_at), 3),
                                                               'click_id', k.click_id));
      END IF;
      IF k.sign_in_address IS NOT NULL THEN
        flags := flags || jsonb_build_array(jsonb_build_object('reason', 'partner_ip', 'client_ip', host(k.client_ip),
                                                               'sign_in_address', text(k.sign_in_address), 'click_id', k.click_id));
      END IF;
    END IF;
  END IF;
  RETURN CASE WHEN jsonb_array_length(flags) = 0 THEN NULL ELSE flags END;
END
$$;
