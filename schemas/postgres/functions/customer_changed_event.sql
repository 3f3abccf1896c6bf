-- The payload of customer.changed, the event contract's fields (schemas/event-contract.ts;
-- tests/schemas/event-contract.test.ts checks every stored payload's fields).
-- STABLE, its true volatility (jsonb_build_object depends on the session's TimeZone), never
-- IMMUTABLE: only then does the planner inline it into the calling statement instead of parsing
-- and planning the body again per statement (docs/performance.md, "PostgreSQL's work per sale,
-- lead and refund").
CREATE OR REPLACE FUNCTION customer_changed_event(c customers, change text) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'change', change, 'customer_id', c.id, 'program_id', c.program_id, 'partner_id', c.partner_id,
    'partner_program_id', c.partner_program_id, 'click_id', c.click_id, 'status', c.status, 'provisional', c.provisional,
    'test', c.test, 'signup_date', c.signup_date, 'first_purchase_date', c.first_purchase_date, 'version', c.version,
    'updated_at', c.updated_at)
$$;
