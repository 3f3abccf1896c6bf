-- The payload of commission.held (schemas/event-contract.ts): a commission flagged by a fraud rule
-- (record_sale, fraud_flags) or held by its partner's ban (hold_partner_commissions), waiting for an
-- owner's review. `reasons` names the rules or the cause; the evidence stays in Postgres (the reviews
-- route reads it): it may name a customer's email, which no event carries.
-- No sub-select: a SQL function with one is never inlined, and PostgreSQL then parses and plans it
-- on every call (about 160 µs a held commission under bench:ingest, docs/performance.md).
CREATE OR REPLACE FUNCTION commission_held_event(cm commissions) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'commission_id', cm.id, 'sale_id', cm.sale_id, 'program_id', cm.program_id, 'partner_id', cm.partner_id,
    'amount_cents', cm.amount_cents, 'currency', cm.currency, 'held_at', cm.held_at,
    'reasons', COALESCE(jsonb_path_query_array(cm.hold_reasons, '$[*].reason'), '[]'::jsonb))
$$;
