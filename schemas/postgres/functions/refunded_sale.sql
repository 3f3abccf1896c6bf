-- The program's sale under transaction_id, locked; all NULL when there is none. p_test: that
-- mode's sale only (a processor refund or dispute, whose mode is known); NULL: the real one first,
-- then the test one (/track/refund, whose request names no mode; test sales have their own
-- namespace, 0010). Each lookup is served by one of the partial unique indexes on transaction_id:
-- `ORDER BY test` over both read every sale of the program to find one.
-- record_refund looks a real sale up in place first (one index probe, cheaper than this call:
-- docs/performance.md, "Refunds and sales after the ledger"); keep the two lookups alike.
CREATE OR REPLACE FUNCTION refunded_sale(p_program_id bigint, p_transaction_id text, p_test boolean) RETURNS sale_events
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
