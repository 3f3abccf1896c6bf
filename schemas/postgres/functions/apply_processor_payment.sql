-- The effects of a payment event, once its row is claimed: the outcome as JSON (outcome, reason,
-- program_id, sale_id, transaction_id), with "refs": true when the payment's ids are to be recorded.
-- event and its reading: see record_processor_payment. The program is chosen under the event's
-- scope (processor_event_program); the sale's rules are record_sale's, whose refusals become a
-- 'skipped' outcome with the same reasons.
CREATE OR REPLACE FUNCTION apply_processor_payment(event jsonb, fee_bps integer) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  reading jsonb := event->'reading';
  -- The sale is dated at the event's creation.
  sale_item jsonb := reading->'sale' || jsonb_build_object('occurred_at', to_timestamp((event->>'created')::double precision));
  txn text := reading->>'transaction_id';
  click_id_ text := reading->>'click_id';
  customer_key_ text := reading->>'customer_key';
  email_ text := reading->>'email';
  processor_customer text := reading->>'processor_customer_id';
  program bigint;
  why text;
  lock_key text;
  click_program bigint;
  known record;
  ref_click text;
  ref_key text;
  before customers;
  sale jsonb;
  settled customers;
  -- Issue 31: a customer found by email or processor customer that has neither click nor key (a
  -- promo code made it), and whether the payment carries promo codes or promotion ids.
  known_id bigint;
  promos boolean := jsonb_array_length(COALESCE(reading->'promo_codes', '[]')) > 0
                    OR jsonb_array_length(COALESCE(reading->'promotion_ids', '[]')) > 0;
BEGIN
  IF reading->>'kind' = 'unreadable' THEN
    RETURN jsonb_build_object('outcome', 'skipped', 'reason', 'unreadable_object');
  END IF;
  -- The events of one payment run one at a time across connections (domain/payments/events.ts,
  -- lockPayment: the same keys in the same order as a refund takes them).
  IF reading->>'kind' = 'refs' THEN
    FOR lock_key IN SELECT jsonb_array_elements_text(event->'locks') LOOP
      PERFORM pg_advisory_xact_lock(hashtextextended(lock_key, 0));
    END LOOP;
    RETURN jsonb_build_object('outcome', 'recorded', 'transaction_id', txn, 'refs', true);
  END IF;

  SELECT p.program_id, p.reason INTO program, why FROM processor_event_program(event->>'account', reading->>'program', event->'scope') p;
  IF why IS NOT NULL THEN
    RETURN jsonb_build_object('outcome', 'skipped', 'reason', why);
  END IF;
  IF reading->>'kind' = 'skip' THEN
    RETURN jsonb_build_object('outcome', 'skipped', 'reason', reading->>'reason', 'program_id', program);
  END IF;
  FOR lock_key IN SELECT jsonb_array_elements_text(event->'locks') LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended(lock_key, 0));
  END LOOP;

  IF NOT (event->>'livemode')::boolean THEN
    sale := try_record_sale(sale_item || jsonb_build_object('program_id', program, 'test', true), fee_bps);
    IF sale ? 'refused' THEN
      RETURN processor_refused_sale(sale, program, txn);
    END IF;
    RETURN jsonb_build_object('outcome', 'recorded', 'program_id', program, 'sale_id', sale->'ok'->'sale'->>'id',
                              'transaction_id', txn, 'refs', true);
  END IF;

  -- Partner resolution in the spec's order: click id, email of the lead record, processor
  -- customer seen before, customer key alone.
  IF click_id_ IS NOT NULL THEN
    -- Locking the click serializes concurrent first leads or sales for one click.
    SELECT k.program_id INTO click_program FROM clicks k WHERE k.click_id = click_id_ FOR UPDATE;
    IF click_program = program THEN
      ref_click := click_id_;
    END IF;
  END IF;
  IF ref_click IS NULL AND email_ IS NOT NULL THEN
    SELECT NULLIF(c.click_id, '') AS click_id, NULLIF(c.customer_key, '') AS customer_key, c.id INTO known
      FROM customers c WHERE c.program_id = program AND lower(c.email) = lower(email_) ORDER BY c.id LIMIT 1;
    ref_click := known.click_id;
    ref_key := CASE WHEN known.click_id IS NULL THEN known.customer_key END;
    known_id := CASE WHEN ref_click IS NULL AND ref_key IS NULL THEN known.id END;
  END IF;
  IF ref_click IS NULL AND ref_key IS NULL AND processor_customer IS NOT NULL THEN
    SELECT NULLIF(c.click_id, '') AS click_id, NULLIF(c.customer_key, '') AS customer_key, c.id INTO known
      FROM processor_customers pc JOIN customers c ON c.id = pc.customer_id
     WHERE pc.program_id = program AND pc.processor_customer_id = processor_customer;
    ref_click := known.click_id;
    ref_key := CASE WHEN known.click_id IS NULL THEN known.customer_key END;
    known_id := COALESCE(known_id, CASE WHEN ref_click IS NULL AND ref_key IS NULL THEN known.id END);
  END IF;
  IF ref_click IS NULL AND ref_key IS NULL AND customer_key_ IS NOT NULL THEN
    PERFORM 1 FROM customers c WHERE c.program_id = program AND c.customer_key = customer_key_ FOR UPDATE;
    IF FOUND THEN
      ref_key := customer_key_;
    END IF;
  END IF;
  IF ref_click IS NULL AND ref_key IS NULL AND known_id IS NULL AND NOT promos THEN
    RETURN jsonb_build_object('outcome', 'skipped',
                              'reason', CASE WHEN click_id_ IS NOT NULL OR customer_key_ IS NOT NULL THEN 'no_attribution' ELSE 'missing_metadata' END,
                              'program_id', program, 'transaction_id', txn, 'refs', true);
  END IF;

  IF ref_click IS NOT NULL THEN
    SELECT * INTO before FROM customers c WHERE c.click_id = ref_click FOR UPDATE;
  ELSE
    SELECT * INTO before FROM customers c WHERE c.program_id = program AND c.customer_key = ref_key FOR UPDATE;
  END IF;
  -- customer_email and processor_customer_id: for the self_referral fraud rule (fraud_flags).
  sale := try_record_sale(sale_item || jsonb_build_object('program_id', program, 'click_id', ref_click,
                                                                'customer_key', ref_key, 'test', false,
                                                                'customer_email', email_, 'processor_customer_id', processor_customer)
                                    -- Issue 31: the customer by id, or one a promo code makes (promo_sale_customer.sql), with the payment's key.
                                    || CASE WHEN ref_click IS NULL AND ref_key IS NULL
                                            THEN jsonb_strip_nulls(jsonb_build_object('customer_id', known_id, 'customer_key', customer_key_))
                                                 || CASE WHEN promos THEN jsonb_build_object('promo_codes', reading->'promo_codes', 'promotion_ids', reading->'promotion_ids')
                                                         ELSE '{}' END
                                            ELSE '{}' END, fee_bps);
  IF before.provisional THEN
    -- A provisional lead resolvable from the payment is settled, whatever became of the sale; the
    -- payment's customer key and email are kept when free.
    BEGIN
      UPDATE customers SET provisional = false, customer_key = COALESCE(customer_key_, customer_key),
             email = COALESCE(email_, email), version = version + 1, updated_at = now()
       WHERE id = before.id RETURNING * INTO settled;
    EXCEPTION WHEN OTHERS THEN
      -- The key already names another customer of the program: settled without it.
      UPDATE customers SET provisional = false, email = COALESCE(email_, email), version = version + 1, updated_at = now()
       WHERE id = before.id RETURNING * INTO settled;
    END;
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    VALUES ('customer.changed', 'customer:' || settled.id, settled.program_id, settled.test, settled.updated_at,
            customer_changed_event(settled, 'settled'));
  END IF;
  IF sale ? 'refused' THEN
    RETURN processor_refused_sale(sale, program, txn);
  END IF;
  -- Resolution step 3 for the customer's later payments.
  IF processor_customer IS NOT NULL AND sale->'ok'->'sale'->>'customer_id' IS NOT NULL THEN
    INSERT INTO processor_customers (program_id, processor_customer_id, customer_id)
    VALUES (program, processor_customer, (sale->'ok'->'sale'->>'customer_id')::bigint)
    ON CONFLICT (program_id, processor_customer_id) DO NOTHING;
  END IF;
  -- A sale stored but refused all the same (partner_required, commission_failed) is recorded with its reason.
  RETURN jsonb_build_object('outcome', 'recorded', 'reason', sale->'ok'->>'refusal', 'program_id', program,
                            'sale_id', sale->'ok'->'sale'->>'id', 'transaction_id', txn, 'refs', true);
END
$$;
