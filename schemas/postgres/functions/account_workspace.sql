-- The workspace whose events may act on a processor account: on the account's own URL, the
-- workspace whose secret signed the event (scope); on the operator's URL, the one that verified the
-- account. NULL: none.
CREATE OR REPLACE FUNCTION account_workspace(p_account text, p_scope jsonb) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_scope->>'channel' = 'account' THEN (p_scope->>'workspace')::bigint
              ELSE (SELECT o.workspace_id FROM processor_account_owners o WHERE o.account_id = p_account AND o.verified_at IS NOT NULL)
         END
$$;
