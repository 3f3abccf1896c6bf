-- Which programs an account's events may act on, in one place: connected, and not deauthorized
-- since. Refunds and disputes ask it from domain/payments/connections.ts (connectedPrograms),
-- payments through processor_event_program, which 0015 wrote with the rule inline.
CREATE FUNCTION connected_programs(p_account text) RETURNS bigint[] LANGUAGE sql STABLE AS $$
  SELECT array_agg(c.program_id ORDER BY c.program_id)
    FROM processor_connections c LEFT JOIN processor_accounts a ON a.account_id = c.account_id
   WHERE c.account_id = p_account AND (a.deauthorized_at IS NULL OR a.deauthorized_at < c.connected_at)
$$;

-- As in 0015, with the connected programs from connected_programs.
CREATE OR REPLACE FUNCTION processor_event_program(p_account text, p_named text, OUT program_id bigint, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE
  named bigint := CASE WHEN p_named ~ '^[0-9]{1,15}$' THEN p_named::bigint END;
  connected bigint[];
BEGIN
  IF p_named IS NOT NULL AND named IS NULL THEN
    reason := 'unknown_program';
  ELSIF p_account IS NOT NULL THEN
    connected := connected_programs(p_account);
    IF connected IS NULL THEN
      reason := 'account_not_connected';
    ELSIF named IS NOT NULL THEN
      IF named = ANY (connected) THEN program_id := named; ELSE reason := 'program_not_connected'; END IF;
    ELSIF cardinality(connected) = 1 THEN
      program_id := connected[1];
    ELSE
      reason := 'program_id_missing';
    END IF;
  ELSIF named IS NULL THEN
    reason := 'program_id_missing';
  ELSIF EXISTS (SELECT 1 FROM programs p WHERE p.id = named) THEN
    program_id := named;
  ELSE
    reason := 'unknown_program';
  END IF;
END
$$;
