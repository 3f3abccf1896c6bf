-- The payload of payout.created, payout.paid and payout.canceled: the whole payout, as the API shows it
-- (schemas/event-contract.ts).
CREATE OR REPLACE FUNCTION payout_event(p payouts) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'payout_id', p.id, 'program_id', p.program_id, 'partner_id', p.partner_id, 'currency', p.currency,
    'amount_minor', p.amount_minor, 'status', p.status, 'cutoff', p.cutoff, 'commission_ids', to_jsonb(p.commission_ids),
    'clawback_entry_ids', to_jsonb(p.clawback_entry_ids), 'manual_entry_ids', to_jsonb(p.manual_entry_ids),
    'reference', p.reference, 'created_at', p.created_at, 'paid_at', p.paid_at, 'canceled_at', p.canceled_at)
$$;
