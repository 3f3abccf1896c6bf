-- Issue 27, points 3 and 8: who may act on a processor account, and test and live kept apart.

-- Point 3. A processor account belongs to one workspace, which connects it with the signing secret
-- of the webhook endpoint it created in its own processor dashboard. That endpoint posts to the
-- account's own URL (/api/v1/webhooks/processor/<account_id>), whose events are checked with this
-- secret; the first valid one marks the claim verified. An unverified claim may be replaced by
-- another workspace's (nobody holds an account id by typing it); a verified one may not.
-- secret, previous_secret: sealed with SECRETS_KEY (core/secret-box.ts), never stored in clear; the
-- previous one stays valid until previous_until after a rotation. claim changes whenever another
-- workspace takes the account over, so a verification in flight for the old claim cannot verify the new.
CREATE TABLE processor_account_owners (
  account_id       text PRIMARY KEY,
  workspace_id     bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  claim            uuid NOT NULL DEFAULT gen_random_uuid(),
  secret           text NOT NULL,
  previous_secret  text,
  previous_until   timestamptz,
  claimed_at       timestamptz NOT NULL DEFAULT now(),
  verified_at      timestamptz
);
CREATE INDEX processor_account_owners_workspace ON processor_account_owners (workspace_id);

-- Through which URL a refund or dispute came, kept while it waits for its payment so it is applied
-- under the same rule then: {"channel": "account", "workspace": <id>} for an account's own URL;
-- NULL for the operator's URL (every event stored before this migration came through it).
ALTER TABLE processor_events ADD COLUMN scope jsonb;

-- The programs of a workspace connected to an account and not deauthorized since.
CREATE FUNCTION account_programs(p_account text, p_workspace bigint) RETURNS bigint[] LANGUAGE sql STABLE AS $$
  SELECT array_agg(c.program_id ORDER BY c.program_id)
    FROM processor_connections c
    JOIN programs p ON p.id = c.program_id
    LEFT JOIN processor_accounts a ON a.account_id = c.account_id
   WHERE c.account_id = p_account AND p.workspace_id = p_workspace
     AND (a.deauthorized_at IS NULL OR a.deauthorized_at < c.connected_at)
$$;

-- The workspace whose events may act on an account: on the account's own URL, the workspace whose
-- secret signed the event (scope); on the operator's URL, the one that verified the account. NULL: none.
CREATE FUNCTION account_workspace(p_account text, p_scope jsonb) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_scope->>'channel' = 'account' THEN (p_scope->>'workspace')::bigint
              ELSE (SELECT o.workspace_id FROM processor_account_owners o WHERE o.account_id = p_account AND o.verified_at IS NOT NULL)
         END
$$;

-- The program an event is for. With an account: a program of the account's workspace connected to
-- it, named by the metadata; on the account's own URL the only such program when the metadata
-- names none. On the operator's URL an account's event must name its program: those events are the
-- account holder's own, so the metadata says which program the holder meant, and no claim on the
-- account can draw an unnamed payment to itself. Without an account (the operator's own account),
-- the metadata's program. Either program_id or reason is set.
CREATE FUNCTION processor_event_program(p_account text, p_named text, p_scope jsonb, OUT program_id bigint, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE
  named bigint := CASE WHEN p_named ~ '^[0-9]{1,15}$' THEN p_named::bigint END;
  owner bigint;
  connected bigint[];
BEGIN
  IF p_named IS NOT NULL AND named IS NULL THEN
    reason := 'unknown_program';
  ELSIF p_account IS NOT NULL THEN
    owner := account_workspace(p_account, p_scope);
    connected := CASE WHEN owner IS NOT NULL THEN account_programs(p_account, owner) END;
    IF owner IS NULL THEN
      reason := 'account_not_verified';
    ELSIF connected IS NULL THEN
      reason := 'account_not_connected';
    ELSIF named IS NOT NULL THEN
      IF named = ANY (connected) THEN program_id := named; ELSE reason := 'program_not_connected'; END IF;
    ELSIF p_scope->>'channel' = 'account' AND cardinality(connected) = 1 THEN
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

-- As in 0015, with the program chosen under the event's scope.
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


-- Point 8. A test payment and a live one may carry the same processor ids (a payment intent, a
-- charge, a transaction id): each mode has its own ids here, its own waiting refunds, and a refund
-- or dispute reverses only the sale of its own mode. The ids recorded before this migration get the
-- mode of the payment events that recorded them (both when both modes did; live when none says).
ALTER TABLE processor_payment_refs DROP CONSTRAINT processor_payment_refs_pkey;
ALTER TABLE processor_payment_refs ADD COLUMN livemode boolean;
INSERT INTO processor_payment_refs (ref, transaction_id, livemode)
SELECT r.ref, r.transaction_id, false
  FROM processor_payment_refs r
  JOIN (SELECT transaction_id FROM processor_events WHERE NOT livemode AND transaction_id IS NOT NULL GROUP BY transaction_id) t
    USING (transaction_id);
DELETE FROM processor_payment_refs r
 USING (SELECT transaction_id, bool_or(livemode) AS live FROM processor_events WHERE transaction_id IS NOT NULL GROUP BY transaction_id) m
 WHERE r.livemode IS NULL AND m.transaction_id = r.transaction_id AND NOT m.live;
UPDATE processor_payment_refs SET livemode = true WHERE livemode IS NULL;
ALTER TABLE processor_payment_refs ALTER COLUMN livemode SET NOT NULL;
ALTER TABLE processor_payment_refs ADD PRIMARY KEY (ref, livemode);

-- As in 0015, with each mode's ids and waiting refunds apart, and a waiting event's scope returned.
CREATE OR REPLACE FUNCTION record_processor_payment(event jsonb, fee_bps integer, in_transaction boolean) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  claimed record;
  applied jsonb;
  refs text[];
  txn text;
  waiting jsonb;
  live boolean := (event->>'livemode')::boolean;
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
    INSERT INTO processor_payment_refs (ref, livemode, transaction_id) SELECT unnest(refs), live, txn ON CONFLICT (ref, livemode) DO NOTHING;
    -- Waiting on one of these ids, or on any other id known to pay the same transaction, in this mode.
    SELECT jsonb_agg(jsonb_build_object('event_id', w.event_id, 'payload', w.payload, 'scope', w.scope) ORDER BY w.event_created_at, w.event_id)
      INTO waiting
      FROM (SELECT e.event_id, e.payload, e.scope, e.event_created_at FROM processor_events e
             WHERE e.outcome = 'waiting' AND e.livemode = live
               AND (e.waiting_for && refs
                    OR e.waiting_for && ARRAY(SELECT r.ref FROM processor_payment_refs r WHERE r.transaction_id = txn AND r.livemode = live))
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


-- The program's sale under transaction_id, locked. p_test: that mode's sale only (a processor
-- refund or dispute, whose mode is known); NULL: the real one first, then the test one (/track/refund,
-- whose request names no mode, as in 0021).
CREATE FUNCTION refunded_sale(p_program_id bigint, p_transaction_id text, p_test boolean) RETURNS sale_events
LANGUAGE plpgsql AS $$
DECLARE
  s sale_events;
BEGIN
  IF p_test IS NOT TRUE THEN
    SELECT * INTO s FROM sale_events
     WHERE transaction_id = p_transaction_id AND program_id = p_program_id AND NOT test FOR UPDATE;
  END IF;
  IF NOT FOUND AND p_test IS NOT FALSE THEN
    SELECT * INTO s FROM sale_events
     WHERE program_id = p_program_id AND transaction_id = p_transaction_id AND test FOR UPDATE;
  END IF;
  RETURN s;
END
$$;

-- As in 0021, with the item's mode ("test", when given) passed to refunded_sale.
CREATE OR REPLACE FUNCTION record_refund(item jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  p_transaction_id text := item->>'transaction_id';
  p_reason text := item->>'reason';
  s sale_events;
  r refunds;
  reversed boolean;
  new_status text := CASE WHEN item->>'reason' = 'refund' THEN 'refunded' ELSE 'chargeback' END;
  cm commissions;
  fee platform_fees;
BEGIN
  s := refunded_sale((item->>'program_id')::bigint, p_transaction_id, (item->>'test')::boolean);
  IF s.id IS NULL THEN
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

CREATE OR REPLACE FUNCTION record_partial_refund(item jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  p_transaction_id text := item->>'transaction_id';
  refunded numeric := (item->>'refunded_cents')::numeric;
  charged numeric := (item->>'charge_cents')::numeric;
  s sale_events;
  target bigint;
  step bigint;
  cm commissions;
  cm_step bigint := 0;
  fee platform_fees;
  fee_step bigint := 0;
  pr partial_refunds;
BEGIN
  IF refunded IS NULL OR charged IS NULL OR refunded <= 0 OR refunded >= charged THEN
    RAISE EXCEPTION 'refused' USING DETAIL = 'invalid_refund_amount';
  END IF;
  s := refunded_sale((item->>'program_id')::bigint, p_transaction_id, (item->>'test')::boolean);
  IF s.id IS NULL THEN
    RAISE EXCEPTION 'refused' USING DETAIL = 'sale_not_found';
  END IF;
  target := least(s.amount_cents, refunded_share(s.amount_cents, refunded, charged));
  step := target - s.refunded_cents;
  IF s.status <> 'paid' OR step <= 0 THEN
    RETURN jsonb_build_object('sale_id', s.id, 'transaction_id', p_transaction_id, 'sale_status', s.status,
                              'refunded_cents', s.refunded_cents, 'recorded', false);
  END IF;
  UPDATE sale_events SET refunded_cents = target, updated_at = now() WHERE id = s.id RETURNING * INTO s;

  SELECT * INTO cm FROM commissions WHERE sale_id = s.id AND status = 'pending' FOR UPDATE;
  IF cm.id IS NOT NULL THEN
    cm_step := greatest(refunded_share(cm.amount_cents + cm.reversed_cents, refunded, charged) - cm.reversed_cents, 0);
    UPDATE commissions SET amount_cents = amount_cents - cm_step, reversed_cents = reversed_cents + cm_step
     WHERE id = cm.id RETURNING * INTO cm;
    SELECT * INTO fee FROM platform_fees WHERE sale_id = s.id AND status = 'charged' FOR UPDATE;
    IF fee.id IS NOT NULL THEN
      fee_step := greatest(refunded_share(fee.amount_cents + fee.reversed_cents, refunded, charged) - fee.reversed_cents, 0);
      UPDATE platform_fees SET amount_cents = amount_cents - fee_step, reversed_cents = reversed_cents + fee_step
       WHERE id = fee.id RETURNING * INTO fee;
    END IF;
  END IF;

  INSERT INTO partial_refunds (sale_id, program_id, amount_cents, refunded_cents, commission_reversed_cents, platform_fee_reversed_cents)
  VALUES (s.id, s.program_id, step, target, cm_step, fee_step)
  RETURNING * INTO pr;
  INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
  VALUES ('sale.partially_refunded', 'sale:' || s.id, s.program_id, s.test, pr.created_at,
          jsonb_build_object('partial_refund_id', pr.id, 'sale_id', s.id, 'transaction_id', s.transaction_id,
                             'program_id', s.program_id, 'amount_cents', step, 'refunded_cents', target,
                             'currency', s.currency, 'refunded_at', pr.created_at));
  -- The commission and the fee travel whole, as commission.created does, with what was taken off.
  IF cm_step > 0 THEN
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    VALUES ('commission.adjusted', 'sale:' || s.id, s.program_id, false, pr.created_at,
            commission_event(cm) || jsonb_build_object('reversed_cents', cm.reversed_cents));
  END IF;
  IF fee_step > 0 THEN
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    VALUES ('platform_fee.adjusted', 'sale:' || s.id, s.program_id, false, pr.created_at,
            platform_fee_event(fee, cm) || jsonb_build_object('reversed_cents', fee.reversed_cents));
  END IF;
  RETURN jsonb_build_object('partial_refund_id', pr.id, 'sale_id', s.id, 'transaction_id', p_transaction_id,
                            'sale_status', s.status, 'refunded_cents', target, 'commission_reversed_cents', cm_step,
                            'platform_fee_reversed_cents', fee_step, 'recorded', true);
END
$$;

-- Replaced above: nothing calls them any more.
DROP FUNCTION processor_event_program(text, text);
DROP FUNCTION connected_programs(text);
DROP FUNCTION refunded_sale(bigint, text);
