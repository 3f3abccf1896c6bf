-- A lead's answer: the customer as record_lead returns it.
-- STABLE, its true volatility (jsonb_build_object depends on the session's TimeZone), never
-- IMMUTABLE: only then does the planner inline it into the calling statement instead of parsing
-- and planning the body again per statement (docs/performance.md, "PostgreSQL's work per sale,
-- lead and refund").
CREATE OR REPLACE FUNCTION customer_result(c customers) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('customer_id', c.id, 'program_id', c.program_id, 'click_id', c.click_id, 'status', c.status,
                            'signup_date', c.signup_date, 'provisional', c.provisional)
$$;
