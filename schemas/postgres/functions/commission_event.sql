-- The payload of commission.created, commission.reversed and commission.adjusted, the event contract's fields (schemas/event-contract.ts;
-- tests/schemas/event-contract.test.ts checks every stored payload's fields).
-- STABLE, its true volatility (jsonb_build_object depends on the session's TimeZone), never
-- IMMUTABLE: only then does the planner inline it into the calling statement instead of parsing
-- and planning the body again per statement (docs/performance.md, "PostgreSQL's work per sale,
-- lead and refund").
CREATE OR REPLACE FUNCTION commission_event(cm commissions) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'commission_id', cm.id, 'sale_id', cm.sale_id, 'program_id', cm.program_id, 'partner_id', cm.partner_id,
    'amount_cents', cm.amount_cents, 'currency', cm.currency, 'status', cm.status, 'created_at', cm.created_at)
$$;
