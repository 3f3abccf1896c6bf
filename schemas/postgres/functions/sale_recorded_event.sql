-- The payload of sale.recorded, the event contract's fields (schemas/event-contract.ts;
-- tests/schemas/event-contract.test.ts checks every stored payload's fields).
-- STABLE, its true volatility (jsonb_build_object depends on the session's TimeZone), never
-- IMMUTABLE: only then does the planner inline it into the calling statement instead of parsing
-- and planning the body again per statement (docs/performance.md, "PostgreSQL's work per sale,
-- lead and refund").
CREATE OR REPLACE FUNCTION sale_recorded_event(s sale_events) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'sale_id', s.id, 'transaction_id', s.transaction_id, 'program_id', s.program_id, 'customer_id', s.customer_id,
    'partner_id', s.partner_id, 'amount_cents', s.amount_cents, 'currency', s.currency, 'occurred_at', s.occurred_at,
    'status', s.status, 'is_recurring', s.is_recurring, 'test', s.test, 'created_at', s.created_at)
$$;
