-- The payload of commission.reversed: the commission (commission_event) and the ledger's reversal
-- entry of it, which travels in this event and has no ledger_entry.recorded of its own (one event
-- less per refund: docs/performance.md, "The refund's reversal entry"). e is NULL when the reversal
-- took nothing back (a zero commission has no entry). STABLE so it is inlined, as commission_event.
CREATE OR REPLACE FUNCTION commission_reversed_event(cm commissions, e ledger_entries) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT commission_event(cm) || jsonb_build_object('ledger_entry', CASE WHEN e.id IS NULL THEN NULL ELSE ledger_entry_event(e) END)
$$;
