-- Raises duplicate_transaction when the transaction_id is taken in the sale's namespace: real sales
-- share one (the spec's global guard), a program's test sales have their own (0010). The HINT is
-- the sale id for the program's own sale and empty for another program's, which is never named.
-- record_sale checks a real sale's transaction_id in place first (one index probe, cheaper than this
-- call: docs/performance.md, "Refunds and sales after the ledger"); keep the two queries alike.
CREATE OR REPLACE FUNCTION refuse_duplicate_sale(p_program_id bigint, p_transaction_id text, p_test boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  existing sale_events;
BEGIN
  IF p_test THEN
    SELECT * INTO existing FROM sale_events WHERE program_id = p_program_id AND transaction_id = p_transaction_id AND test;
  ELSE
    SELECT * INTO existing FROM sale_events WHERE transaction_id = p_transaction_id AND NOT test;
  END IF;
  IF existing.id IS NOT NULL THEN
    RAISE EXCEPTION 'refused' USING DETAIL = 'duplicate_transaction',
      HINT = CASE WHEN existing.program_id = p_program_id THEN existing.id::text ELSE '' END;
  END IF;
END
$$;
