-- record_sale in a subtransaction: {"ok": its result}, or {"refused": reason, "hint": ...} for a
-- refusal, which undoes only the sale's writes. Any other error is raised.
CREATE OR REPLACE FUNCTION try_record_sale(item jsonb, fee_bps integer) RETURNS jsonb LANGUAGE plpgsql AS $$
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
