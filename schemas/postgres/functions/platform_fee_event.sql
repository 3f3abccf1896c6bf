-- The payload of platform_fee.created, platform_fee.reversed and platform_fee.adjusted, the event contract's fields (schemas/event-contract.ts;
-- tests/schemas/event-contract.test.ts checks every stored payload's fields).
-- STABLE, its true volatility (jsonb_build_object depends on the session's TimeZone), never
-- IMMUTABLE: only then does the planner inline it into the calling statement instead of parsing
-- and planning the body again per statement (docs/performance.md, "PostgreSQL's work per sale,
-- lead and refund").
CREATE OR REPLACE FUNCTION platform_fee_event(fee platform_fees, cm commissions) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'platform_fee_id', fee.id, 'commission_id', cm.id, 'sale_id', cm.sale_id, 'program_id', cm.program_id,
    'amount_cents', fee.amount_cents, 'currency', cm.currency, 'created_at', fee.created_at)
$$;
