-- The program a processor event is for. With an account: a program of the account's workspace
-- connected to it, named by the metadata; on the account's own URL the only such program when the
-- metadata names none. On the operator's URL an account's event must name its program: those
-- events are the account holder's own, so the metadata says which program the holder meant, and
-- no claim on the account can draw an unnamed payment to itself. Without an account (the
-- operator's own account), the metadata's program. Either program_id or reason is set.
CREATE OR REPLACE FUNCTION processor_event_program(p_account text, p_named text, p_scope jsonb, OUT program_id bigint, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE
  named bigint := CASE WHEN p_named ~ '^[0-9]{1,15}$' THEN p_named::bigint END;
  owner bigint;
  connected bigint[];
BEGIN
  IF p_named IS NOT NULL AND named IS NULL THEN
    reason := 'unknown_program';
  ELSIF p_account IS NOT NULL THEN
    owner := account_workspace(p_account, p_scope);
    connected := CASE WHEN owner IS NOT NULL THEN account_programs(p_account, owner) END;
    IF owner IS NULL THEN
      reason := 'account_not_verified';
    ELSIF connected IS NULL THEN
      reason := 'account_not_connected';
    ELSIF named IS NOT NULL THEN
      IF named = ANY (connected) THEN program_id := named; ELSE reason := 'program_not_connected'; END IF;
    ELSIF p_scope->>'channel' = 'account' AND cardinality(connected) = 1 THEN
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
