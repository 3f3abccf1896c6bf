-- The outcome of a refused sale: a duplicate transaction_id is the same payment seen before (its
-- sale named when it is the program's own).
-- STABLE, its true volatility (jsonb_build_object depends on the session's TimeZone), never
-- IMMUTABLE: only then does the planner inline it into the calling statement instead of parsing
-- and planning the body again per statement (docs/performance.md, "PostgreSQL's work per sale,
-- lead and refund").
CREATE OR REPLACE FUNCTION processor_refused_sale(refused jsonb, p_program_id bigint, p_transaction_id text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN refused->>'refused' = 'duplicate_transaction'
    THEN jsonb_build_object('outcome', 'skipped', 'reason', 'duplicate_payment', 'program_id', p_program_id,
                            'sale_id', refused->>'hint', 'transaction_id', p_transaction_id, 'refs', true)
    ELSE jsonb_build_object('outcome', 'skipped', 'reason', refused->>'refused', 'program_id', p_program_id,
                            'transaction_id', p_transaction_id, 'refs', true)
  END
$$;
