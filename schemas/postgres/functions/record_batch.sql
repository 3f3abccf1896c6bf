-- Group commit for the tracking routes (domain/batched-statement.ts): the items of one batch,
-- all of one kind, in one statement and one commit. Each runs in its own subtransaction, so a
-- refused or failed item undoes only its own writes; the answer has one element per item, in
-- order: the function's result as {"ok": ...}, {"refused": reason, "hint": ...}, or
-- {"failed": sqlstate, "message": ...}. A batch stays at 30 items or fewer: an item can take two
-- subtransaction ids (a sale's commission has its own), and past 64 in one transaction every
-- other session's snapshots overflow to pg_subtrans (the fast paths below add two). Sales go first
-- through record_sales (repeat payments that earn nothing), then record_first_payments (a click's
-- first payment), refunds through record_refunds (those of a pending or held commission): each
-- writes its common items for the whole batch at once, in a subtransaction of its own (if it
-- fails, its items are written alone); the items they leave take the loop.
CREATE OR REPLACE FUNCTION record_batch(kind text, items jsonb, fee_bps integer) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  item jsonb;
  n integer := 0;
  done jsonb[];
  firsts jsonb[];
  results jsonb[] := '{}';
  message text;
  detail text;
  hint text;
BEGIN
  IF kind IN ('sale', 'refund') THEN
    BEGIN
      done := CASE kind WHEN 'sale' THEN record_sales(items) ELSE record_refunds(items) END;
    EXCEPTION WHEN OTHERS THEN
      done := NULL;
    END;
  END IF;
  IF kind = 'sale' THEN
    BEGIN
      firsts := record_first_payments(items, fee_bps);
    EXCEPTION WHEN OTHERS THEN
      firsts := NULL;
    END;
    FOR k IN 1 .. COALESCE(array_length(firsts, 1), 0) LOOP
      done[k] := COALESCE(done[k], firsts[k]);
    END LOOP;
  END IF;
  FOR item IN SELECT value FROM jsonb_array_elements(items) LOOP
    n := n + 1;
    IF done[n] IS NOT NULL THEN
      results := results || jsonb_build_object('ok', done[n]);
      CONTINUE;
    END IF;
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
