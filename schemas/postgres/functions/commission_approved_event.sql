-- The payload of commission.approved (schemas/event-contract.ts): `by` is hold_end (the sweeper, or a
-- payout run, wrote the approval the hold's end made) or owner (an owner approved it, with a reason).
CREATE OR REPLACE FUNCTION commission_approved_event(cm commissions, by text) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'commission_id', cm.id, 'sale_id', cm.sale_id, 'program_id', cm.program_id, 'partner_id', cm.partner_id,
    'amount_cents', cm.amount_cents, 'currency', cm.currency, 'approved_at', cm.approved_at, 'by', by,
    'reason', cm.status_reason)
$$;
