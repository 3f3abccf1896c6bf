-- A processor payment in one statement (docs/architecture.md, "Rules that exist only for speed"):
-- the payment events (checkout.session.completed, checkout.session.async_payment_succeeded,
-- invoice.payment_succeeded, invoice_payment.paid) cost one round trip instead of about fifteen.
-- The route checks the signature (ingest/payments/signature.ts) and domain/payments/events.ts
-- reads the object (domain/payments/objects.ts).
--
-- One payment event, exactly once: the claim of its row (a repeat, or a concurrent delivery of the
-- same id, is a duplicate), its effects, the processor ids that lead to its transaction_id, and
-- the row settled with the outcome, which is returned as JSON (outcome, reason, program_id,
-- sale_id, transaction_id, waiting). Test and live payments keep their ids and their waiting
-- refunds apart.
--
-- event: id, type, account, livemode, created (seconds), scope; locks, the payment's advisory lock
-- keys; reading: kind ('payment', 'skip' with a reason, 'refs' for invoice_payment.paid,
-- 'unreadable'), program (the metadata's program_id), transaction_id, refs, click_id, customer_key,
-- email, processor_customer_id, and sale: record_sale's item without program_id, occurred_at,
-- click_id, customer_key and test.
--
-- Refunds and disputes that were waiting for this payment are applied by the caller, in the same
-- transaction, with the payment's locks still held: with in_transaction, they are returned
-- (locked) as waiting: [{event_id, payload, scope}]; without (in a batch, record_processor_payments),
-- the call raises 'waiting_events', which undoes what it wrote, and the caller calls again alone in
-- a transaction. Refunds arrive before their payment rarely, so the common case stays one statement.
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
