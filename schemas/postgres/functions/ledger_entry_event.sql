-- The payload of ledger_entry.recorded, the event contract's fields (schemas/event-contract.ts).
-- STABLE so the planner inlines it into the statement that writes the entry (see commission_event).
CREATE OR REPLACE FUNCTION ledger_entry_event(e ledger_entries) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'entry_id', e.id, 'program_id', e.program_id, 'partner_id', e.partner_id, 'kind', e.kind,
    'amount_minor', e.amount_minor, 'currency', e.currency, 'commission_id', e.commission_id,
    'sale_id', e.sale_id, 'payout_id', e.payout_id, 'cause', e.cause, 'rule_version', e.rule_version,
    'reason', e.reason, 'created_at', e.created_at, 'available_at', e.available_at)
$$;
