-- A processor payment in one statement (docs/architecture.md, "Rules that exist only for speed"):
-- the payment events (checkout.session.completed, checkout.session.async_payment_succeeded,
-- invoice.payment_succeeded, invoice_payment.paid) cost one round trip instead of about fifteen.
-- The route checks the signature (ingest/payments/signature.ts) and domain/payments/events.ts
-- reads the object (processor-objects.ts); the rules of what a payment does live here and in record_sale (0012), whose refusals become a
-- 'skipped' outcome with the same reasons.

-- The refunds waiting for a payment are looked up by every id known to pay its transaction
-- (record_processor_payment): without this index that lookup read all of processor_payment_refs
-- whenever any refund was waiting (157 ms at 200,000 ids on a loaded machine), on every payment.
CREATE INDEX processor_payment_refs_transaction ON processor_payment_refs (transaction_id);

-- The program an event is for: the connected account's program (named by the metadata when the
-- account has several), or the metadata's program alone. Either program_id or reason is set.
-- The connected programs are those of domain/payments/connections.ts (connectedPrograms).
CREATE FUNCTION processor_event_program(p_account text, p_named text, OUT program_id bigint, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE
  named bigint := CASE WHEN p_named ~ '^[0-9]{1,15}$' THEN p_named::bigint END;
  connected bigint[];
BEGIN
  IF p_named IS NOT NULL AND named IS NULL THEN
    reason := 'unknown_program';
  ELSIF p_account IS NOT NULL THEN
    SELECT array_agg(c.program_id ORDER BY c.program_id) INTO connected
      FROM processor_connections c LEFT JOIN processor_accounts a ON a.account_id = c.account_id
     WHERE c.account_id = p_account AND (a.deauthorized_at IS NULL OR a.deauthorized_at < c.connected_at);
    IF connected IS NULL THEN
      reason := 'account_not_connected';
    ELSIF named IS NOT NULL THEN
      IF named = ANY (connected) THEN program_id := named; ELSE reason := 'program_not_connected'; END IF;
    ELSIF cardinality(connected) = 1 THEN
      program_id := connected[1];
    ELSE
      reason := 'program_id_missing';
    END IF;
  ELSIF named IS NULL THEN
    reason := 'program_id_missing';
  ELSIF EXISTS (SELECT 1 FROM programs p WHERE p.id = named) THEN
    program_id := named;
  ELSE
    reason := 'unknown_program';
  END IF;
END
$$;

-- record_sale in a subtransaction: {"ok": its result}, or {"refused": reason, "hint": ...} for a
-- refusal, which undoes only the sale's writes. Any other error is raised.
CREATE FUNCTION try_record_sale(item jsonb, fee_bps integer) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  message text;
  detail text;
  hint text;
  violated text;
BEGIN
  RETURN jsonb_build_object('ok', record_sale(item, fee_bps));
EXCEPTION
  WHEN raise_exception THEN
    GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    IF message <> 'refused' THEN
      RAISE;
    END IF;
    RETURN jsonb_build_object('refused', detail, 'hint', NULLIF(hint, ''));
  WHEN unique_violation THEN
    -- As domain/tracking/tracking-writes.ts reads it: a customer key taken meanwhile.
    GET STACKED DIAGNOSTICS violated = CONSTRAINT_NAME;
    IF violated <> 'customers_program_id_customer_key_key' THEN
      RAISE;
    END IF;
    RETURN jsonb_build_object('refused', 'customer_key_taken');
END
$$;

-- The outcome of a refused sale: a duplicate transaction_id is the same payment seen before (its
-- sale named when it is the program's own).
CREATE FUNCTION processor_refused_sale(refused jsonb, p_program_id bigint, p_transaction_id text) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN refused->>'refused' = 'duplicate_transaction'
    THEN jsonb_build_object('outcome', 'skipped', 'reason', 'duplicate_payment', 'program_id', p_program_id,
                            'sale_id', refused->>'hint', 'transaction_id', p_transaction_id, 'refs', true)
    ELSE jsonb_build_object('outcome', 'skipped', 'reason', refused->>'refused', 'program_id', p_program_id,
                            'transaction_id', p_transaction_id, 'refs', true)
  END
$$;

-- The effects of a payment event, once its row is claimed: the outcome as JSON (outcome, reason,
-- program_id, sale_id, transaction_id), with "refs": true when the payment's ids are to be recorded.
-- event and its reading: see record_processor_payment.
CREATE FUNCTION apply_processor_payment(event jsonb, fee_bps integer) RETURNS jsonb LANGUAGE plpgsql AS $$
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

  SELECT p.program_id, p.reason INTO program, why FROM processor_event_program(event->>'account', reading->>'program') p;
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
    SELECT NULLIF(c.click_id, '') AS click_id, NULLIF(c.customer_key, '') AS customer_key INTO known
      FROM customers c WHERE c.program_id = program AND lower(c.email) = lower(email_) ORDER BY c.id LIMIT 1;
    ref_click := known.click_id;
    ref_key := CASE WHEN known.click_id IS NULL THEN known.customer_key END;
  END IF;
  IF ref_click IS NULL AND ref_key IS NULL AND processor_customer IS NOT NULL THEN
    SELECT NULLIF(c.click_id, '') AS click_id, NULLIF(c.customer_key, '') AS customer_key INTO known
      FROM processor_customers pc JOIN customers c ON c.id = pc.customer_id
     WHERE pc.program_id = program AND pc.processor_customer_id = processor_customer;
    ref_click := known.click_id;
    ref_key := CASE WHEN known.click_id IS NULL THEN known.customer_key END;
  END IF;
  IF ref_click IS NULL AND ref_key IS NULL AND customer_key_ IS NOT NULL THEN
    PERFORM 1 FROM customers c WHERE c.program_id = program AND c.customer_key = customer_key_ FOR UPDATE;
    IF FOUND THEN
      ref_key := customer_key_;
    END IF;
  END IF;
  IF ref_click IS NULL AND ref_key IS NULL THEN
    RETURN jsonb_build_object('outcome', 'skipped',
                              'reason', CASE WHEN click_id_ IS NOT NULL OR customer_key_ IS NOT NULL THEN 'no_attribution' ELSE 'missing_metadata' END,
                              'program_id', program, 'transaction_id', txn, 'refs', true);
  END IF;

  IF ref_click IS NOT NULL THEN
    SELECT * INTO before FROM customers c WHERE c.click_id = ref_click FOR UPDATE;
  ELSE
    SELECT * INTO before FROM customers c WHERE c.program_id = program AND c.customer_key = ref_key FOR UPDATE;
  END IF;
  sale := try_record_sale(sale_item || jsonb_build_object('program_id', program, 'click_id', ref_click,
                                                                'customer_key', ref_key, 'test', false), fee_bps);
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

-- One payment event, exactly once: the claim of its row (a repeat, or a concurrent delivery of the
-- same id, is a duplicate), its effects, the processor ids that lead to its transaction_id, and
-- the row settled with the outcome, which is returned as JSON (outcome, reason, program_id,
-- sale_id, transaction_id, waiting).
--
-- event: id, type, account, livemode, created (seconds); locks, the payment's advisory lock keys;
-- reading: kind ('payment', 'skip' with a reason, 'refs' for invoice_payment.paid, 'unreadable'),
-- program (the metadata's program_id), transaction_id, refs, click_id, customer_key, email,
-- processor_customer_id, and sale: record_sale's item without program_id, occurred_at, click_id,
-- customer_key and test.
--
-- Refunds and disputes that were waiting for this payment are applied by the caller, in the same
-- transaction, with the payment's locks still held: with in_transaction, they are returned
-- (locked) as waiting: [{event_id, payload}]; without (in a batch, record_processor_payments), the
-- call raises 'waiting_events', which undoes what it wrote, and the caller calls again alone in a
-- transaction. Refunds arrive before their payment rarely, so the common case stays one statement.
CREATE FUNCTION record_processor_payment(event jsonb, fee_bps integer, in_transaction boolean) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  claimed record;
  applied jsonb;
  refs text[];
  txn text;
  waiting jsonb;
BEGIN
  -- The event row is claimed first: a concurrent delivery of the same id waits here, then sees it.
  INSERT INTO processor_events AS e (event_id, event_type, account_id, livemode, outcome, event_created_at)
  VALUES (event->>'id', event->>'type', event->>'account', (event->>'livemode')::boolean, 'ignored',
          to_timestamp((event->>'created')::double precision))
  ON CONFLICT (event_id) DO UPDATE SET deliveries = e.deliveries + 1, updated_at = now()
  RETURNING (e.xmax = 0) AS inserted, e.outcome, e.reason, e.program_id, e.sale_id, e.transaction_id INTO claimed;
  IF NOT claimed.inserted THEN
    RETURN jsonb_build_object('outcome', 'duplicate', 'reason', claimed.outcome, 'program_id', claimed.program_id,
                              'sale_id', claimed.sale_id, 'transaction_id', claimed.transaction_id);
  END IF;

  applied := apply_processor_payment(event, fee_bps);
  IF (applied->>'refs')::boolean THEN
    -- The ids of this payment lead to its transaction_id whatever became of it: a refund may wait on them.
    txn := applied->>'transaction_id';
    refs := ARRAY(SELECT jsonb_array_elements_text(event->'reading'->'refs'));
    INSERT INTO processor_payment_refs (ref, transaction_id) SELECT unnest(refs), txn ON CONFLICT (ref) DO NOTHING;
    -- Waiting on one of these ids, or on any other id known to pay the same transaction.
    SELECT jsonb_agg(jsonb_build_object('event_id', w.event_id, 'payload', w.payload) ORDER BY w.event_created_at, w.event_id)
      INTO waiting
      FROM (SELECT e.event_id, e.payload, e.event_created_at FROM processor_events e
             WHERE e.outcome = 'waiting'
               AND (e.waiting_for && refs
                    OR e.waiting_for && ARRAY(SELECT r.ref FROM processor_payment_refs r WHERE r.transaction_id = txn))
             FOR UPDATE) w;
    IF waiting IS NOT NULL AND NOT in_transaction THEN
      RAISE EXCEPTION 'waiting_events';
    END IF;
  END IF;

  UPDATE processor_events
     SET outcome = applied->>'outcome', reason = applied->>'reason', program_id = (applied->>'program_id')::bigint,
         sale_id = (applied->>'sale_id')::uuid, transaction_id = applied->>'transaction_id', updated_at = now()
   WHERE event_id = event->>'id';
  RETURN jsonb_build_object('outcome', applied->'outcome', 'reason', applied->'reason', 'program_id', applied->'program_id',
                            'sale_id', applied->'sale_id', 'transaction_id', applied->'transaction_id', 'waiting', waiting);
END
$$;

-- Group commit for payment events (domain/batched-statement.ts), as record_batch (0013) for
-- the tracking routes: the events of one batch in one statement and one commit. Each runs in its
-- own subtransaction, so one that fails, or finds refunds waiting ('waiting_events'), undoes only
-- its own writes; the answer has one element per event, in order: {"ok": the outcome} or
-- {"failed": sqlstate, "message": ...}. An event can take four subtransaction ids (its own, the
-- sale's, the commission's, the settled lead's): a batch stays at 15 events or fewer (see record_batch).
CREATE FUNCTION record_processor_payments(events jsonb, fee_bps integer) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  event jsonb;
  results jsonb[] := '{}';
  message text;
BEGIN
  FOR event IN SELECT value FROM jsonb_array_elements(events) LOOP
    BEGIN
      results := results || jsonb_build_object('ok', record_processor_payment(event, fee_bps, false));
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS message = MESSAGE_TEXT;
      results := results || jsonb_build_object('failed', SQLSTATE, 'message', message);
    END;
  END LOOP;
  RETURN to_jsonb(results);
END
$$;
