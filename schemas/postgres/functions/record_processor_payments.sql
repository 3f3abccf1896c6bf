-- Group commit for payment events (domain/batched-statement.ts), as record_batch for the tracking
-- routes: the events of one batch in one statement and one commit. Each runs in its own
-- subtransaction, so one that fails, or finds refunds waiting ('waiting_events'), undoes only its
-- own writes; the answer has one element per event, in order: {"ok": the outcome} or
-- {"failed": sqlstate, "message": ...}. An event can take four subtransaction ids (its own, the
-- sale's, the commission's, the settled lead's): a batch stays at 15 events or fewer (see record_batch).
CREATE OR REPLACE FUNCTION record_processor_payments(events jsonb, fee_bps integer) RETURNS jsonb LANGUAGE plpgsql AS $$
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
